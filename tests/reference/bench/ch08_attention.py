"""PyTorch's peer of chapter 8's benchmark (./book bench 8 --pytorch).

For each T: the median time of matmul, softmax, matmul (what
F.scaled_dot_product_attention does in PyTorch 1.13's math path) on one
thread, float32, d_k columns, and the extra resident memory the call needed
beyond Q, K, V and the output (the peak resident size after resetting it
through /proc/self/clear_refs, as the C++ side measures).

Prints one line per T:  pytorch T ms extra_bytes
"""
import argparse
import math
import time

import blas  # before torch: one OpenBLAS thread

import torch


def rss_bytes(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def attention(Q, K, V):
    return torch.softmax((Q @ K.transpose(-2, -1)) / math.sqrt(Q.shape[-1]), dim=-1) @ V


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--d-k", type=int, default=64)
    parser.add_argument("--budget", type=float, default=0.3, help="seconds of timing per size (at least 3 runs)")
    parser.add_argument("T", type=int, nargs="+")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    blas.report()
    with torch.no_grad():
        for T in args.T:
            Q, K, V = (torch.randn(T, args.d_k) for _ in range(3))
            attention(Q, K, V)  # warm-up
            base = rss_bytes("VmRSS")
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            out = attention(Q, K, V)
            extra = max(0, rss_bytes("VmHWM") - base - out.numel() * 4)
            del out
            times = []
            start = time.perf_counter()
            while len(times) < 3 or (time.perf_counter() - start < args.budget and len(times) < 50):
                t0 = time.perf_counter()
                attention(Q, K, V)
                times.append(time.perf_counter() - t0)
            times.sort()
            print("pytorch %d %.4f %d" % (T, 1e3 * times[len(times) // 2], extra), flush=True)


if __name__ == "__main__":
    main()
