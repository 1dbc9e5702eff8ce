"""Writes golden values in the format tests/support/fixtures.hpp reads.

    @ <name> <f32|i64> <dim0> <dim1> ...
    <values>

float32 values get 9 significant digits, enough to round-trip every float32
exactly, so the C++ side can compare bit for bit where that is the claim.
"""
import math
import os
from types import SimpleNamespace

import torch
import torch.nn as nn

FIXTURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")


def _format(value, is_float):
    if not is_float:
        return str(int(value))
    return "%.9g" % value


def write_fixtures(file_name, tensors, comment=""):
    """tensors: dict name -> torch.Tensor (float32 or int64), written in order."""
    path = os.path.normpath(os.path.join(FIXTURES_DIR, file_name))
    with open(path, "w") as out:
        out.write("# Made by tests/reference/%s with PyTorch %s. Do not edit by hand.\n"
                  % (os.path.basename(__import__("__main__").__file__), torch.__version__))
        for line in comment.strip().splitlines():
            out.write("# %s\n" % line)
        for name, t in tensors.items():
            t = t.detach().cpu().contiguous()
            if t.dtype == torch.float32:
                is_float, dtype = True, "f32"
            elif t.dtype == torch.int64:
                is_float, dtype = False, "i64"
            else:
                raise TypeError("%s: dtype %s not supported" % (name, t.dtype))
            dims = " ".join(str(d) for d in t.shape)
            out.write("@ %s %s %s\n" % (name, dtype, dims))
            values = t.reshape(-1).tolist()
            for start in range(0, len(values), 8):
                out.write(" ".join(_format(v, is_float) for v in values[start:start + 8]) + "\n")
    print("wrote", os.path.relpath(path))


def sinusoidal(seq_len, d_model):
    """Chapter 1's positional encoding, computed in float64 and rounded once:
    the exact value the C++ aims for. Shared by every chapter's script."""
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    for pos in range(seq_len):
        for j in range(d_model):
            angle = pos / (10000.0 ** ((j - j % 2) / d_model))
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe.float()


def running_example(seed=42, text="the cat sat on the mat", d_model=64, d_k=64):
    """The book's running example, drawn as chapter 1's program draws it:
    torch.manual_seed(seed), nn.Embedding(vocab, d_model), then W_q, W_k, W_v
    as nn.Linear(d_model, d_k). Later draws continue on the same generator,
    as in the C++ programs. Returns words, vocab, ids, embedding, W_q, W_k,
    W_v, E, PE, X, Q, K, V."""
    torch.manual_seed(seed)
    r = SimpleNamespace()
    r.words = text.split()
    r.vocab = list(dict.fromkeys(r.words))  # first-appearance order
    r.ids = torch.tensor([r.vocab.index(w) for w in r.words])
    r.embedding = nn.Embedding(len(r.vocab), d_model)  # weight ~ N(0, 1)
    r.W_q = nn.Linear(d_model, d_k)
    r.W_k = nn.Linear(d_model, d_k)
    r.W_v = nn.Linear(d_model, d_k)
    with torch.no_grad():
        r.E = r.embedding(r.ids)
        r.PE = sinusoidal(len(r.words), d_model)
        r.X = r.E + r.PE
        r.Q, r.K, r.V = r.W_q(r.X), r.W_k(r.X), r.W_v(r.X)
    return r
