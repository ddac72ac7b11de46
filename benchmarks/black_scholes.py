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
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "kernels")

WORKER = r'''
import ctypes, hashlib, json, os, sys, time
import numpy as np
system, n, repeats, library = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
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

    scratch = tempfile.mkdtemp(prefix="ppy-bs-")
    library = os.path.join(scratch, "black_scholes.so")
    subprocess.run(["gcc", "-O2", "-ffp-contract=off", "-shared", "-fPIC", "-o", library,
                    os.path.join(KERNELS, "black_scholes.c"), "-lm"], check=True)
    env = dict(os.environ, PPY_CACHE_DIR=os.path.join(scratch, "cache"), PPY_QUIET="1", KERNELS=KERNELS)
    subprocess.run([sys.executable, "-m", "ppy", "build", "--warm", os.path.join(KERNELS, "black_scholes.ppy")],
                   env=env, check=True)
    systems = [("ppy JIT (warm cache)", "ppy", {}), ("C, gcc -O2", "c", {})]
    if args.cpython:
        systems.append(("CPython (PPY_IMPORT=python)", "python", {"PPY_IMPORT": "python"}))
    medians = {name: [] for name, _, _ in systems}
    digest = None
    for _ in range(args.rounds):
        for name, system, extra in systems:
            repeats = 1 if system == "python" else args.repeats
            out = subprocess.run([sys.executable, "-c", WORKER, system, str(args.options), str(repeats), library],
                                 env=dict(env, **extra), capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"{name} failed:\n{out.stderr}")
            import json

            result = json.loads(out.stdout.strip().splitlines()[-1])
            if digest is None:
                digest = result["digest"]
            elif result["digest"] != digest:
                sys.exit(f"{name} disagrees: {result['digest']} vs {digest}")
            medians[name].append(result["median_ms"])
    shutil.rmtree(scratch, ignore_errors=True)
    c = statistics.median(medians["C, gcc -O2"])
    print(f"Black-Scholes, allocate-fill-return, {args.options:,} options: median of {args.rounds} rounds x "
          f"{args.repeats} calls (results bit-identical, digest {digest})")
    for name, _, _ in systems:
        ms = statistics.median(medians[name])
        print(f"  {name:30s} {ms:9.2f} ms  {ms / c:6.2f}x C   (best {min(medians[name]):.2f} ms)")


if __name__ == "__main__":
    main()
