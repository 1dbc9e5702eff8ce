"""Golden values for sa::Generator (tests/common/test_rng.cpp).

Every case starts from torch.manual_seed(seed) unless it is part of the
"seq" stream, which checks that one generator advances exactly as PyTorch's
through a mix of calls. Run with Debian's interpreter, where python3-torch
lives:  /usr/bin/python3 tests/reference/rng.py
"""
import math

import torch

from fixtures import write_fixtures

SEEDS = [0, 1, 42, 1234, 2**32 + 5]  # 2**32 + 5: mt19937 only sees the low 32 bits

# randn sizes around the switch between PyTorch's two normal kernels:
# n < 16 (double Box-Muller, one cached sample), n == 16, multiples of 16,
# and n > 16 not a multiple of 16 (the last 16 are redone from fresh draws).
RANDN_SIZES = [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 40, 48, 100]

# (name, from, to) for Tensor.uniform_. nn.Linear(64, 64) draws its weight
# and bias from U(-1/8, 1/8); 1/sqrt(3) is a bound whose width is not a power
# of two, so the fused multiply-add of PyTorch's kernel shows.
UNIFORM_BOUNDS = [
    ("linear64", -1 / math.sqrt(64), 1 / math.sqrt(64)),
    ("inv_sqrt3", -1 / math.sqrt(3), 1 / math.sqrt(3)),
    ("m2_3", -2.0, 3.0),
]

RANDINT_CASES = [  # (name, low, high); a range of 2**32 or more takes 64-bit draws
    ("0_10", 0, 10),
    ("m5_5", -5, 5),
    ("0_2p33", 0, 2**33),
]


def require_avx2_kernels():
    # normal_ on 16+ floats has one kernel per CPU capability, and they round
    # differently; sa::Generator reproduces the AVX2 one (AVX512 gives the
    # same numbers in 1.13). ATEN_CPU_CAPABILITY=default would write fixtures
    # the C++ side must not match.
    config = torch.__config__.show()
    if "CPU capability usage: AVX2" not in config and "CPU capability usage: AVX512" not in config:
        raise SystemExit("rng.py: PyTorch is not using its AVX2 kernels (is ATEN_CPU_CAPABILITY set?)")


def seeded(seed):
    torch.manual_seed(seed)
    return torch


def main():
    require_avx2_kernels()
    t = {}
    for s in SEEDS:
        sfx = "s%d" % s
        t["rand_n10_" + sfx] = seeded(s).rand(10)
        t["rand_3x4_" + sfx] = seeded(s).rand(3, 4)
        for n in RANDN_SIZES:
            t["randn_n%d_%s" % (n, sfx)] = seeded(s).randn(n)
        t["randn_3x4_" + sfx] = seeded(s).randn(3, 4)
        t["randn_6x8_" + sfx] = seeded(s).randn(6, 8)
        t["normal_n5_mean0.5_std2_" + sfx] = seeded(s).empty(5).normal_(0.5, 2.0)
        t["normal_n37_mean-1_std0.1_" + sfx] = seeded(s).empty(37).normal_(-1.0, 0.1)
        for name, lo, hi in UNIFORM_BOUNDS:
            t["uniform_%s_n50_%s" % (name, sfx)] = seeded(s).empty(50).uniform_(lo, hi)
        for name, lo, hi in RANDINT_CASES:
            t["randint_%s_n20_%s" % (name, sfx)] = seeded(s).randint(lo, hi, (20,))
        t["randperm_n10_" + sfx] = seeded(s).randperm(10)
        t["randperm_n100_" + sfx] = seeded(s).randperm(100)
        # Tensor.random_() on int64 returns random64() modulo 2**63.
        t["random64_low63_n4_" + sfx] = seeded(s).empty(4, dtype=torch.int64).random_()

        # One stream, many calls: the normal cache and the draw counts must
        # carry over exactly. The comments say what each call consumes.
        torch.manual_seed(s)
        t["seq01_randn3_" + sfx] = torch.randn(3)  # 2 pairs, 1 sample left in the cache
        t["seq02_randn3_" + sfx] = torch.randn(3)  # starts with the cached sample
        t["seq03_rand5_" + sfx] = torch.rand(5)
        t["seq04_randn3_" + sfx] = torch.randn(3)  # caches again
        t["seq05_randn20_" + sfx] = torch.randn(20)  # float kernel: cache untouched
        t["seq06_randn1_" + sfx] = torch.randn(1)  # the sample cached by seq04
        t["seq07_randint_0_7_n4_" + sfx] = torch.randint(0, 7, (4,))
        t["seq08_normal_n5_mean2_std0.5_" + sfx] = torch.empty(5).normal_(2.0, 0.5)
        t["seq09_randn17_" + sfx] = torch.randn(17)
        t["seq10_randn2_" + sfx] = torch.randn(2)
        t["seq11_uniform_m2_3_n6_" + sfx] = torch.empty(6).uniform_(-2.0, 3.0)
        t["seq12_randperm9_" + sfx] = torch.randperm(9)
        t["seq13_randn1_" + sfx] = torch.randn(1)

    # The layers of the chapters, in the order they are built.
    for s in [0, 42]:
        torch.manual_seed(s)
        emb = torch.nn.Embedding(5, 64)  # weight ~ N(0, 1): 320 floats
        lin = torch.nn.Linear(64, 64)  # weight, then bias ~ U(-1/8, 1/8)
        t["layers_embedding_weight_s%d" % s] = emb.weight.detach()
        t["layers_linear_weight_s%d" % s] = lin.weight.detach()
        t["layers_linear_bias_s%d" % s] = lin.bias.detach()

    # A fresh torch.Generator() starts from seed 67280421310721. (The global
    # generator of a fresh Python process does not: PyTorch seeds it from
    # the OS's random source.)
    fresh = torch.Generator()
    assert fresh.initial_seed() == 67280421310721
    t["rand_n10_fresh_generator"] = torch.rand(10, generator=fresh)

    # Larger sizes, one seed.
    t["randn_n5000_s0"] = seeded(0).randn(5000)
    t["randperm_n5000_s0"] = seeded(0).randperm(5000)

    write_fixtures(
        "rng.txt",
        t,
        "Outputs of PyTorch's CPU generator (AVX2 kernels) for sa::Generator.\n"
        "Names: <call>_<arguments>_s<seed>; seqNN_* are successive calls after one manual_seed.",
    )


if __name__ == "__main__":
    main()
