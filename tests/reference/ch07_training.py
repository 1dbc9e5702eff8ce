"""Golden values for chapter 7 (training), made with PyTorch: the C++ model's twin.

The model is seed 004's TinyTransformer (EinsumAttention with W_q, W_k, W_v,
W_o drawn as randn * 0.02, pre-norm blocks, nn.GELU(), final LayerNorm,
linear head), the task is its sequence reversal, the optimizer
torch.optim.Adam. With the same seed, the C++ chapter draws the same initial
weights, the same data and the same batch order.

    /usr/bin/python3 ch07_training.py            write tests/fixtures/07-training.txt
    /usr/bin/python3 ch07_training.py --bench    time one training step (one thread)
    /usr/bin/python3 ch07_training.py --train E  train the full task E epochs, print each
    /usr/bin/python3 ch07_training.py --load build/checkpoints/corpus-causal.safetensors \
        --text "the cat sat on the mat"         load a checkpoint the C++ chapter saved
                                                and print its logits and predictions

The fixture: every layer whose backward is an exercise checked against
autograd on small inputs (LayerNorm, causal multi-head attention,
cross-entropy with ignore_index, Adam), and a small whole model (d_model 16,
2 heads, 2 layers, batch 4, llm.c's test_gpt2 is the pattern): its initial
parameters, the data and batch order, the logits, loss and every parameter
gradient of the first batch (with the causal mask, and again without a mask:
the bidirectional model), the losses of the first 10 Adam steps and the
parameters after them. Attention dropout (training only): the attention
layer with p = 0.25 on the weights, and a model with p = 0.1 through two
Adam steps (loss and every gradient of each) and its evaluation logits.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import zlib

if "--bench" in sys.argv[1:]:
    # The benchmark's BLAS settings (one thread, its best kernels) must be in
    # place before numpy or torch loads OpenBLAS: tests/reference/bench/blas.py.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
    import blas

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

from fixtures import write_fixtures

PAD, SEP = 0, 1


# --- seed 004's model ---------------------------------------------------------
class EinsumAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.dropout = dropout  # on the weights, in training only (the corpus models use 0.1)
        self.d_k = d_model // num_heads
        self.W_q = nn.Parameter(torch.randn(d_model, num_heads, self.d_k) * 0.02)
        self.W_k = nn.Parameter(torch.randn(d_model, num_heads, self.d_k) * 0.02)
        self.W_v = nn.Parameter(torch.randn(d_model, num_heads, self.d_k) * 0.02)
        self.W_o = nn.Parameter(torch.randn(num_heads, self.d_k, d_model) * 0.02)

    def forward(self, x, mask=None):
        Q = torch.einsum('bsm, mhd -> bshd', x, self.W_q)
        K = torch.einsum('bsm, mhd -> bshd', x, self.W_k)
        V = torch.einsum('bsm, mhd -> bshd', x, self.W_v)
        scores = torch.einsum('bshd, bthd -> bhst', Q, K) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(0).unsqueeze(0), float('-inf'))
        weights = F.softmax(scores, dim=-1)
        dropped = F.dropout(weights, self.dropout, self.training)  # p = 0: the identity, no draws
        attended = torch.einsum('bhst, bthd -> bshd', dropped, V)
        return torch.einsum('bshd, hdm -> bsm', attended, self.W_o), weights


class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff=None, dropout=0.0):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.attention = EinsumAttention(d_model, num_heads, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x, mask=None):
        attn_out, weights = self.attention(self.norm1(x), mask)
        x = x + attn_out
        x = x + self.ffn(self.norm2(x))
        return x, weights


class TinyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, num_layers, max_seq_len, d_ff=None, dropout=0.0):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_seq_len, d_model)
        self.layers = nn.ModuleList([TransformerBlock(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, x, mask=None):
        positions = torch.arange(x.shape[1]).unsqueeze(0)
        x = self.token_emb(x) + self.pos_emb(positions)
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask)
            all_weights.append(weights)
        return self.head(self.norm(x)), all_weights


def create_causal_mask(n):
    return torch.triu(torch.ones(n, n), diagonal=1).bool()  # True = blocked


def generate_reversal_data(num_samples, seq_len, vocab_size):
    data = []
    for _ in range(num_samples):
        seq = torch.randint(2, vocab_size, (seq_len,))
        data.append(torch.cat([seq, torch.tensor([SEP]), seq.flip(0)]))
    return torch.stack(data)


def make_model(vocab, digits, d_model, heads, layers, dropout=0.0):
    return TinyTransformer(vocab, d_model, heads, layers, max_seq_len=2 * digits + 1, dropout=dropout)


def batch_loss(model, batch, digits, mask):
    """The loss: cross-entropy only on the reversed half."""
    x, y = batch[:, :-1], batch[:, 1:]
    logits, _ = model(x, mask=mask)
    vocab = logits.shape[-1]
    loss = F.cross_entropy(logits[:, digits:, :].reshape(-1, vocab), y[:, digits:].reshape(-1))
    return loss, logits


def cxx_layout(model, grads=False):
    """Every parameter (or its gradient) under the C++ name and layout: W as (d_in, d_out)."""
    def get(p):
        return (p.grad if grads else p).detach().clone()
    d = model.token_emb.weight.shape[1]
    t = {"tok": get(model.token_emb.weight), "pos": get(model.pos_emb.weight)}
    for l, blk in enumerate(model.layers):
        a = blk.attention
        pre = "blocks.%d." % l
        t[pre + "qkv.W"] = torch.cat([get(a.W_q).reshape(d, d), get(a.W_k).reshape(d, d),
                                      get(a.W_v).reshape(d, d)], dim=1)
        t[pre + "W_o.W"] = get(a.W_o).reshape(d, d)
        t[pre + "ln1.gamma"], t[pre + "ln1.beta"] = get(blk.norm1.weight), get(blk.norm1.bias)
        t[pre + "ln2.gamma"], t[pre + "ln2.beta"] = get(blk.norm2.weight), get(blk.norm2.bias)
        t[pre + "fc1.W"], t[pre + "fc1.b"] = get(blk.ffn[0].weight).t().contiguous(), get(blk.ffn[0].bias)
        t[pre + "fc2.W"], t[pre + "fc2.b"] = get(blk.ffn[2].weight).t().contiguous(), get(blk.ffn[2].bias)
    t["ln_f.gamma"], t["ln_f.beta"] = get(model.norm.weight), get(model.norm.bias)
    t["head.W"], t["head.b"] = get(model.head.weight).t().contiguous(), get(model.head.bias)
    return t


# --- a checkpoint saved by the C++ chapter ---------------------------------------
def read_safetensors(path):
    """The tensors and the metadata of a safetensors file, read by hand (Debian has no
    safetensors package): an 8-byte little-endian header length, the JSON header, then
    the raw little-endian data, each tensor at its data_offsets."""
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", (name, t["dtype"])
        begin, end = t["data_offsets"]
        values = np.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=begin)
        tensors[name] = torch.from_numpy(values.astype(np.float32)).reshape(t["shape"])
    return tensors, metadata, data


def load_checkpoint(path):
    """The C++ chapter's checkpoint as this file's TinyTransformer: the book keeps a
    Linear's W as (d_in, d_out), nn.Linear the transpose; W_q | W_k | W_v are the
    columns of qkv.W, each (d_model, heads, d_k) as EinsumAttention holds it."""
    t, meta, data = read_safetensors(path)
    assert meta.get("format") == "sa07-checkpoint", "not a chapter 7 checkpoint"
    # The two CRC-32s (zlib's): the tensors' bytes in the order the C++ program
    # wrote them (the whole data section), and every other metadata entry.
    assert "%08x" % zlib.crc32(data) == meta["crc32"], "the data's CRC-32 does not match"
    text = "".join("%s=%s\n" % (k, v) for k, v in sorted(meta.items()) if k != "metadata_crc32")
    assert "%08x" % zlib.crc32(text.encode()) == meta["metadata_crc32"], "the metadata's CRC-32 does not match"
    cfg = {k: int(meta[k]) for k in ("vocab", "max_seq", "d_model", "n_heads", "n_layers", "d_ff")}
    d, h = cfg["d_model"], cfg["n_heads"]
    model = TinyTransformer(cfg["vocab"], d, h, cfg["n_layers"], cfg["max_seq"], cfg["d_ff"])
    with torch.no_grad():
        model.token_emb.weight.copy_(t["tok"])
        model.pos_emb.weight.copy_(t["pos"])
        for l, blk in enumerate(model.layers):
            pre = "blocks.%d." % l
            a = blk.attention
            for k, W in enumerate((a.W_q, a.W_k, a.W_v)):
                W.copy_(t[pre + "qkv.W"][:, k * d:(k + 1) * d].reshape(d, h, d // h))
            a.W_o.copy_(t[pre + "W_o.W"].reshape(h, d // h, d))
            blk.norm1.weight.copy_(t[pre + "ln1.gamma"]), blk.norm1.bias.copy_(t[pre + "ln1.beta"])
            blk.norm2.weight.copy_(t[pre + "ln2.gamma"]), blk.norm2.bias.copy_(t[pre + "ln2.beta"])
            blk.ffn[0].weight.copy_(t[pre + "fc1.W"].t()), blk.ffn[0].bias.copy_(t[pre + "fc1.b"])
            blk.ffn[2].weight.copy_(t[pre + "fc2.W"].t()), blk.ffn[2].bias.copy_(t[pre + "fc2.b"])
        model.norm.weight.copy_(t["ln_f.gamma"]), model.norm.bias.copy_(t["ln_f.beta"])
        model.head.weight.copy_(t["head.W"].t()), model.head.bias.copy_(t["head.b"])
    return model, meta["tokens"].split(" "), meta["causal"] == "true", meta


def show_checkpoint(path, text):
    """The logits of a text, and the next token after every position, as
    07-training-analyze prints them (its step 2)."""
    model, tokens, causal, meta = load_checkpoint(path)
    lowered = [w.lower() for w in tokens]
    unknown = [w for w in text.lower().split() if w not in lowered]
    if unknown or not text.split():
        sys.exit("ch07_training.py: unknown token '%s'" % unknown[0] if unknown else "ch07_training.py: no text")
    ids = [lowered.index(w) for w in text.lower().split()]
    n = len(ids)
    if n > int(meta["max_seq"]):
        sys.exit("ch07_training.py: the text has %d tokens, but the model knows only %s positions" % (n, meta["max_seq"]))
    print("%s: vocabulary %s, %s positions, d_model %s, %s layer(s) of %s head(s), d_ff %s, %s" % (
        path, meta["vocab"], meta["max_seq"], meta["d_model"], meta["n_layers"], meta["n_heads"], meta["d_ff"],
        "causal" if causal else "bidirectional"))
    print("  both CRC-32s match; note: %s" % meta.get("note", ""))
    with torch.no_grad():
        logits, _ = model(torch.tensor([ids]), mask=create_causal_mask(n) if causal else None)
    logits = logits[0]
    print("logits (%d positions x %d tokens), the first 6 tokens:" % tuple(logits.shape))
    print("  %-8s" % "" + "".join("%10s" % w for w in tokens[:6]))
    for i in range(n):
        print("  %-8s" % tokens[ids[i]] + "".join("%10.4f" % x for x in logits[i, :6].tolist()))
    prefixes = ["'%s'" % " ".join(tokens[j] for j in ids[:i + 1]) for i in range(n)]
    width = max(len(p) for p in prefixes)
    p = torch.softmax(logits, dim=-1)
    for i in range(n):
        best = int(logits[i].argmax())
        follows = "   (the text's next token)" if i + 1 < n and best == ids[i + 1] else ""
        print("  after %-*s -> %-8s p = %.2f%s" % (width, prefixes[i], tokens[best], p[i, best].item(), follows))
    if os.environ.get("SA_LOGITS_OUT"):  # every logit, for comparing with the C++ program
        np.savetxt(os.environ["SA_LOGITS_OUT"], logits.numpy(), fmt="%.9g")


# --- fixtures -------------------------------------------------------------------
def layer_fixtures(out):
    # LayerNorm forward and backward on random rows (gamma, beta not at their init).
    torch.manual_seed(11)
    X = (torch.randn(5, 7) * 2 + 1).requires_grad_()
    ln = nn.LayerNorm(7)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(7))
        ln.bias.copy_(torch.randn(7))
    Y = ln(X)
    dY = torch.randn(5, 7)
    Y.backward(dY)
    out.update({"ln.X": X, "ln.gamma": ln.weight, "ln.beta": ln.bias, "ln.Y": Y, "ln.dY": dY,
                "ln.dX": X.grad, "ln.dgamma": ln.weight.grad, "ln.dbeta": ln.bias.grad})

    # Causal multi-head attention on a QKV matrix: batch 2, seq 5, 2 heads, d_k 3.
    torch.manual_seed(12)
    batch, seq, heads, d_k = 2, 5, 2, 3
    d = heads * d_k
    QKV = torch.randn(batch * seq, 3 * d).requires_grad_()
    q, k, v = QKV.view(batch, seq, 3, heads, d_k).permute(2, 0, 3, 1, 4)  # each (batch, heads, seq, d_k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    scores = scores.masked_fill(create_causal_mask(seq), float('-inf'))
    P = F.softmax(scores, dim=-1)
    O = (P @ v).transpose(1, 2).reshape(batch * seq, d)
    dO = torch.randn(batch * seq, d)
    O.backward(dO)
    out.update({"att.QKV": QKV, "att.P": P.reshape(batch * heads * seq, seq), "att.O": O, "att.dO": dO,
                "att.dQKV": QKV.grad})

    # The same attention with dropout p = 0.25 on the weights (training):
    # O = dropout(P) V. The draws come from seed 16, taken right before the
    # dropout, so the C++ test draws them from Generator(16).
    torch.manual_seed(15)
    QKV = torch.randn(batch * seq, 3 * d).requires_grad_()
    q, k, v = QKV.view(batch, seq, 3, heads, d_k).permute(2, 0, 3, 1, 4)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(create_causal_mask(seq), float('-inf'))
    P = F.softmax(scores, dim=-1)
    dO = torch.randn(batch * seq, d)
    torch.manual_seed(16)
    P_drop = F.dropout(P, 0.25, training=True)
    O = (P_drop @ v).transpose(1, 2).reshape(batch * seq, d)
    O.backward(dO)
    out.update({"attd.QKV": QKV, "attd.P_drop": P_drop.reshape(batch * heads * seq, seq), "attd.O": O,
                "attd.dO": dO, "attd.dQKV": QKV.grad})

    # Cross-entropy with ignored rows (ignore_index -100, PyTorch's default).
    torch.manual_seed(13)
    logits = (torch.randn(6, 5) * 2).requires_grad_()
    targets = torch.tensor([3, -100, 0, 4, -100, 1])
    loss = F.cross_entropy(logits, targets)
    loss.backward()
    out.update({"ce.logits": logits, "ce.targets": targets, "ce.loss": loss.reshape(1), "ce.dlogits": logits.grad})

    # Three steps of torch.optim.Adam (defaults but lr) on one tensor, given gradients.
    torch.manual_seed(14)
    p = nn.Parameter(torch.randn(3, 4))
    out["adam.p0"] = p.detach().clone()
    opt = torch.optim.Adam([p], lr=0.01)
    for step in range(1, 4):
        g = torch.randn(3, 4) * (0.1 if step == 2 else 1.0)
        g[0, 0] = 0.0 if step == 1 else g[0, 0]   # a zero gradient: the update must be 0, not NaN
        p.grad = g
        opt.step()
        out["adam.g%d" % step] = g
        out["adam.p%d" % step] = p.detach().clone()


def model_fixtures(out):
    seed, vocab, digits, d_model, heads, layers, batch_size, samples = 7, 16, 6, 16, 2, 2, 4, 40
    torch.manual_seed(seed)
    model = make_model(vocab, digits, d_model, heads, layers)
    out["model.config"] = torch.tensor([seed, vocab, digits, d_model, heads, layers, batch_size, samples])
    for name, t in cxx_layout(model).items():
        out["init." + name] = t
    data = generate_reversal_data(samples, digits, vocab)
    perm = torch.randperm(samples)
    out["data"], out["perm"] = data, perm
    mask = create_causal_mask(2 * digits)
    # The same initial model without a mask (bidirectional, the C++
    # ModelConfig::causal = false) on the first batch: logits, loss and
    # every gradient. No random draw happens here, so what follows is
    # unchanged.
    loss, logits = batch_loss(model, data[perm[:batch_size]], digits, None)
    loss.backward()
    out["bidir.logits"] = logits.reshape(-1, vocab)
    out["bidir.loss"] = loss.detach().reshape(1)
    for name, t in cxx_layout(model, grads=True).items():
        out["bidir.grad." + name] = t
    model.zero_grad()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    losses = []
    for step in range(10):
        batch = data[perm[step * batch_size:(step + 1) * batch_size]]
        loss, logits = batch_loss(model, batch, digits, mask)
        opt.zero_grad()
        loss.backward()
        if step == 0:
            out["step0.logits"] = logits.reshape(-1, vocab)
            out["step0.loss"] = loss.detach().reshape(1)
            for name, t in cxx_layout(model, grads=True).items():
                out["grad." + name] = t
        opt.step()
        losses.append(loss.item())
    out["losses"] = torch.tensor(losses)
    for name, t in cxx_layout(model).items():
        out["after10." + name] = t


def dropout_model_fixtures(out):
    """A model trained with attention dropout p = 0.1: two training steps.

    Seed 21, the model of model_fixtures (d_model 16, 2 heads, 2 layers),
    8 reversal samples, steps on samples 0-3 then 4-7 (no shuffle). Each
    forward draws layer 0's mask, then layer 1's, from the global generator
    right after the data, so the C++ model drawing from the same Generator
    must drop the same weights, and the second step checks that the stream
    goes on in the same order. Then model.eval(): the logits of the first
    batch without dropout.
    """
    seed, vocab, digits, d_model, heads, layers, p = 21, 16, 6, 16, 2, 2, 0.1
    torch.manual_seed(seed)
    model = make_model(vocab, digits, d_model, heads, layers, dropout=p)
    data = generate_reversal_data(8, digits, vocab)
    out["drop.config"] = torch.tensor([seed, vocab, digits, d_model, heads, layers])
    out["drop.data"] = data
    mask = create_causal_mask(2 * digits)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    model.train()
    for step in range(2):
        loss, logits = batch_loss(model, data[step * 4:(step + 1) * 4], digits, mask)
        opt.zero_grad()
        loss.backward()
        out["drop.step%d.loss" % step] = loss.detach().reshape(1)
        for name, t in cxx_layout(model, grads=True).items():
            out["drop.step%d.grad.%s" % (step, name)] = t
        opt.step()
    model.eval()
    with torch.no_grad():
        logits, _ = model(data[:4, :-1], mask=mask)
    out["drop.eval.logits"] = logits.reshape(-1, vocab)


# --- the full task: timing and a training run ------------------------------------
def full_setup(seed=42):
    torch.manual_seed(seed)
    model = make_model(16, 6, 32, 4, 2)
    train = generate_reversal_data(5000, 6, 16)
    test = generate_reversal_data(500, 6, 16)
    return model, train, test, create_causal_mask(12)


def bench(steps):
    # Which BLAS torch's products run on: the C++ benchmark prints a ratio
    # only against an optimised one (blas was imported before torch, above).
    blas.report()
    torch.set_num_threads(1)
    model, train, _, mask = full_setup()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    times = []
    for step in range(steps + 5):
        batch = train[(step * 128) % 4992:(step * 128) % 4992 + 128]
        t0 = time.perf_counter()
        loss, _ = batch_loss(model, batch, 6, mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 5:  # warm-up steps excluded
            times.append(time.perf_counter() - t0)
    print("pytorch %s, 1 thread: median step %.3f ms over %d steps" %
          (torch.__version__, 1e3 * statistics.median(times), steps))
    print("pytorch_step_ms %.4f" % (1e3 * statistics.median(times)))


def train(epochs):
    torch.set_num_threads(1)
    model, train, test, mask = full_setup()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(train.size(0))
        total, batches, correct, counted = 0.0, 0, 0, 0
        for i in range(0, train.size(0), 128):
            batch = train[perm[i:i + 128]]
            loss, logits = batch_loss(model, batch, 6, mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, batches = total + loss.item(), batches + 1
            correct += (logits[:, 6:].argmax(-1) == batch[:, 7:]).sum().item()
            counted += batch[:, 7:].numel()
        with torch.no_grad():
            logits, _ = model(test[:, :-1], mask=mask)
            held = (logits[:, 6:].argmax(-1) == test[:, 7:]).float().mean().item()
        print("epoch %3d  loss %.4f  train %6.2f%%  held-out %6.2f%%  %6.1f s" %
              (epoch, total / batches, 100.0 * correct / counted, 100.0 * held, time.perf_counter() - start))
        sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=int, nargs="?", const=40, metavar="STEPS")
    parser.add_argument("--train", type=int, metavar="EPOCHS")
    parser.add_argument("--load", metavar="CHECKPOINT", help="a .safetensors file the C++ chapter saved")
    parser.add_argument("--text", default="the cat sat on the mat", help="with --load: the text to run")
    args = parser.parse_args()
    if args.load:
        show_checkpoint(args.load, args.text)
    elif args.bench:
        bench(args.bench)
    elif args.train:
        train(args.train)
    else:
        out = {}
        layer_fixtures(out)
        model_fixtures(out)
        dropout_model_fixtures(out)
        write_fixtures("07-training.txt", out, __doc__.split("\n\n")[3])
