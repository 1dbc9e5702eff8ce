"""Chapter 9's GPT in PyTorch: the C++ model's twin (chapters/09-gpt/model.hpp).

The same model (pre-norm blocks, causal attention, a learned position table,
the output layer tied to the token embedding), initialised from the same
seed in the order of the C++ parameter table, trained on the same batches
(nanoGPT's get_batch: offsets from torch.randint on the global generator,
which sa::Generator reproduces) with the same AdamW, schedule and clipping.

    /usr/bin/python3 ch09_gpt_twin.py              write tests/fixtures/09-gpt-twin.txt
    /usr/bin/python3 ch09_gpt_twin.py --bench      time a training step of the default model (one thread)
    /usr/bin/python3 ch09_gpt_twin.py --train      the default run, printing what the C++ program prints
    /usr/bin/python3 ch09_gpt_twin.py --train --quick   the program's --quick run
    /usr/bin/python3 ch09_gpt_twin.py --curve 200  write tests/fixtures/09-gpt-curve.txt (--out: elsewhere)

The text is build/data/train.txt and val.txt, which the C++ program prepares
(./book run 9); --data-dir names another build folder's data/. The fixture:
a small model (2 layers, d_model 32, 4 heads, seq_len 16, batch 4) on the
first 2048 characters of train.txt; its first batch's offsets, loss and
every gradient under the C++ names and layout, two initial tensors (bit for
bit), the gradient norm, and the loss of the second batch after one clipped
AdamW step.
"""
import argparse
import math
import os
import statistics
import sys
import time

if "--bench" in sys.argv[1:] or "--train" in sys.argv[1:]:
    # One thread and OpenBLAS's best kernels, set before torch loads it.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
    import blas

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.W_o = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        H = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        # nanoGPT's attention without flash (PyTorch 1.13 has none).
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.W_o(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, seq_len, d, heads, layers):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.tok.weight.t()  # weight tying
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def table(model):
    """The C++ parameter table (visit_gpt_parameters): (name, parameter, std or
    'ones'/'zeros', transposed), in its order. transposed: PyTorch keeps a
    Linear's weight as (d_out, d_in), the book as (d_in, d_out)."""
    std, residual = 0.02, 0.02 / math.sqrt(2 * len(model.blocks))
    rows = [("tok", model.tok.weight, std, False), ("pos", model.pos.weight, std, False)]
    for l, b in enumerate(model.blocks):
        p = "blocks.%d." % l
        rows += [(p + "ln1.gamma", b.ln1.weight, "ones", False), (p + "ln1.beta", b.ln1.bias, "zeros", False),
                 (p + "qkv.W", b.qkv.weight, std, True), (p + "W_o.W", b.W_o.weight, residual, True),
                 (p + "ln2.gamma", b.ln2.weight, "ones", False), (p + "ln2.beta", b.ln2.bias, "zeros", False),
                 (p + "fc1.W", b.fc1.weight, std, True), (p + "fc1.b", b.fc1.bias, "zeros", False),
                 (p + "fc2.W", b.fc2.weight, residual, True), (p + "fc2.b", b.fc2.bias, "zeros", False)]
    rows += [("ln_f.gamma", model.ln_f.weight, "ones", False), ("ln_f.beta", model.ln_f.bias, "zeros", False)]
    assert len(rows) == len(list(model.parameters())), "the table names every parameter once"
    return rows


def make_model(seed, vocab, seq_len, d, heads, layers):
    """The model, then torch.manual_seed(seed) and every tensor drawn in the
    table's order: the C++ Generator(seed) does the same draws."""
    model = GPT(vocab, seq_len, d, heads, layers)
    torch.manual_seed(seed)
    with torch.no_grad():
        for _, p, init, _ in table(model):
            if init == "ones":
                p.fill_(1.0)
            elif init == "zeros":
                p.zero_()
            else:
                p.normal_(0.0, init)
    return model


def cxx_layout(model, grads=False):
    out = {}
    for name, p, _, transposed in table(model):
        t = (p.grad if grads else p).detach()
        out[name] = t.t().contiguous() if transposed else t.clone()
    return out


def get_batch(data, batch, seq_len, generator=None):
    """nanoGPT's get_batch: batch offsets from torch.randint, one draw each."""
    ix = torch.randint(len(data) - seq_len, (batch,), generator=generator)
    x = torch.stack([data[i:i + seq_len] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + seq_len] for i in ix])
    return ix, x, y


def adamw(model, lr, weight_decay=0.1):
    """nanoGPT's configure_optimizers: 2-D tensors decay, the others do not."""
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99), eps=1e-8)


def get_lr(it, lr=1e-3, min_lr=1e-4, warmup=100, decay_iters=2000):
    """nanoGPT's get_lr, as chapter 9's learning_rate."""
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return min_lr
    r = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * r)) * (lr - min_lr)


# The prepared text: build/data, or the folder --data-dir names (the
# benchmark passes its own build folder's, which need not be build/).
DATA_DIR = os.path.join(ROOT, "build", "data")


def read_text():
    try:
        train = open(os.path.join(DATA_DIR, "train.txt")).read()
        val = open(os.path.join(DATA_DIR, "val.txt")).read()
    except OSError:
        sys.exit("ch09_gpt_twin.py: %s is missing: run ./book run 9 (or this build's 09-gpt) once to prepare it"
                 % os.path.join(DATA_DIR, "train.txt"))
    chars = sorted(set(train))
    stoi = {c: i for i, c in enumerate(chars)}
    return chars, torch.tensor([stoi[c] for c in train]), torch.tensor([stoi[c] for c in val])


# --- the fixture ------------------------------------------------------------------
def fixture():
    from fixtures import write_fixtures
    seed, seq_len, d, heads, layers, batch, chars_used = 9, 16, 32, 4, 2, 4, 2048
    chars, train, _ = read_text()
    vocab = len(chars)
    data = train[:chars_used].clone()
    model = make_model(seed, vocab, seq_len, d, heads, layers)
    out = {"config": torch.tensor([seed, vocab, seq_len, d, heads, layers, batch]), "data": data}
    init = cxx_layout(model)
    out["init.tok"], out["init.blocks.1.fc2.W"] = init["tok"], init["blocks.1.fc2.W"]
    ix, x, y = get_batch(data, batch, seq_len)
    out["step0.offsets"] = ix
    logits, loss = model(x, y)
    loss.backward()
    out["step0.loss"] = loss.detach().reshape(1)
    for name, g in cxx_layout(model, grads=True).items():
        out["step0.grad." + name] = g
    out["step0.decay"] = torch.tensor([int(p.dim() >= 2) for _, p, _, _ in table(model)])
    opt = adamw(model, 1e-3)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    out["step0.grad_norm"] = norm.reshape(1)
    opt.step()
    ix, x, y = get_batch(data, batch, seq_len)
    out["step1.offsets"] = ix
    with torch.no_grad():
        out["step1.loss"] = model(x, y)[1].reshape(1)
    write_fixtures("09-gpt-twin.txt", out, __doc__.split("\n\n")[3])


# --- the run and the benchmark -------------------------------------------------------
DEFAULT = dict(iters=2000, batch=12, seq_len=64, d=128, heads=4, layers=4, eval_interval=200, eval_iters=20)
QUICK = dict(iters=200, batch=12, seq_len=64, d=128, heads=4, layers=4, eval_interval=50, eval_iters=10)


def estimate(model, data, c, seed):
    """The validation loss on the same eval_iters batches every time: their
    offsets come from a generator of their own, seeded with seed + 1."""
    g = torch.Generator().manual_seed(seed + 1)
    model.eval()
    with torch.no_grad():
        losses = [model(*get_batch(data, c["batch"], c["seq_len"], g)[1:])[1].item() for _ in range(c["eval_iters"])]
    model.train()
    return sum(losses) / len(losses)


def train_step(model, opt, train, c, it):
    """One iteration of the chapter's run: the schedule's rate, a batch from
    the global generator, forward, backward, clipping to 1, AdamW. Returns the
    rate, the batch's offsets, the loss and the norm before clipping."""
    lr = get_lr(it, warmup=c["iters"] // 20, decay_iters=c["iters"])
    for group in opt.param_groups:
        group["lr"] = lr
    ix, x, y = get_batch(train, c["batch"], c["seq_len"])
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    opt.step()
    return lr, ix, loss, norm


def train_run(c, seed=42):
    blas.report()
    torch.set_num_threads(1)
    chars, train, val = read_text()
    model = make_model(seed, len(chars), c["seq_len"], c["d"], c["heads"], c["layers"])
    opt = adamw(model, 1e-3)
    start, times = time.perf_counter(), []
    for it in range(c["iters"] + 1):
        if it % c["eval_interval"] == 0 or it == c["iters"]:
            print("iteration %5d  val loss %.4f  %.1f s" % (it, estimate(model, val, c, seed), time.perf_counter() - start))
            sys.stdout.flush()
        if it == c["iters"]:
            break
        t0 = time.perf_counter()
        lr, _, loss, _ = train_step(model, opt, train, c, it)
        times.append(time.perf_counter() - t0)
        if it < 5 or it % c["eval_interval"] == c["eval_interval"] - 1:
            print("  step %5d  loss %.4f" % (it, loss.item()))
    print("median step %.2f ms" % (1e3 * statistics.median(times)))


def curve(n, out, seed=42):
    """The first n iterations of the default run (the schedule of its 2000),
    as the C++ program's training_run does them: the same batches, learning
    rates, clipping and AdamW. Writes each iteration's training loss and
    gradient norm (before clipping), its batch's offsets, and the validation
    loss of the program's estimate at iterations 0, 100, 200, ... up to n."""
    from fixtures import write_fixtures
    torch.set_num_threads(1)
    c = DEFAULT
    chars, train, val = read_text()
    model = make_model(seed, len(chars), c["seq_len"], c["d"], c["heads"], c["layers"])
    opt = adamw(model, 1e-3)
    losses, norms, offsets, lrs, val_at, val_losses = [], [], [], [], [], []
    start, cpu = time.perf_counter(), time.process_time()
    for it in range(n + 1):
        if it % 100 == 0 or it == n:
            val_at.append(it)
            val_losses.append(estimate(model, val, c, seed))
        if it == n:
            break
        lr, ix, loss, norm = train_step(model, opt, train, c, it)
        norms.append(norm)
        losses.append(loss.item())
        offsets.append(ix)
        lrs.append(lr)
        if it % 20 == 19:
            print("  iteration %4d  loss %.4f  %.1f s" % (it, loss.item(), time.perf_counter() - start))
            sys.stdout.flush()
    command = "/usr/bin/python3 tests/reference/ch09_gpt_twin.py --curve %d" % n
    if seed != 42:
        command += " --seed %d" % seed
    if os.environ.get("LD_LIBRARY_PATH"):
        command = "LD_LIBRARY_PATH=%s %s" % (os.environ["LD_LIBRARY_PATH"], command)
    comment = ("%s\n(%.0f s of CPU, one thread, BLAS %s)\n"
               "The default run's first %d iterations of %d (seed %d, %d layers, %d heads, d_model %d, seq_len %d,\n"
               "batch %d, lr %g warmed up over %d iterations, clip 1.0, AdamW betas (0.9, 0.99), weight decay 0.1)\n"
               "on build/data/train.txt; val.loss is the program's estimate (%d batches of val.txt from seed + 1)\n"
               "at the iterations val.at names, before that iteration's step."
               % (command, time.process_time() - cpu, blas_name(), n, c["iters"], seed, c["layers"], c["heads"],
                  c["d"], c["seq_len"], c["batch"], 1e-3, c["iters"] // 20, c["eval_iters"]))
    write_fixtures(os.path.abspath(out), {
        "config": torch.tensor([seed, len(chars), c["seq_len"], c["d"], c["heads"], c["layers"], c["batch"],
                                c["iters"], n]),
        "train.loss": torch.tensor(losses, dtype=torch.float32),
        "train.grad_norm": torch.tensor(norms, dtype=torch.float32),
        "train.lr": torch.tensor(lrs, dtype=torch.float32),
        "train.offsets": torch.stack(offsets),
        "val.at": torch.tensor(val_at),
        "val.loss": torch.tensor(val_losses, dtype=torch.float32),
    }, comment)


def blas_name():
    """The BLAS library torch's products ran on (the reference BLAS unless an
    optimised one is installed: the last bits of every product depend on it)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = os.path.basename(line.split()[-1]) if "/" in line else ""
                if "blas" in name.lower():
                    return os.path.realpath(line.split()[-1])
    except OSError:
        pass
    return "unknown"


def bench(steps, seed=42):
    blas.report()
    torch.set_num_threads(1)
    c = DEFAULT
    chars, train, _ = read_text()
    model = make_model(seed, len(chars), c["seq_len"], c["d"], c["heads"], c["layers"])
    opt = adamw(model, 1e-3)
    n = sum(p.numel() for p in model.parameters())
    # Wall-clock time and this thread's CPU time (one thread does all the
    # work): on a busy machine the CPU time leaves out other programs' turns.
    times, cpu_times = [], []
    for it in range(steps + 5):
        t0, c0 = time.perf_counter(), time.thread_time()
        _, x, y = get_batch(train, c["batch"], c["seq_len"])
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if it >= 5:
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.thread_time() - c0)
    ms = 1e3 * statistics.median(times)
    flops = 6.0 * n * c["batch"] * c["seq_len"]
    print("pytorch %s, 1 thread: %d parameters, median step %.2f ms over %d steps (%.1f GFLOP/s counting 6 x "
          "parameters x tokens)" % (torch.__version__, n, ms, steps, flops / ms / 1e6))
    print("pytorch_step_ms %.4f" % ms)
    print("pytorch_step_cpu_ms %.4f" % (1e3 * statistics.median(cpu_times)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=int, nargs="?", const=50, metavar="STEPS")
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--curve", type=int, metavar="ITERS",
                        help="the default run's first ITERS iterations, their losses written to --out")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "09-gpt-curve.txt"))
    parser.add_argument("--data-dir", default=DATA_DIR, help="folder of the prepared train.txt and val.txt")
    args = parser.parse_args()
    DATA_DIR = args.data_dir
    if args.curve is not None:
        if not 1 <= args.curve <= DEFAULT["iters"]:
            parser.error("--curve must be in [1, %d]" % DEFAULT["iters"])
        curve(args.curve, args.out, args.seed)
    elif args.bench:
        bench(args.bench, args.seed)
    elif args.train:
        train_run(QUICK if args.quick else DEFAULT, args.seed)
    else:
        fixture()
