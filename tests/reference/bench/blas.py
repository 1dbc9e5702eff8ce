"""Which BLAS library PyTorch's matrix products run on, and its kernels.

Debian's python3-torch calls whatever libblas.so.3 the alternatives system
points at: the reference BLAS (netlib, about 5 GFLOP/s) unless an optimised
one such as OpenBLAS (apt-get install libopenblas0-pthread) is installed.
A speed ratio against the reference BLAS compares against a PyTorch nobody
runs, so the benchmarks print none then.

OpenBLAS picks its kernels for the CPU when it loads. Debian 12's OpenBLAS
(0.3.21) does not know AMD's Zen 4 and Zen 5 and falls back to its AVX2
kernels ("Haswell") there, although those cores run AVX-512. On a Zen 5
core its SkylakeX (AVX-512) kernels did a 1024^3 float product at 96-114
GFLOP/s against 64-72, and chapter 7's PyTorch twin stepped about 9%
faster. The peer should be measured at its best, so on any CPU with the
AVX-512 subsets those kernels need, this module asks OpenBLAS for them
(OPENBLAS_CORETYPE=SkylakeX), even over an OPENBLAS_CORETYPE already in
the environment (some machines set Haswell for every program); report()
says so, and which kernels ran.

Import this module before torch: OpenBLAS reads its settings when it loads.
"""
import ctypes
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The instruction subsets OpenBLAS's SkylakeX kernels use.
SKYLAKEX_FLAGS = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# What the environment asked for, before this module chose ('-': nothing).
ENVIRONMENT_CORETYPE = os.environ.get("OPENBLAS_CORETYPE", "-") or "-"
if SKYLAKEX_FLAGS <= cpu_flags():
    os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"


def mapped_files():
    """(start, end, path) of every file mapped into this process."""
    spans = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[-1].startswith("/"):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                spans.append((start, end, fields[-1]))
    return spans


def sgemm_provider(spans):
    """The file whose sgemm_ torch's products call, or None if that cannot be
    told. Two BLAS libraries can be mapped at once: with LD_LIBRARY_PATH
    pointing at the reference BLAS, libblas.so.3 is netlib's while the
    LAPACK that torch also loads is OpenBLAS's, which brings
    libopenblasp-*.so along. torch calls the sgemm_ its own libraries
    resolve, in their dependency order: dlsym on libtorch_cpu's handle
    follows that order, and the mapping that holds the address names it."""
    torch_cpu = next((path for _, _, path in spans if os.path.basename(path).startswith("libtorch_cpu.so")), None)
    if torch_cpu is None:
        return None
    try:
        address = ctypes.cast(ctypes.CDLL(torch_cpu).sgemm_, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    return next((path for start, end, path in spans if start <= address < end), None)


def is_optimised(path):
    return any(name in path.lower() for name in ("openblas", "mkl", "blis"))


def blas_library():
    """The BLAS shared library mapped into this process after one product:
    its file name, e.g. 'libopenblasp-r0.3.21.so' or 'libblas.so.3', whether
    it is an optimised one, and its full path."""
    import torch
    a = torch.ones(64, 64)
    (a @ a).sum().item()
    spans = mapped_files()
    names = []
    for _, _, path in spans:
        if "blas" in os.path.basename(path).lower() and path not in names:
            names.append(path)
    # The library torch's sgemm_ resolves to, when it is a BLAS library of
    # its own (a torch with MKL linked in has it inside libtorch_cpu: then
    # the libraries mapped are all there is to go by). An OpenBLAS is named
    # by its libopenblas*.so, whose kernels openblas_core asks for.
    provider = sgemm_provider(spans)
    if provider is not None and "blas" in os.path.basename(provider).lower():
        if not is_optimised(provider):
            return os.path.basename(provider), False, provider
        same = [path for path in names if is_optimised(path) and os.path.dirname(path) == os.path.dirname(provider)]
        path = next((p for p in same if "openblas" in os.path.basename(p).lower()), provider)
        return os.path.basename(path), True, path
    for path in names:
        if is_optimised(path):
            return os.path.basename(path), True, path
    return (os.path.basename(names[0]) if names else "unknown"), False, (names[0] if names else None)


def openblas_core(path):
    """The kernels OpenBLAS chose (e.g. 'SkylakeX', 'Haswell'), or '-'."""
    if not path or "openblas" not in path.lower():
        return "-"
    try:
        get = ctypes.CDLL(path).openblas_get_corename
        get.restype = ctypes.c_char_p
        return get().decode()
    except (OSError, AttributeError):
        return "-"


def report():
    """Prints 'pytorch_blas <name> <optimised|reference> <kernels> <asked>'
    for the C++ side. kernels: OpenBLAS's core name ('-' for another
    library); asked: OPENBLAS_CORETYPE as the environment had it ('-' if
    unset)."""
    name, optimised, path = blas_library()
    print("pytorch_blas %s %s %s %s" % (name, "optimised" if optimised else "reference", openblas_core(path),
                                        ENVIRONMENT_CORETYPE))
    return optimised


if __name__ == "__main__":
    # Run alone, it imports torch and prints the line above: the benchmarks'
    # --pytorch asks it before any work (sa/pytorch_peer.hpp, require_pytorch).
    report()
