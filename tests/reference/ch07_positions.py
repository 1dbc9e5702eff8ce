"""Golden values for chapter 7's position encodings, made with PyTorch.

    /usr/bin/python3 ch07_positions.py      write tests/fixtures/07-positions.txt

The twin of ch07_training.py's model with the position encoding as a
choice, like the C++ ModelConfig::position: learned (ch07_training.py's
model as it is), sinusoidal (chapter 1's table, fixtures.sinusoidal, added
to the token embedding; no nn.Embedding for positions, so nothing is drawn
for it) and rope (no table; Q and K rotated after their projection, before
the scores). Parameters are created in the C++ init_params order: token
table, position table (learned only), then the blocks and the head.

The fixture: rope on a small QKV matrix (batch 2, seq 5, 2 heads of d_k 6),
forward and the autograd gradient of sum(dY * rope(X)), the backward; and
for a sinusoidal model and a RoPE model (d_model 16, 2 heads, 2 layers,
causal, the reversal task, batch 4): initial parameters, data, batch order,
logits, loss and every parameter gradient of the first batch.
"""
import math
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from ch07_training import (EinsumAttention, batch_loss, create_causal_mask, cxx_layout,
                           generate_reversal_data)
from fixtures import sinusoidal, write_fixtures

ROPE_BASE = 10000.0


def rope(x, base=ROPE_BASE):
    """x (batch, seq, heads, d_k): pair (2i, 2i+1) of the row at position p turned
    by p * base^(-2i/d_k). The angles in float64, cos and sin rounded once to
    float32, the products in float32 (as the C++ solution does)."""
    seq, d_k = x.shape[1], x.shape[3]
    theta = base ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angle = torch.arange(seq, dtype=torch.float64)[:, None] * theta[None, :]  # (seq, d_k / 2)
    c = torch.cos(angle).float()[None, :, None, :]
    s = torch.sin(angle).float()[None, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)


class RopeAttention(EinsumAttention):
    """EinsumAttention with Q and K rotated by their positions."""

    def forward(self, x, mask=None):
        Q = rope(torch.einsum('bsm, mhd -> bshd', x, self.W_q))
        K = rope(torch.einsum('bsm, mhd -> bshd', x, self.W_k))
        V = torch.einsum('bsm, mhd -> bshd', x, self.W_v)
        scores = torch.einsum('bshd, bthd -> bhst', Q, K) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(0).unsqueeze(0), float('-inf'))
        weights = F.softmax(scores, dim=-1)
        attended = torch.einsum('bhst, bthd -> bshd', weights, V)
        return torch.einsum('bshd, hdm -> bsm', attended, self.W_o), weights


class Block(nn.Module):
    """ch07_training.TransformerBlock with the attention class as a choice."""

    def __init__(self, d_model, num_heads, attention):
        super().__init__()
        self.attention = attention(d_model, num_heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, mask=None):
        attn_out, weights = self.attention(self.norm1(x), mask)
        x = x + attn_out
        return x + self.ffn(self.norm2(x)), weights


class PositionsTransformer(nn.Module):
    def __init__(self, vocab, d_model, num_heads, num_layers, max_seq_len, position):
        super().__init__()
        self.position = position
        self.token_emb = nn.Embedding(vocab, d_model)
        if position == "learned":
            self.pos_emb = nn.Embedding(max_seq_len, d_model)
        attention = RopeAttention if position == "rope" else EinsumAttention
        self.layers = nn.ModuleList([Block(d_model, num_heads, attention) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x, mask=None):
        x_emb = self.token_emb(x)
        if self.position == "learned":
            x_emb = x_emb + self.pos_emb(torch.arange(x.shape[1]).unsqueeze(0))
        elif self.position == "sinusoidal":
            x_emb = x_emb + sinusoidal(x.shape[1], x_emb.shape[-1])
        weights = []
        for layer in self.layers:
            x_emb, w = layer(x_emb, mask)
            weights.append(w)
        return self.head(self.norm(x_emb)), weights


def layout(model, grads=False):
    """cxx_layout's names and layouts; a model without a position table lists none."""
    if model.position == "learned":
        return cxx_layout(model, grads)
    shim = SimpleNamespace(token_emb=model.token_emb, pos_emb=model.token_emb, layers=model.layers,
                           norm=model.norm, head=model.head)
    t = cxx_layout(shim, grads)
    del t["pos"]
    return t


def rope_fixtures(out):
    torch.manual_seed(21)
    batch, seq, heads, d_k = 2, 5, 2, 6
    d = heads * d_k
    QKV = torch.randn(batch * seq, 3 * d).requires_grad_()
    q, k, v = QKV.view(batch, seq, 3, heads, d_k).unbind(2)  # each (batch, seq, heads, d_k)
    Y = torch.cat([rope(q).reshape(batch * seq, d), rope(k).reshape(batch * seq, d), v.reshape(batch * seq, d)], 1)
    dY = torch.randn(batch * seq, 3 * d)
    Y.backward(dY)
    out.update({"rope.config": torch.tensor([batch, heads]), "rope.X": QKV, "rope.Y": Y, "rope.dY": dY,
                "rope.dX": QKV.grad})


def model_fixtures(out):
    seed, vocab, digits, d_model, heads, layers, batch_size, samples = 7, 16, 6, 16, 2, 2, 4, 40
    out["model.config"] = torch.tensor([seed, vocab, digits, d_model, heads, layers, batch_size, samples])
    mask = create_causal_mask(2 * digits)
    for position in ("sinusoidal", "rope"):
        torch.manual_seed(seed)
        model = PositionsTransformer(vocab, d_model, heads, layers, 2 * digits + 1, position)
        for name, t in layout(model).items():
            out["%s.init.%s" % (position, name)] = t
        data = generate_reversal_data(samples, digits, vocab)
        perm = torch.randperm(samples)
        out[position + ".data"], out[position + ".perm"] = data, perm
        loss, logits = batch_loss(model, data[perm[:batch_size]], digits, mask)
        loss.backward()
        out[position + ".logits"] = logits.reshape(-1, vocab)
        out[position + ".loss"] = loss.detach().reshape(1)
        for name, t in layout(model, grads=True).items():
            out["%s.grad.%s" % (position, name)] = t


if __name__ == "__main__":
    out = {}
    rope_fixtures(out)
    model_fixtures(out)
    write_fixtures("07-positions.txt", out, __doc__.split("\n\n")[3])
