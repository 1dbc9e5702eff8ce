"""Golden values of chapter 7's attention pooling (tests/fixtures/07-pooling.txt).

attention_pool: one query q attends over the rows of X,
    weights = softmax(q X^T / sqrt(d)),  pooled = weights X,
and its gradients for a given d_pooled, from autograd. Computed in float64
and rounded to float32 once, so the C++ float32 code is compared with the
exact values.
"""
import math

import torch

from fixtures import write_fixtures


def pool(X, q):
    w = torch.softmax(q @ X.T / math.sqrt(X.shape[1]), dim=-1)
    return w, w @ X


def case(gen, n, d, scale):
    X = (torch.randn(n, d, generator=gen, dtype=torch.float64) * scale).requires_grad_()
    q = (torch.randn(1, d, generator=gen, dtype=torch.float64) * scale).requires_grad_()
    d_pooled = torch.randn(1, d, generator=gen, dtype=torch.float64)
    w, pooled = pool(X, q)
    (pooled * d_pooled).sum().backward()
    return {"X": X, "q": q, "d_pooled": d_pooled, "weights": w, "pooled": pooled, "dX": X.grad, "dq": q.grad}


def main():
    gen = torch.Generator().manual_seed(7)
    tensors = {}
    # (7, 5): the ordinary case; (1, 3): one row, weight 1 and no gradient
    # through the scores; (9, 16) with large entries: peaked weights.
    for name, (n, d, scale) in {"small": (7, 5, 1.0), "one_row": (1, 3, 1.0), "peaked": (9, 16, 3.0)}.items():
        for key, t in case(gen, n, d, scale).items():
            tensors["%s_%s" % (name, key)] = t.detach().float()
    write_fixtures("07-pooling.txt", tensors,
                   "attention_pool and attention_pool_backward, float64 autograd rounded to float32")


if __name__ == "__main__":
    main()
