"""Which BLAS library PyTorch's matrix products run on.

Debian's python3-torch calls whatever libblas.so.3 the alternatives system
points at: the reference BLAS (netlib, about 5 GFLOP/s) unless an optimised
one such as OpenBLAS (apt-get install libopenblas0-pthread) is installed.
A speed ratio against the reference BLAS compares against a PyTorch nobody
runs, so the benchmarks print none then.

Import this module before torch: it pins OpenBLAS to one thread.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def blas_library():
    """The BLAS shared library mapped into this process after one product:
    its file name, e.g. 'libopenblasp-r0.3.21.so' or 'libblas.so.3'."""
    import torch
    a = torch.ones(64, 64)
    (a @ a).sum().item()
    names = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            base = os.path.basename(path)
            if "blas" in base.lower() and base not in names:
                names.append(path)
    for path in names:
        if "openblas" in path.lower() or "mkl" in path.lower() or "blis" in path.lower():
            return os.path.basename(path), True
    return (os.path.basename(names[0]) if names else "unknown"), False


def report():
    """Prints 'pytorch_blas <name> <optimised|reference>' for the C++ side."""
    name, optimised = blas_library()
    print("pytorch_blas %s %s" % (name, "optimised" if optimised else "reference"))
    return optimised
