"""Golden values for chapter 5 (causal-mask), made with PyTorch.

Masks are applied the usual PyTorch way: scores.masked_fill(mask == 0,
float('-inf')) before softmax, mask 1 = allowed. Causal and padding masks,
single-head and multi-head (per-sequence masks for batch > 1), and a mask
with fully masked rows, where PyTorch 1.13 returns NaN and the book returns
zeros (the C++ test checks exactly that difference). The running example is
rebuilt as chapter 1 builds it (seed 42, d_model 64).
"""
import math

import torch
import torch.nn as nn

from fixtures import sinusoidal, write_fixtures

out = {}


def masked_attention(Q, K, V, mask):
    # mask: 1/True = allowed, broadcast over any leading dimensions.
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights, scores


def causal(seq_len):
    return torch.tril(torch.ones(seq_len, seq_len))


def padding(lengths, seq_len):
    # (batch, seq_len, seq_len): key j of sequence b is allowed iff j < lengths[b].
    keys = (torch.arange(seq_len)[None, :] < torch.tensor(lengths)[:, None]).float()
    return keys[:, None, :].expand(len(lengths), seq_len, seq_len)


def linear_params(prefix, layer):
    # The book stores W = weight.T, (d_in, d_out).
    out[prefix + ".W"] = layer.weight.detach().t().contiguous()
    out[prefix + ".b"] = layer.bias.detach().clone()


def multi_head(X, layers, n_heads, mask):
    # X (batch, seq, d_model); mask (batch, seq, seq), shared by the heads.
    W_q, W_k, W_v, W_o = layers
    batch, seq, d_model = X.shape
    d_k = d_model // n_heads

    def split(t):
        return t.view(batch, seq, n_heads, d_k).transpose(1, 2)  # (batch, heads, seq, d_k)

    heads, weights, _ = masked_attention(split(W_q(X)), split(W_k(X)), split(W_v(X)), mask[:, None])
    combined = heads.transpose(1, 2).contiguous().view(batch, seq, d_model)
    return W_o(combined), weights


# --- The running example: "the cat sat on the mat", seed 42, d_model 64 ----
torch.manual_seed(42)
words = "the cat sat on the mat".split()
vocab = list(dict.fromkeys(words))
ids = torch.tensor([vocab.index(w) for w in words])
d_model = 64
embedding = nn.Embedding(len(vocab), d_model)
# nn.Linear(d_model, d_model) four times, in the order W_q, W_k, W_v, W_o:
# the first three are chapter 1's projections (d_k = d_model = 64).
run_layers = [nn.Linear(d_model, d_model) for _ in range(4)]
with torch.no_grad():
    X = embedding(ids) + sinusoidal(len(words), d_model)
    Q, K, V = (layer(X) for layer in run_layers[:3])
    output, weights, scores = masked_attention(Q, K, V, causal(len(words)))
    mh_output, mh_weights = multi_head(X[None], run_layers, 4, causal(len(words))[None])
out["run.ids"] = ids
out["run.Q"], out["run.K"], out["run.V"] = Q, K, V
out["run.masked_scores"] = scores
out["run.weights"], out["run.output"] = weights, output
out["run.mh.weights"] = mh_weights            # (1, 4, 6, 6)
out["run.mh.output"] = mh_output              # (1, 6, 64)

# --- apply_mask: a random mask on random scores ----------------------------
torch.manual_seed(5)
scores = torch.randn(5, 7) * 2
mask = (torch.rand(5, 7) < 0.6).long()
mask[:, 0] = 1                                 # every row keeps something
out["am.scores"], out["am.mask"] = scores, mask
out["am.masked"] = scores.masked_fill(mask == 0, float("-inf"))

# --- Causal attention on random Q, K, V (seq 7, d_k 8) ---------------------
torch.manual_seed(6)
Q, K, V = torch.randn(7, 8), torch.randn(7, 8), torch.randn(7, 8)
output, weights, _ = masked_attention(Q, K, V, causal(7))
out["causal.Q"], out["causal.K"], out["causal.V"] = Q, K, V
out["causal.weights"], out["causal.output"] = weights, output

# --- A padded batch: lengths 6, 4, 2 padded to 6, padding alone and with causal
torch.manual_seed(7)
lengths = [6, 4, 2]
Q, K, V = torch.randn(3, 6, 8), torch.randn(3, 6, 8), torch.randn(3, 6, 8)
pad = padding(lengths, 6)
output, weights, _ = masked_attention(Q, K, V, pad)
out["pad.lengths"] = torch.tensor(lengths)
out["pad.Q"], out["pad.K"], out["pad.V"] = Q, K, V
out["pad.weights"], out["pad.output"] = weights, output
output, weights, _ = masked_attention(Q, K, V, pad * causal(6))
out["padcausal.weights"], out["padcausal.output"] = weights, output

# --- Fully masked rows: PyTorch 1.13 gives NaN there -----------------------
torch.manual_seed(8)
Q, K, V = torch.randn(5, 8), torch.randn(5, 8), torch.randn(5, 8)
mask = causal(5)
mask[1, :] = 0                                 # query 1 may see nothing
mask[3, :] = 0                                 # nor query 3
output, weights, _ = masked_attention(Q, K, V, mask)
assert torch.isnan(weights[1]).all() and torch.isnan(output[3]).all()
out["fm.Q"], out["fm.K"], out["fm.V"], out["fm.mask"] = Q, K, V, mask.long()
out["fm.torch_weights"], out["fm.torch_output"] = weights, output

# --- Multi-head (4 heads, d_model 16), batch 2: causal, and padding + causal
torch.manual_seed(9)
mh_layers = [nn.Linear(16, 16) for _ in range(4)]
X = torch.randn(2, 5, 16)
with torch.no_grad():
    for name, layer in zip(["W_q", "W_k", "W_v", "W_o"], mh_layers):
        linear_params("mh." + name, layer)
    out["mh.X"] = X
    output, weights = multi_head(X, mh_layers, 4, causal(5).expand(2, 5, 5))
    out["mh.causal.weights"], out["mh.causal.output"] = weights, output
    mh_lengths = [5, 3]
    output, weights = multi_head(X, mh_layers, 4, padding(mh_lengths, 5) * causal(5))
    out["mh.lengths"] = torch.tensor(mh_lengths)
    out["mh.padcausal.weights"], out["mh.padcausal.output"] = weights, output

write_fixtures("05-causal-mask.txt", out, __doc__)
