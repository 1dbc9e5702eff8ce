"""Golden values for chapter 9's exercises (tests/09-gpt/), made with PyTorch
and with nanoGPT's own formulas (Karpathy, nanoGPT: model.py's generate,
train.py's get_lr, data/shakespeare_char/prepare.py's vocabulary).

    /usr/bin/python3 ch09_gpt.py      write tests/fixtures/09-gpt.txt

- tok.*: a text with characters of 1 to 4 UTF-8 bytes; its vocabulary
  sorted(set(text)) as code points, and the ids of a second text.
- probs.*: nanoGPT's generate on one row of logits: logits / temperature,
  torch.topk and `logits[logits < v[:, [-1]]] = -inf`, F.softmax; for
  several temperatures and k, and a row whose k-th largest logit is tied.
- draw.*: torch.multinomial(probs, 1) called n times in a row after
  torch.manual_seed(seed), for fixed distributions. Each draw is also
  replayed as torch's CPU kernel computes it (one exponential_ per entry,
  argmax of p / q) and must pick the same token; the script refuses a case
  whose winning ratio is within 1e-4 (relative) of the runner-up, so a
  float32 probability that differs in its last bit cannot change a token.
- lr.*: get_lr for four schedules, at every iteration listed in lr.*.it.
- clip.*: torch.nn.utils.clip_grad_norm_ on three gradient tensors, clipped
  (max_norm 1) and not (max_norm 100); its return value and the gradients.
- adamw.*: torch.optim.AdamW over a matrix (decayed) and a bias (not: its
  own parameter group with weight_decay 0, as nanoGPT's configure_optimizers),
  5 steps with gradients drawn here; two configurations.
"""
import math

import torch
import torch.nn.functional as F

from fixtures import write_fixtures

out = {}


def i64(values):
    return torch.tensor(list(values), dtype=torch.int64)


# --- the tokenizer ------------------------------------------------------------
text = "In the beginning God created the heaven and the earth.\nÉté, naïve — Ἀρχή 😀 end"
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
second = "the earth 😀 — naïve Été\n"
out["tok.chars"] = i64(ord(c) for c in chars)
out["tok.ids"] = i64(stoi[c] for c in second)


# --- sampling probabilities (nanoGPT's generate) ---------------------------------
def nanogpt_probs(logits, temperature, top_k):
    logits = logits / temperature
    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
    logits = logits.clone()
    logits[logits < v[:, [-1]]] = -float("Inf")
    return F.softmax(logits, dim=-1)


torch.manual_seed(90)
row = torch.randn(1, 65) * 2.0
out["probs.logits"] = row
PROB_CASES = [(1.0, 65), (0.5, 65), (1.7, 65), (0.8, 10), (1.0, 1), (2.0, 5)]
for temperature, k in PROB_CASES:
    out["probs.t%g.k%d" % (temperature, k)] = nanogpt_probs(row, temperature, k)

# Ties at the k-th largest value: every tied logit is kept (k = 2 keeps
# three 3.0s), and a top-k that cuts between distinct values.
tied = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0, -1.0]])
out["probs.tied.logits"] = tied
out["probs.tied.k2"] = nanogpt_probs(tied, 1.0, 2)
out["probs.tied.k4"] = nanogpt_probs(tied, 1.0, 4)


# --- sampling tokens (torch.multinomial) -------------------------------------------
def draws(probs, seed, n):
    """n successive torch.multinomial(probs, 1) after manual_seed(seed),
    checked against the kernel's exponential race."""
    torch.manual_seed(seed)
    tokens = [int(torch.multinomial(probs, 1)) for _ in range(n)]
    torch.manual_seed(seed)
    for i in range(n):
        q = torch.empty_like(probs).exponential_()
        ratio = (probs / q).reshape(-1)
        best = int(torch.argmax(ratio))
        assert best == tokens[i], "multinomial is not the exponential race here"
        top2 = torch.topk(ratio.double(), 2).values
        if top2[1] > 0 and top2[0] / top2[1] < 1 + 1e-4:
            raise SystemExit("draw %d of seed %d is a near tie; choose another seed" % (i, seed))
    return i64(tokens)


DRAW_SEEDS = [0, 7, 42, 1234]
fixed = [  # (name, probabilities): four fixed distributions
    ("uniform4", torch.full((4,), 0.25)),
    ("skewed", torch.tensor([0.5, 0.25, 0.125, 0.0625, 0.0625])),
    ("zeros", torch.tensor([0.0, 0.3, 0.0, 0.7, 0.0, 0.0])),
    ("t0.8k10", out["probs.t0.8.k10"].reshape(-1)),
    ("t1k65", out["probs.t1.k65"].reshape(-1)),
]
for name, p in fixed:
    out["draw.%s.p" % name] = p.float()
    for seed in DRAW_SEEDS:
        out["draw.%s.s%d" % (name, seed)] = draws(p.float(), seed, 200)
# One generator across distributions of different sizes: the draws of one
# token are exactly vocab_size, so the next token starts where it ended.
torch.manual_seed(5)
mixed = []
for _ in range(30):
    for name in ["uniform4", "zeros", "skewed"]:
        mixed.append(int(torch.multinomial(out["draw.%s.p" % name], 1)))
out["draw.mixed.s5"] = i64(mixed)


# --- the learning-rate schedule (nanoGPT's get_lr) ----------------------------------
def get_lr(it, learning_rate, min_lr, warmup_iters, lr_decay_iters):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


SCHEDULES = [  # name, lr, min_lr, warmup, decay, iterations
    ("char", 1e-3, 1e-4, 100, 2000, range(0, 2101)),           # this chapter's default
    ("gpt2", 6e-4, 6e-5, 2000, 600000, [0, 1, 999, 1999, 2000, 2001, 100000, 301000, 599999, 600000, 600001, 700000]),
    ("nowarm", 1.0, 0.0, 0, 10, range(0, 13)),
    ("short", 1e-3, 1e-4, 1, 5, range(0, 8)),
]
for name, lr, min_lr, warmup, decay, its in SCHEDULES:
    its = list(its)
    out["lr.%s.config" % name] = torch.tensor([lr, min_lr, warmup, decay], dtype=torch.float32)
    out["lr.%s.it" % name] = i64(its)
    out["lr.%s.lr" % name] = torch.tensor([get_lr(i, lr, min_lr, warmup, decay) for i in its], dtype=torch.float32)


# --- gradient clipping (torch.nn.utils.clip_grad_norm_) ------------------------------
torch.manual_seed(91)
shapes = [(3, 4), (5,), (2, 3, 2)]
scales = [0.5, 3.0, 0.1]  # tensors of very different norms: a per-tensor clip differs
grads = [torch.randn(*s) * c for s, c in zip(shapes, scales)]
for k, g in enumerate(grads):
    out["clip.g%d" % k] = g
for name, max_norm in [("clipped", 1.0), ("unclipped", 100.0)]:
    params = [torch.zeros(*s, requires_grad=True) for s in shapes]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    out["clip.%s.max_norm" % name] = torch.tensor([max_norm], dtype=torch.float32)
    out["clip.%s.total" % name] = total.reshape(1).float()
    for k, p in enumerate(params):
        out["clip.%s.g%d" % (name, k)] = p.grad


# --- AdamW (torch.optim.AdamW) ---------------------------------------------------------
ADAMW = [  # name, lr, betas, eps, weight_decay
    ("nanogpt", 1e-3, (0.9, 0.99), 1e-8, 0.1),
    ("strong", 0.1, (0.9, 0.999), 1e-8, 0.5),  # decay large enough to tell decoupled from L2 at a glance
]
for name, lr, betas, eps, wd in ADAMW:
    torch.manual_seed(92)
    W = torch.randn(4, 5).requires_grad_()
    b = torch.randn(5).requires_grad_()
    opt = torch.optim.AdamW([{"params": [W], "weight_decay": wd}, {"params": [b], "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=eps)
    out["adamw.%s.config" % name] = torch.tensor([lr, betas[0], betas[1], eps, wd], dtype=torch.float32)
    out["adamw.%s.W0" % name] = W.detach().clone()
    out["adamw.%s.b0" % name] = b.detach().clone()
    for step in range(1, 6):
        gW, gb = torch.randn(4, 5) * 0.01, torch.randn(5) * 0.01
        if step == 3:
            gW[0, :] = 0.0  # a row without gradient: only the decay moves it
        W.grad, b.grad = gW, gb
        opt.step()
        out["adamw.%s.gW%d" % (name, step)] = gW
        out["adamw.%s.gb%d" % (name, step)] = gb
        out["adamw.%s.W%d" % (name, step)] = W.detach().clone()
        out["adamw.%s.b%d" % (name, step)] = b.detach().clone()

write_fixtures("09-gpt.txt", out, __doc__.split("\n\n")[0])
