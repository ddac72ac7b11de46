"""Times examples/31_torchrun/features.ppy's kernels in this process.

Prints one JSON line: the median, min and max of REPEATS runs of standardize +
bucketize over ROWS x 16 normally distributed values, and the outputs (which
compare.py checks agree across every system). How the kernels run is up to the
environment: PPY_IMPORT=python, PPY_JIT=0, ...
"""

import array
import json
import os
import random
import statistics
import sys
import time

ROWS = int(os.environ.get("ROWS", "20000"))
COLS = 16
REPEATS = int(os.environ.get("REPEATS", "9"))

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "31_torchrun"))
import ppy  # noqa: E402,F401
import features  # noqa: E402


def main():
    rng = random.Random(2024)
    raw = array.array("d", [rng.gauss(0.0, 1.0) for _ in range(ROWS * COLS)])
    out = array.array("d", bytes(8 * ROWS * COLS * 2))
    counts = array.array("q", bytes(8 * 8))
    times = []
    for _ in range(REPEATS):
        for i in range(8):
            counts[i] = 0
        started = time.perf_counter()
        total = features.standardize(raw, out, ROWS, COLS)
        outside = features.bucketize(out, ROWS * COLS * 2, counts, 8, -3.0, 3.0)
        times.append(time.perf_counter() - started)
    print(json.dumps({
        "median_ms": statistics.median(times) * 1000,
        "min_ms": min(times) * 1000,
        "max_ms": max(times) * 1000,
        "checksum": f"{total:.6f}",
        "outside": outside,
        "counts": list(counts),
        "tier": ppy.tier(features.standardize),
    }))


if __name__ == "__main__":
    main()
