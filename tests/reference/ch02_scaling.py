"""Golden values for chapter 2 (scaling), made with PyTorch.

scaled_scores: Q @ K^T / math.sqrt(d_k) for the running example, a
cross-attention shape (10 queries, 50 keys) and a batch of 3.
dot_product_stats: q = torch.randn(samples, d_k), then k = torch.randn(samples,
d_k), dots = (q * k).sum(-1); stats = [mean, var, scaled mean, scaled var]
with torch.var's unbiased estimate, all in float32 as torch computes them.
"""
import math

import torch

from fixtures import running_example, write_fixtures

out = {}


def scaled(Q, K):
    return torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.shape[-1])


# --- The running example, built exactly as chapter 1 builds it ---------------
run = running_example()
out["run.scores"] = run.Q @ run.K.T
out["run.scaled"] = scaled(run.Q, run.K)      # / sqrt(64) = / 8

# --- Cross-attention: 10 queries look at 50 keys, d_k 16 --------------------
torch.manual_seed(1)
Q = torch.randn(10, 16)
K = torch.randn(50, 16)
out["cross.Q"], out["cross.K"], out["cross.scaled"] = Q, K, scaled(Q, K)

# --- A batch of 3, 7 queries and 5 keys, d_k 32 (sqrt(32) is not exact) -----
torch.manual_seed(2)
Q = torch.randn(3, 7, 32)
K = torch.randn(3, 5, 32)
out["batch.Q"], out["batch.K"], out["batch.scaled"] = Q, K, scaled(Q, K)

# --- d_k 1: the score is a plain product of two numbers ----------------------
torch.manual_seed(3)
Q = torch.randn(4, 1)
K = torch.randn(3, 1)
out["dk1.Q"], out["dk1.K"], out["dk1.scaled"] = Q, K, scaled(Q, K)

# --- dot_product_stats: (seed, d_k, samples) ---------------------------------
# Small sample counts make the unbiased variance (divide by n - 1) differ
# clearly from the biased one (divide by n): 2% at n = 50.
for seed, d, n in [(3, 4, 50), (4, 64, 1000), (5, 512, 200), (6, 1, 2), (7, 10, 17)]:
    torch.manual_seed(seed)
    q = torch.randn(n, d)
    k = torch.randn(n, d)
    dots = (q * k).sum(-1)
    s = dots / math.sqrt(d)
    out["stats.%d.%d.%d" % (seed, d, n)] = torch.stack([dots.mean(), dots.var(), s.mean(), s.var()])

write_fixtures("02-scaling.txt", out, __doc__)
