"""Side-by-side timing of the features kernel (standardize + bucketize, 20,000 x 16).

    python benchmarks/compare.py [--repeats N]

Each system runs in its own process, one after the other, in this one run: ppy's
interpreter (PPY_JIT=0) and CPython on the same .ppy files (PPY_IMPORT=python).
Outputs are checked to agree before any time is reported. Medians are quoted;
ratios are medians divided. These machines are shared and noisy: compare
numbers from one run only.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

SYSTEMS = [
    ("CPython 3.11 (PPY_IMPORT=python)", {"PPY_IMPORT": "python"}),
    ("ppy interpreter (PPY_JIT=0)", {"PPY_JIT": "0"}),
]


def run(env_overrides, repeats):
    env = dict(os.environ)
    env.update(env_overrides)
    env["REPEATS"] = str(repeats)
    env.setdefault("PPY_QUIET", "1")
    result = subprocess.run([sys.executable, os.path.join(HERE, "kernels", "time_features.py")], env=env,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    # A first ppy run builds the cache, so that no timed process compiles.
    run({"PPY_JIT": "0"}, 1)
    results = [(name, run(env, args.repeats)) for name, env in SYSTEMS]
    reference = results[0][1]
    for name, result in results:
        same = (result["checksum"], result["outside"], result["counts"]) == (
            reference["checksum"], reference["outside"], reference["counts"])
        if not same:
            sys.exit(f"{name} disagrees with CPython: {result} vs {reference}")
    baseline = reference["median_ms"]
    print(f"features kernel, 20,000 x 16, median of {args.repeats} runs "
          f"(checksum {reference['checksum']}, outside {reference['outside']})")
    for name, result in results:
        print(f"  {name:38s} {result['median_ms']:9.2f} ms   (min {result['min_ms']:.2f}, "
              f"max {result['max_ms']:.2f})   {baseline / result['median_ms']:6.1f}x CPython")


if __name__ == "__main__":
    main()
