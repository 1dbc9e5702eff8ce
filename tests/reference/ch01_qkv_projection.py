"""Golden values for chapter 1 (qkv-projection), made with PyTorch.

The C++ chapter draws its parameters in this same order from a generator
seeded the same way, so its numbers must match these.
"""

import torch
import torch.nn as nn

from fixtures import running_example, sinusoidal, write_fixtures

torch.set_printoptions(precision=6)
out = {}


def linear_params(prefix, layer):
    # The book stores W = weight.T, (d_in, d_out).
    out[prefix + ".W"] = layer.weight.detach().t().contiguous()
    if layer.bias is not None:
        out[prefix + ".b"] = layer.bias.detach().clone()


# --- Attention without weights (step 1): X is query, key and value --------
def simple_attention(X):
    """softmax(X Xᵀ) X, the softmax along each row (dim=-1): row i is query i."""
    weights = torch.softmax(X @ X.T, dim=-1)
    return weights, weights @ X


# The program's six hand-written 3-number vectors, one per word of
# "the cat sat on the mat" (the two "the"s share theirs).
X_toy = torch.tensor([
    [0.1, 0.2, 0.1],  # the
    [0.9, 0.1, 0.2],  # cat
    [0.2, 0.8, 0.3],  # sat
    [0.1, 0.3, 0.5],  # on
    [0.1, 0.2, 0.1],  # the
    [0.3, 0.1, 0.9],  # mat
])
out["simple.toy.X"] = X_toy
out["simple.toy.weights"], out["simple.toy.context"] = simple_attention(X_toy)
# Random vectors with every row different in length, so no two queries
# share weights, and scores of a few units (|score| < 30: no overflow).
torch.manual_seed(11)
X_rand = torch.randn(7, 5)
out["simple.rand.X"] = X_rand
out["simple.rand.weights"], out["simple.rand.context"] = simple_attention(X_rand)

# --- The running example: "the cat sat on the mat", seed 42, d_model 64 ----
run = running_example()
ids, embedding, W_q, W_k, W_v = run.ids, run.embedding, run.W_q, run.W_k, run.W_v
E, PE, X, Q, K, V = run.E, run.PE, run.X, run.Q, run.K, run.V
scores = Q @ K.T
out["run.ids"] = ids
out["run.table"] = embedding.weight.detach().clone()
linear_params("run.W_q", W_q)
linear_params("run.W_k", W_k)
linear_params("run.W_v", W_v)
out["run.E"] = E
out["run.PE"] = PE
out["run.X"] = X
out["run.Q"], out["run.K"], out["run.V"] = Q, K, V
out["run.scores"] = scores

# --- The small example of the tutorial: d_model 8, d_k 4 -------------------
torch.manual_seed(42)
X_small = torch.tensor([
    [0.1, 0.2, -0.1, 0.3, 0.4, -0.2, 0.1, 0.0],   # "the"
    [0.3, -0.1, 0.5, 0.2, 0.1, 0.4, -0.3, 0.2],   # "cat"
    [-0.2, 0.4, 0.1, -0.3, 0.5, 0.1, 0.2, -0.1],  # "sat"
])
small = [nn.Linear(8, 4) for _ in range(3)]
with torch.no_grad():
    for name, layer in zip(["W_q", "W_k", "W_v"], small):
        linear_params("small." + name, layer)
        out["small." + name[-1].upper() + "_nobias"] = X_small @ layer.weight.t()
        out["small." + name[-1].upper()] = layer(X_small)
out["small.X"] = X_small

# --- Positional encodings of other sizes -----------------------------------
out["pe.50x64"] = sinusoidal(50, 64)
out["pe.7x7"] = sinusoidal(7, 7)      # odd d_model: the last column is a sine
out["pe.1x1"] = sinusoidal(1, 1)

# --- embed with repeated ids, and linear on a batch of shapes --------------
torch.manual_seed(7)
table = torch.randn(10, 12)
some_ids = torch.tensor([3, 0, 9, 3, 3, 7])
out["embed.table"], out["embed.ids"], out["embed.out"] = table, some_ids, table[some_ids]

torch.manual_seed(8)
X_lin = torch.randn(9, 16)
lin = nn.Linear(16, 5)
with torch.no_grad():
    linear_params("lin", lin)
    out["lin.X"] = X_lin
    out["lin.Y"] = lin(X_lin)
    out["lin.Y_nobias"] = X_lin @ lin.weight.t()

write_fixtures("01-qkv-projection.txt", out, __doc__)
