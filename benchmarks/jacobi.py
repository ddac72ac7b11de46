"""A 2-D Jacobi stencil, numpy 512x512, 100 sweeps: ppy's machine code
(Buffer[float, 2], a[i, j]) against the same loops in C (gcc -O2), side by
side in one run.

    python benchmarks/jacobi.py [--size N] [--sweeps S] [--rounds R] [--repeats K]

Each system runs in its own process, R interleaved rounds of K timed calls; a
figure is the median over rounds of the per-process medians. Both start from
the same grid and must end bit-identical (the same additions in the same
order; no FMA contraction in C) before any time is reported.
"""

import argparse

import against_c

WORKER = r'''
import ctypes, hashlib, json, os, sys, time
import numpy as np
system, repeats, library, n, sweeps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
start_grid = np.random.default_rng(20261201).uniform(-1.0, 1.0, (n, n))
if system == "c":
    lib = ctypes.CDLL(library)
    double_p = ctypes.POINTER(ctypes.c_double)
    lib.jacobi.argtypes = [double_p, double_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    def kernel(a, b, sweeps):
        p = lambda x: x.ctypes.data_as(double_p)
        lib.jacobi(p(a), p(b), a.shape[0], a.shape[1], sweeps)
else:
    import ppy
    sys.path.insert(0, os.environ["KERNELS"])
    from jacobi import jacobi as kernel
    if system == "ppy":
        import jacobi as module
        assert ppy.tier(module.sweep) == "jit", ppy.tier(module.sweep)
times = []
for _ in range(repeats):
    a = start_grid.copy()
    b = a.copy()
    start = time.perf_counter()
    kernel(a, b, sweeps)
    times.append((time.perf_counter() - start) * 1000)
digest = hashlib.sha256(a.tobytes()).hexdigest()[:16]
print(json.dumps({"median_ms": sorted(times)[len(times) // 2], "digest": digest}))
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--sweeps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpython", action="store_true", help="also time plain CPython (slow)")
    args = parser.parse_args()
    against_c.run(f"Jacobi, {args.size}x{args.size}, {args.sweeps} sweeps", "jacobi", WORKER, [args.size, args.sweeps],
                  args.rounds, args.repeats, args.cpython)


if __name__ == "__main__":
    main()
