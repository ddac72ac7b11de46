"""The side-by-side run that benchmarks/black_scholes.py and
benchmarks/jacobi.py share: one kernel as ppy machine code (mapped from a warm
cache) and as the same loops in C (gcc -O2, a shared library), optionally as
plain CPython, each system in its own process, in interleaved rounds.

A worker (the caller's script, run with `python -c`) gets its system name
("ppy", "c" or "python"), the number of timed calls, the C library's path and
the caller's own arguments, and prints one JSON line: the median of its calls
in milliseconds and a digest of its results. Every process must print the same
digest before any time is reported.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")


def run(title, kernel, worker, worker_args, rounds, repeats, cpython=False):
    """Builds kernels/<kernel>.c and warms kernels/<kernel>.ppy, runs `worker`
    for each system, `rounds` times interleaved, and prints the table."""
    scratch = tempfile.mkdtemp(prefix=f"ppy-{kernel}-")
    try:
        library = os.path.join(scratch, f"{kernel}.so")
        subprocess.run(["gcc", "-O2", "-ffp-contract=off", "-shared", "-fPIC", "-o", library,
                        os.path.join(KERNELS, f"{kernel}.c"), "-lm"], check=True)
        env = dict(os.environ, PPY_CACHE_DIR=os.path.join(scratch, "cache"), PPY_QUIET="1", KERNELS=KERNELS)
        subprocess.run([sys.executable, "-m", "ppy", "build", "--warm", os.path.join(KERNELS, f"{kernel}.ppy")],
                       env=env, check=True)
        systems = [("ppy JIT (warm cache)", "ppy", {}), ("C, gcc -O2", "c", {})]
        if cpython:
            systems.append(("CPython (PPY_IMPORT=python)", "python", {"PPY_IMPORT": "python"}))
        medians = {name: [] for name, _, _ in systems}
        digest = None
        for _ in range(rounds):
            for name, system, extra in systems:
                calls = 1 if system == "python" else repeats
                out = subprocess.run([sys.executable, "-c", worker, system, str(calls), library, *map(str, worker_args)],
                                     env=dict(env, **extra), capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{name} failed:\n{out.stderr}")
                result = json.loads(out.stdout.strip().splitlines()[-1])
                if digest is None:
                    digest = result["digest"]
                elif result["digest"] != digest:
                    sys.exit(f"{name} disagrees: {result['digest']} vs {digest}")
                medians[name].append(result["median_ms"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    c = statistics.median(medians["C, gcc -O2"])
    print(f"{title}: median of {rounds} rounds x {repeats} calls (results bit-identical, digest {digest})")
    for name, _, _ in systems:
        ms = statistics.median(medians[name])
        print(f"  {name:30s} {ms:9.2f} ms  {ms / c:6.2f}x C   (best {min(medians[name]):.2f} ms)")
