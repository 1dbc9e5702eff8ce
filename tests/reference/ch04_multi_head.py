"""Golden values for chapter 4 (multi-head), made with PyTorch.

split_heads is x.view(batch, seq, n_heads, d_k).transpose(1, 2), combine_heads
its inverse, and multi-head attention the module in this script: four nn.Linear
(d_model, d_model) layers defined in the order W_q, W_k, W_v, W_o, which is
the order sa::make_attention_params draws them. Cases: a batch of 3
sequences, cross-attention with seq_q != seq_k, and the chapter program's
running example from seed 42 (self-attention, then 10 queries over 50 keys).
Matrices of several sequences are written as (batch * seq, d) rows, the
layout the C++ side uses.
"""
import math

import torch
import torch.nn as nn

from fixtures import sinusoidal, write_fixtures

out = {}


def split_heads(x, n_heads):
    batch, seq, d_model = x.shape
    return x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)


def combine_heads(x):
    batch, n_heads, seq, d_k = x.shape
    return x.transpose(1, 2).contiguous().view(batch, seq, n_heads * d_k)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        # Definition order = order of the random draws.
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, x_q, x_kv):
        Q = split_heads(self.W_q(x_q), self.n_heads)    # (batch, n_heads, seq_q, d_k)
        K = split_heads(self.W_k(x_kv), self.n_heads)   # (batch, n_heads, seq_k, d_k)
        V = split_heads(self.W_v(x_kv), self.n_heads)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        weights = torch.softmax(scores, dim=-1)          # (batch, n_heads, seq_q, seq_k)
        return self.W_o(combine_heads(weights @ V)), weights


def rows(t):
    # (batch, seq, d) -> (batch * seq, d): the C++ layout of a batch.
    return t.reshape(-1, t.shape[-1])


def params(prefix, mha):
    # The book stores W = weight.T, (d_in, d_out).
    for name in ["W_q", "W_k", "W_v", "W_o"]:
        layer = getattr(mha, name)
        out["%s.%s.W" % (prefix, name)] = layer.weight.detach().t().contiguous()
        out["%s.%s.b" % (prefix, name)] = layer.bias.detach().clone()


def case(prefix, mha, x_q, x_kv):
    with torch.no_grad():
        output, weights = mha(x_q, x_kv)
    params(prefix, mha)
    out[prefix + ".X_q"] = rows(x_q)
    if x_kv is not x_q:
        out[prefix + ".X_kv"] = rows(x_kv)
    out[prefix + ".output"] = rows(output)
    out[prefix + ".weights"] = weights


# --- split and combine -------------------------------------------------------
torch.manual_seed(1)
X = torch.randn(2, 3, 8)                      # batch 2, seq 3, d_model 8
out["split.X"] = rows(X)
out["split.heads"] = split_heads(X, 4)        # (2, 4, 3, 2)
torch.manual_seed(2)
T = torch.randn(3, 2, 4, 5)                   # batch 3, 2 heads, seq 4, d_k 5
out["combine.heads"] = T
out["combine.X"] = rows(combine_heads(T))     # (12, 10)

# --- a batch of 3 sequences: self-attention, d_model 16, 4 heads -------------
torch.manual_seed(3)
mha = MultiHeadAttention(16, 4)
X = torch.randn(3, 5, 16)
case("batch", mha, X, X)

# --- cross-attention: 4 queries over 7 keys, batch 2, d_model 12, 3 heads ----
torch.manual_seed(4)
mha = MultiHeadAttention(12, 3)
X_q = torch.randn(2, 4, 12)
X_kv = torch.randn(2, 7, 12)
case("cross", mha, X_q, X_kv)

# --- the chapter program: "the cat sat on the mat", seed 42, d_model 64, 4 heads
torch.manual_seed(42)
words = "the cat sat on the mat".split()
vocab = list(dict.fromkeys(words))            # first-appearance order
ids = torch.tensor([vocab.index(w) for w in words])
embedding = nn.Embedding(len(vocab), 64)
mha = MultiHeadAttention(64, 4)
with torch.no_grad():
    X = (embedding(ids) + sinusoidal(len(words), 64)).unsqueeze(0)   # (1, 6, 64)
case("run", mha, X, X)
with torch.no_grad():
    out["run.Q_heads"] = split_heads(mha.W_q(X), 4)                  # (1, 4, 6, 16)
# Then, from the same generator: 10 decoder states attend over 50 encoder states.
X_dec = torch.randn(1, 10, 64)
X_enc = torch.randn(1, 50, 64)
case("run.cross", mha, X_dec, X_enc)
# Keep the file small: the C++ test draws these from the seed itself, so the
# biases (drawn after their weights) and the outputs are enough to compare.
for name in ["W_q", "W_k", "W_v", "W_o"]:
    del out["run.%s.W" % name], out["run.cross.%s.W" % name], out["run.cross.%s.b" % name]
del out["run.cross.X_q"], out["run.cross.X_kv"]

write_fixtures("04-multi-head.txt", out, __doc__)
