"""Golden values for chapter 3 (softmax), made with PyTorch.

softmax along the last dimension, its backward from autograd, scaled
dot-product attention (self, cross 10 x 50, batch 3), and the entropy and
focus metrics. The running example is rebuilt exactly as chapter 1 builds it
(seed 42, d_model 64), so the C++ test can follow the same path from the seed.
"""
import math

import torch

from fixtures import running_example, write_fixtures

out = {}


def attention(Q, K, V):
    # softmax(Q Kᵀ / sqrt(d_k)) V over the last two dimensions (any batch).
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return weights @ V, weights


def entropy(weights):
    # entr(a) = -a log a with entr(0) = 0: the book's 0 log 0 = 0.
    return torch.special.entr(weights).sum(dim=-1)


def focus(weights):
    return weights.max(dim=-1).values.mean()


# --- softmax on random rows, a masked row, and extreme logits ---------------
torch.manual_seed(3)
X = torch.randn(7, 13) * 3
X[2, 1] = float("-inf")                 # one masked entry
X[5, 4:9] = float("-inf")               # several
out["sm.X"], out["sm.P"] = X, torch.softmax(X, dim=-1)

X_cross = torch.randn(10, 50) * 2       # cross-attention shape: 10 queries, 50 keys
out["sm.cross.X"], out["sm.cross.P"] = X_cross, torch.softmax(X_cross, dim=-1)

X_ext = torch.tensor([
    [1e4, 0.0, -1e4, 5.0],
    [1e30, 1e30, -1e30, 0.0],
    [-1e30, -1e30, -1e30, -1e30],
    [-1e4, -1e4 + 1, -1e4 + 2, -1e4 + 3],
])
out["sm.extreme.X"], out["sm.extreme.P"] = X_ext, torch.softmax(X_ext, dim=-1)

# --- softmax backward from autograd ------------------------------------------
torch.manual_seed(4)
X_bw = (torch.randn(6, 9) * 2).requires_grad_()
dY = torch.randn(6, 9)
P_bw = torch.softmax(X_bw, dim=-1)
(dX,) = torch.autograd.grad((P_bw * dY).sum(), X_bw)
out["bw.X"], out["bw.P"], out["bw.dY"], out["bw.dX"] = X_bw.detach(), P_bw.detach(), dY, dX

X_bw2 = (torch.randn(10, 50) * 2).requires_grad_()
dY2 = torch.randn(10, 50)
P_bw2 = torch.softmax(X_bw2, dim=-1)
(dX2,) = torch.autograd.grad((P_bw2 * dY2).sum(), X_bw2)
out["bw.cross.P"], out["bw.cross.dY"], out["bw.cross.dX"] = P_bw2.detach(), dY2, dX2

# --- attention: cross 10 x 50 with d_v != d_k, and a batch of 3 -------------
torch.manual_seed(5)
Qc, Kc, Vc = torch.randn(10, 16), torch.randn(50, 16), torch.randn(50, 24)
out_c, w_c = attention(Qc, Kc, Vc)
out["att.cross.Q"], out["att.cross.K"], out["att.cross.V"] = Qc, Kc, Vc
out["att.cross.output"], out["att.cross.weights"] = out_c, w_c

Qb, Kb, Vb = torch.randn(3, 5, 8), torch.randn(3, 7, 8), torch.randn(3, 7, 4)
out_b, w_b = attention(Qb, Kb, Vb)
out["att.batch.Q"], out["att.batch.K"], out["att.batch.V"] = Qb, Kb, Vb
out["att.batch.output"], out["att.batch.weights"] = out_b, w_b

# --- the running example: "the cat sat on the mat", seed 42, d_model 64 ------
run = running_example()
Q, K, V = run.Q, run.K, run.V
with torch.no_grad():
    output, weights = attention(Q, K, V)
out["run.scaled"] = Q @ K.T / math.sqrt(Q.shape[-1])
out["run.weights"], out["run.output"] = weights, output
out["run.entropy"] = entropy(weights)
out["run.focus"] = focus(weights)

# --- metrics on a batch of random weights (some exact zeros) ----------------
torch.manual_seed(6)
S = torch.randn(8, 12) * 2
S[0, :6] = float("-inf")
S[3, ::2] = float("-inf")
W_metrics = torch.softmax(S, dim=-1)
out["metrics.W"], out["metrics.entropy"], out["metrics.focus"] = W_metrics, entropy(W_metrics), focus(W_metrics)

write_fixtures("03-softmax.txt", out, __doc__)
