"""Golden values for chapter 8 (efficient attention), made with PyTorch.

Every reference is the plain, quadratic formula, written here independently
of the chapter's algorithms: the whole (seq_q, seq_k) matrix of scores, a
mask where one applies, torch.softmax and torch.logsumexp, autograd for the
backward. The inputs are float32 draws; each reference is computed from them
in float64 and rounded to float32 once, so a fixture holds the exact answer
to float32 precision and the C++ test measures only its own rounding.

- os.*: rows of scores for online softmax (-inf entries, a row of only -inf,
  logits of +-1e30, logits near -1e4). PyTorch gives NaN for a row of only
  -inf; the book gives zeros, and os.P holds zeros there.
- tiled.self.*: Q, K (37, 16) and V (37, 8); output and lse of full and of
  causal attention. 37 is prime: every block size but 1 and 37 leaves a
  smaller last block.
- tiled.cross.*: the same Q against K (45, 16) and V (45, 8), not causal.
- bw.*: dQ, dK, dV from autograd of (O * dO).sum() for tiled.self causal and
  tiled.cross, with dO drawn here.
- local.*: causal local attention on tiled.self's Q, K, V as a band-masked
  softmax, for windows 1, 5, 16, 37, 50.
- linear.*: causal linear attention on tiled.self's Q, K, V with
  phi(x) = elu(x) + 1, as the quadratic form (phi(Q) phi(K)^T masked to the
  lower triangle, rows normalised), not as running sums.
The key/value cache test reads tiled.self.causal.output: after n tokens the
cache's answer is row n - 1 of causal attention.
"""
import math

import torch
import torch.nn.functional as F

from fixtures import write_fixtures

out = {}
inf = float("inf")


def scores_of(Q, K):
    return Q @ K.T / math.sqrt(Q.shape[-1])


def full_attention(Q, K, V, allowed=None):
    """softmax(Q K^T / sqrt(d_k)) V with masked scores set to -inf; also the
    log-sum-exp of each row's (masked) scores. Float64 in, float64 out."""
    S = scores_of(Q, K)
    if allowed is not None:
        S = S.masked_fill(~allowed, -inf)
    return torch.softmax(S, dim=-1) @ V, torch.logsumexp(S, dim=-1)


def causal(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


def band(n, window):
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(n).unsqueeze(0)
    return (j <= i) & (j > i - window)


def f32(t):
    return t.detach().float()


# --- online softmax ----------------------------------------------------------
torch.manual_seed(80)
X = torch.randn(6, 9) * 3
X[1, 2] = -inf
X[1, 5:8] = -inf                                   # several masked entries
X[2, :] = -inf                                     # a row that sees nothing
X[3, :] = torch.tensor([1e30, -1e30, 0.0, 1e30, 5.0, -1e30, 1.0, 2.0, 3.0])
X[4, :] = -1e4 + torch.arange(9.0)                 # only differences matter
X[5, :] = -inf
X[5, 6] = 0.75                                     # one key: weight exactly 1
P = torch.softmax(X.double(), dim=-1)
P = torch.nan_to_num(P, nan=0.0)                   # the book's zero row
out["os.X"], out["os.P"] = X, f32(P)

# --- tiled attention, forward --------------------------------------------------
torch.manual_seed(81)
Q = torch.randn(37, 16) * 1.5                      # scores of std 1.5: maxima move
K = torch.randn(37, 16)
V = torch.randn(37, 8)
K_cross = torch.randn(45, 16)
V_cross = torch.randn(45, 8)
Q64, K64, V64 = Q.double(), K.double(), V.double()
Kc64, Vc64 = K_cross.double(), V_cross.double()

out["tiled.self.Q"], out["tiled.self.K"], out["tiled.self.V"] = Q, K, V
o, lse = full_attention(Q64, K64, V64)
out["tiled.self.output"], out["tiled.self.lse"] = f32(o), f32(lse)
o_causal, lse_causal = full_attention(Q64, K64, V64, causal(37))
out["tiled.self.causal.output"], out["tiled.self.causal.lse"] = f32(o_causal), f32(lse_causal)

out["tiled.cross.K"], out["tiled.cross.V"] = K_cross, V_cross
o_cross, lse_cross = full_attention(Q64, Kc64, Vc64)
out["tiled.cross.output"], out["tiled.cross.lse"] = f32(o_cross), f32(lse_cross)

# --- tiled attention, backward: autograd of (O * dO).sum() ---------------------
dO_self = torch.randn(37, 8)
dO_cross = torch.randn(37, 8)


def grads(Q, K, V, dO, allowed=None):
    Q, K, V = (t.detach().clone().requires_grad_() for t in (Q, K, V))
    O, _ = full_attention(Q, K, V, allowed)
    dQ, dK, dV = torch.autograd.grad((O * dO.double()).sum(), (Q, K, V))
    return f32(dQ), f32(dK), f32(dV)


out["bw.causal.dO"] = dO_self
out["bw.causal.dQ"], out["bw.causal.dK"], out["bw.causal.dV"] = grads(Q64, K64, V64, dO_self, causal(37))
out["bw.cross.dO"] = dO_cross
out["bw.cross.dQ"], out["bw.cross.dK"], out["bw.cross.dV"] = grads(Q64, Kc64, Vc64, dO_cross)

# --- local attention: a band mask on the full scores ---------------------------
windows = [1, 5, 16, 37, 50]
out["local.windows"] = torch.tensor(windows, dtype=torch.int64)
out["local.output"] = torch.stack([f32(full_attention(Q64, K64, V64, band(37, w))[0]) for w in windows])

# --- linear attention: the quadratic form ----------------------------------------
phi_Q, phi_K = F.elu(Q64) + 1, F.elu(K64) + 1
A = (phi_Q @ phi_K.T) * causal(37).double()       # weight of key j for query i, j <= i
out["linear.output"] = f32((A @ V64) / A.sum(dim=-1, keepdim=True))

write_fixtures("08-efficient-attention.txt", out, __doc__)
