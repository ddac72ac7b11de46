"""Black-Scholes, allocate-fill-return, 1,000,000 options: ppy's machine code
against the same loop in C (gcc -O2), side by side in one run.

    python benchmarks/black_scholes.py [--options N] [--rounds R] [--repeats K]

Each system runs in its own process, R interleaved rounds of K timed calls; a
figure is the median over rounds of the per-process medians. The C loop
allocates its two result arrays with numpy too (outside the timed loop's C
code, inside the timed call), so both time the same work: allocate two arrays
of N doubles and fill them. Results must be bit-identical before any time is
reported (the same libm calls in the same order; no FMA contraction in C).
"""

import argparse

import against_c

WORKER = r'''
import ctypes, hashlib, json, os, sys, time
import numpy as np
system, repeats, library, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = np.random.default_rng(20261130)
S = rng.uniform(10.0, 100.0, n)
K = rng.uniform(10.0, 100.0, n)
T = rng.uniform(0.1, 2.0, n)
r, v = 0.02, 0.3
if system == "c":
    lib = ctypes.CDLL(library)
    double_p = ctypes.POINTER(ctypes.c_double)
    lib.black_scholes.argtypes = [double_p, double_p, double_p, ctypes.c_int64, ctypes.c_double, ctypes.c_double,
                                  double_p, double_p]
    def kernel(S, K, T, r, v):
        calls, puts = np.empty(len(S)), np.empty(len(S))
        p = lambda a: a.ctypes.data_as(double_p)
        lib.black_scholes(p(S), p(K), p(T), len(S), r, v, p(calls), p(puts))
        return calls, puts
else:
    import ppy
    sys.path.insert(0, os.environ["KERNELS"])
    from black_scholes import black_scholes as kernel
    if system == "ppy":
        assert ppy.tier(kernel) == "jit", ppy.tier(kernel)
times = []
for _ in range(repeats):
    start = time.perf_counter()
    calls, puts = kernel(S, K, T, r, v)
    times.append((time.perf_counter() - start) * 1000)
digest = hashlib.sha256(calls.tobytes() + puts.tobytes()).hexdigest()[:16]
print(json.dumps({"median_ms": sorted(times)[len(times) // 2], "digest": digest}))
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--options", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cpython", action="store_true", help="also time plain CPython (slow)")
    args = parser.parse_args()
    against_c.run(f"Black-Scholes, allocate-fill-return, {args.options:,} options", "black_scholes", WORKER,
                  [args.options], args.rounds, args.repeats, args.cpython)


if __name__ == "__main__":
    main()
