"""Times one implementation of the features kernel in this process.

    python time_features.py SYSTEM

SYSTEM is "ppy" (examples/31_torchrun/features.ppy through `import ppy`; how it
runs is up to the environment: PPY_IMPORT=python, PPY_JIT=0, ...), "c" (the
same loops in C, benchmarks/kernels/features.c, built with gcc -O2) or "numba"
(benchmarks/kernels/features_numba.py). Prints one JSON line: the median, min
and max of REPEATS runs of standardize + bucketize over ROWS x 16 normally
distributed values, the outputs (compare.py checks that every system agrees),
and what the first call cost (compilation, or loading a cache).
"""

import array
import ctypes
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = int(os.environ.get("ROWS", "20000"))
COLS = 16
REPEATS = int(os.environ.get("REPEATS", "9"))


def inputs():
    rng = random.Random(2024)
    raw = array.array("d", [rng.gauss(0.0, 1.0) for _ in range(ROWS * COLS)])
    out = array.array("d", bytes(8 * ROWS * COLS * 2))
    counts = array.array("q", bytes(8 * 8))
    return raw, out, counts


def ppy_kernels():
    sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "31_torchrun"))
    import ppy  # noqa: F401

    started = time.perf_counter()
    import features

    return features.standardize, features.bucketize, time.perf_counter() - started, None


def c_kernels():
    build = tempfile.mkdtemp()
    library = os.path.join(build, "libfeatures.so")
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-o", library, os.path.join(HERE, "features.c"), "-lm"],
                   check=True)
    lib = ctypes.CDLL(library)
    lib.standardize.restype = ctypes.c_double
    lib.standardize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    lib.bucketize.restype = ctypes.c_int64
    lib.bucketize.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double,
                              ctypes.c_double]

    def standardize(raw, out, rows, cols):
        return lib.standardize(raw.buffer_info()[0], out.buffer_info()[0], rows, cols)

    def bucketize(values, count, counts, bins, low, high):
        return lib.bucketize(values.buffer_info()[0], count, counts.buffer_info()[0], bins, low, high)

    return standardize, bucketize, 0.0, None


def numba_kernels():
    import numpy

    sys.path.insert(0, HERE)
    started = time.perf_counter()
    import features_numba

    def standardize(raw, out, rows, cols):
        return features_numba.standardize(numpy.frombuffer(raw, dtype=numpy.float64),
                                          numpy.frombuffer(out, dtype=numpy.float64), rows, cols)

    def bucketize(values, count, counts, bins, low, high):
        return features_numba.bucketize(numpy.frombuffer(values, dtype=numpy.float64), count,
                                        numpy.frombuffer(counts, dtype=numpy.int64), bins, low, high)

    return standardize, bucketize, time.perf_counter() - started, "numba"


def main():
    system = sys.argv[1]
    standardize, bucketize, import_seconds, _ = {"ppy": ppy_kernels, "c": c_kernels, "numba": numba_kernels}[system]()
    raw, out, counts = inputs()
    first_started = time.perf_counter()
    standardize(raw, out, ROWS, COLS)
    bucketize(out, ROWS * COLS * 2, counts, 8, -3.0, 3.0)
    first_call = time.perf_counter() - first_started
    times = []
    for _ in range(REPEATS):
        for i in range(8):
            counts[i] = 0
        started = time.perf_counter()
        total = standardize(raw, out, ROWS, COLS)
        outside = bucketize(out, ROWS * COLS * 2, counts, 8, -3.0, 3.0)
        times.append(time.perf_counter() - started)
    tier = "-"
    if system == "ppy":
        import ppy
        import features

        tier = ppy.tier(features.standardize)
    print(json.dumps({
        "median_ms": statistics.median(times) * 1000,
        "min_ms": min(times) * 1000,
        "max_ms": max(times) * 1000,
        "first_call_ms": first_call * 1000,
        "import_ms": import_seconds * 1000,
        "checksum": f"{total:.6f}",
        "outside": int(outside),
        "counts": list(counts),
        "tier": tier,
    }))


if __name__ == "__main__":
    main()
