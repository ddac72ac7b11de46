"""What ppy adds to start-up, measured side by side in one run.

    python benchmarks/startup.py [--runs N]

1. `python -c pass` against `python -c "import ppy"`: whole processes, median of
   N runs each, interleaved so that machine noise hits both alike.
2. `import ppy` alone, from `python -X importtime` (cumulative microseconds).
3. Importing examples/31_torchrun/features.ppy from a warm cache, timed inside
   the process (median of N fresh processes): the first .ppy import of a
   process, which also loads ppy's VM extension, and then a second module
   (benchmarks/kernels/dot.ppy). The modules a kernel imports itself (array,
   math) are imported first, so that only ppy's work is timed.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "31_torchrun")

WARM_IMPORT = """
import array, math, sys, time
import ppy
sys.path.insert(0, sys.argv[1])  # where a script keeps its kernels
started = time.perf_counter()
import features
first = time.perf_counter()
import dot
second = time.perf_counter()
print((first - started) * 1e6, (second - first) * 1e6)
"""


def process_time(args, env):
    started = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def importtime_of_ppy(env):
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import ppy"], env=env, capture_output=True,
                            text=True, check=True)
    for line in result.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "ppy":
            return int(parts[1])
    raise RuntimeError(result.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    env = dict(os.environ, PPY_QUIET="1")
    with tempfile.TemporaryDirectory() as cache:
        env["PPY_CACHE_DIR"] = cache
        plain, with_ppy = [], []
        for _ in range(args.runs):
            plain.append(process_time([sys.executable, "-c", "pass"], env))
            with_ppy.append(process_time([sys.executable, "-c", "import ppy"], env))
        importtimes = [importtime_of_ppy(env) for _ in range(args.runs)]
        kernels = os.path.join(HERE, "kernels")
        subprocess.run([sys.executable, "-c", WARM_IMPORT, kernels], env=env, cwd=EXAMPLE, check=True,
                       stdout=subprocess.DEVNULL)
        first, second = [], []
        for _ in range(args.runs):
            result = subprocess.run([sys.executable, "-c", WARM_IMPORT, kernels], env=env, cwd=EXAMPLE,
                                    capture_output=True, text=True, check=True)
            times = [float(t) for t in result.stdout.split()]
            first.append(times[0])
            second.append(times[1])
    p, q = statistics.median(plain) * 1000, statistics.median(with_ppy) * 1000
    print(f"start-up, median of {args.runs} runs")
    print(f"  python -c pass                     {p:8.2f} ms")
    print(f"  python -c 'import ppy'             {q:8.2f} ms   (+{q - p:.2f} ms)")
    print(f"  import ppy (-X importtime)         {statistics.median(importtimes) / 1000:8.2f} ms")
    print(f"  import features (warm cache, first .ppy module, VM extension included)"
          f"  {statistics.median(first) / 1000:6.2f} ms")
    print(f"  import dot (warm cache, a further .ppy module)"
          f"{'':26s}{statistics.median(second) / 1000:6.2f} ms")


if __name__ == "__main__":
    main()
