"""Golden values for chapter 6 (dropout), made with PyTorch.

F.dropout(x, p, training=True) on the CPU: its keep masks and outputs for
several seeds, shapes and p (the C++ draws the same masks from the same
seed), two calls in a row on one stream, the running example's attention
weights (seed 42, d_model 64) dropped with p = 0.1 right after the
parameters are drawn, the random numbers that follow a p = 0 or p = 1 call
(which draw nothing), a hand-made mask applied as PyTorch applies its own
(x * (mask / (1 - p)) in float32), and the gradient from autograd.
Masks are stored as i64 0/1.
"""
import math

import torch
import torch.nn.functional as F

from fixtures import running_example, write_fixtures

out = {}


def keep_of(y):
    # Where F.dropout kept the element. The inputs below are drawn from
    # torch.rand + 0.5, never 0, so "non-zero" is exactly "kept".
    return (y != 0).long()


# --- masks and outputs from a seed --------------------------------------------
# (name, seed, rows, cols, p): the shapes cover one element, a row, a
# non-square matrix, sizes below and above 16 and a 64 x 64 block. For
# p = 0.15 and 0.45, float32 1 / float32(1 - p) differs in the last bit from
# float32(1 / (1 - p)), so the outputs show which one PyTorch uses.
cases = [
    ("a", 0, 6, 6, 0.1),
    ("b", 1, 1, 1, 0.5),
    ("c", 2, 1, 17, 0.25),
    ("d", 3, 7, 13, 0.15),
    ("e", 4, 16, 16, 0.9),
    ("f", 5, 64, 64, 0.3),
    ("g", 2024, 3, 50, 0.123456789),
    ("h", 6, 6, 6, 0.45),
]
for name, seed, rows, cols, p in cases:
    torch.manual_seed(1000 + seed)
    x = torch.rand(rows, cols) + 0.5
    torch.manual_seed(seed)
    y = F.dropout(x, p, training=True)
    out["seed.%s.x" % name] = x
    out["seed.%s.config" % name] = torch.tensor([seed, rows, cols], dtype=torch.int64)
    out["seed.%s.p" % name] = torch.tensor([p], dtype=torch.float32)  # a check: the C++ table holds p as a double
    out["seed.%s.keep" % name] = keep_of(y)
    out["seed.%s.y" % name] = y

# Two calls in a row on one stream: the second continues where the first stopped.
torch.manual_seed(77)
x2 = torch.rand(5, 9) + 0.5
y_first = F.dropout(x2, 0.4, training=True)
y_second = F.dropout(x2, 0.4, training=True)
out["twice.x"], out["twice.keep1"], out["twice.keep2"] = x2, keep_of(y_first), keep_of(y_second)

# --- p = 0 and p = 1 draw nothing ---------------------------------------------
torch.manual_seed(8)
x3 = torch.rand(4, 4) + 0.5
F.dropout(x3, 0.0, training=True)
F.dropout(x3, 1.0, training=True)
out["nodraw.rand"] = torch.rand(6)  # the same numbers as right after torch.rand(4, 4)


# --- the running example: "the cat sat on the mat", seed 42, d_model 64 ------
run = running_example()
Q, K, V = run.Q, run.K, run.V
d_k = Q.shape[-1]
with torch.no_grad():
    weights = torch.softmax(Q @ K.T / math.sqrt(d_k), dim=-1)
    # Straight after the parameters, on the same generator, as chapter 6's program does.
    dropped = F.dropout(weights, 0.1, training=True)
out["run.weights"], out["run.keep"], out["run.dropped"] = weights, keep_of(dropped), dropped

# --- a hand-made mask, applied the way dropout applies its own ----------------
torch.manual_seed(9)
x4 = torch.randn(5, 7)
mask = (torch.rand(5, 7) < 0.6).long()
p_fixed = 0.48  # another p where the rounding of the scale shows
noise = mask.float()
noise.div_(1 - p_fixed)  # what Dropout.cpp does with its bernoulli noise
out["fixed.x"], out["fixed.keep"], out["fixed.y"] = x4, mask, x4 * noise

# --- backward from autograd -----------------------------------------------------
torch.manual_seed(10)
x5 = (torch.rand(8, 12) + 0.5).requires_grad_()
g5 = torch.randn(8, 12)
torch.manual_seed(11)
y5 = F.dropout(x5, 0.42, training=True)
y5.backward(g5)
out["bw.keep"], out["bw.d_out"], out["bw.d_x"] = keep_of(y5.detach()), g5, x5.grad

write_fixtures("06-dropout.txt", out, __doc__)
