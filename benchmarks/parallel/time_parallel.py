"""Times one part of benchmarks/parallel.py in this process; prints one JSON line.

    python time_parallel.py threads         # part (a): @ppy.nogil called from two Python threads
    python time_parallel.py prange SYSTEM   # part (b): standardize over rows, SYSTEM "ppy" or "numba"

threads: after warm-up, REPEATS times (alternating the order): CALLS calls of
kernels.smooth_passes over one N-element array('d') one after another, and the
same CALLS calls split over two threading.Thread (CALLS/2 each, the same
buffer); in each repeat the same for smooth_passes_gil (the kernel without
@ppy.nogil) and, if SMOOTH_LIB names parallel/smooth.c built as a shared
library, for the C loop through ctypes. Every call of a kernel must return
what its first call did.

prange: ROWS x COLS values (a fixed pseudo-random input); after warm-up, REPEATS
times each: standardize_rows (prange over the rows; the pool size is
PPY_NUM_THREADS, or NUMBA_NUM_THREADS for numba) and the seed's sequential
standardize, each into its own out buffer. Reports their medians, the returned
totals and a digest of each out buffer.

How ppy runs is up to the environment (parallel.py sets PPY_JIT=eager and
checks that both kernels ran as machine code).
"""

import array
import hashlib
import json
import os
import random
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPEATS = int(os.environ.get("REPEATS", "9"))


def ms(seconds):
    return seconds * 1000.0


def threads_part():
    import ppy

    sys.path.insert(0, HERE)
    import kernels

    n = int(os.environ.get("N", "100000"))
    passes = int(os.environ.get("PASSES", "40"))
    calls = int(os.environ.get("CALLS", "8"))
    assert calls % 2 == 0
    rng = random.Random(2024)
    data = array.array("d", [rng.random() - 0.5 for _ in range(n)])

    candidates = {"nogil": kernels.smooth_passes, "gil": kernels.smooth_passes_gil}
    if os.environ.get("SMOOTH_LIB"):
        import ctypes

        library = ctypes.CDLL(os.environ["SMOOTH_LIB"])  # a CDLL call releases the GIL
        library.smooth_passes.restype = ctypes.c_double
        library.smooth_passes.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        address = data.buffer_info()[0]
        candidates["c"] = lambda _data, count, rounds: library.smooth_passes(address, count, rounds)

    expected = {kind: kernel(data, n, passes) for kind, kernel in candidates.items()}
    wrong = {kind: [] for kind in candidates}

    def worker(kind, count):
        kernel, value = candidates[kind], expected[kind]
        for _ in range(count):
            result = kernel(data, n, passes)
            if result != value:
                wrong[kind].append(result)

    def sequential(kind):
        started = time.perf_counter()
        worker(kind, calls)
        return time.perf_counter() - started

    def two_threads(kind):
        started = time.perf_counter()
        pair = [threading.Thread(target=worker, args=(kind, calls // 2)) for _ in range(2)]
        for thread in pair:
            thread.start()
        for thread in pair:
            thread.join()
        return time.perf_counter() - started

    seq = {kind: [] for kind in candidates}
    par = {kind: [] for kind in candidates}
    kinds = list(candidates)
    for repeat in range(-3, REPEATS):  # 3 untimed: the JIT, the threads' first calls
        # the kernels interleaved, their order rotating, so that the machine's phases fall on each alike
        for kind in kinds[repeat % len(kinds):] + kinds[:repeat % len(kinds)]:
            if repeat % 2 == 0:
                first, second = sequential(kind), two_threads(kind)
            else:
                second, first = two_threads(kind), sequential(kind)
            if repeat >= 0:
                seq[kind].append(first)
                par[kind].append(second)
    report = {"n": n, "passes": passes, "calls": calls}
    for kind, kernel in candidates.items():
        report[kind] = {
            "seq_ms": ms(statistics.median(seq[kind])),
            "threads_ms": ms(statistics.median(par[kind])),
            "call_ms": ms(statistics.median(seq[kind])) / calls,
            # each repeat's threads time over the sequential time next to it
            "ratio": statistics.median(b / a for a, b in zip(seq[kind], par[kind])),
            "result": repr(expected[kind]),
            "wrong": [repr(value) for value in wrong[kind][:5]],
            "tier": ppy.tier(kernel) if kind != "c" else "c",
        }
    print(json.dumps(report))


def inputs(rows, cols):
    rng = random.Random(2024)
    raw = array.array("d", [rng.random() * 4.0 - 2.0 for _ in range(rows * cols)])
    return raw, array.array("d", bytes(16 * rows * cols)), array.array("d", bytes(16 * rows * cols))


def ppy_kernels():
    import ppy

    sys.path.insert(0, HERE)
    import kernels

    def tiers():
        return {"prange": ppy.tier(kernels.standardize_rows), "range": ppy.tier(kernels.standardize)}

    return kernels.standardize_rows, kernels.standardize, tiers


def numba_kernels():
    import numba
    import numpy

    sys.path.insert(0, HERE)
    import kernels_numba

    def wrap(kernel):
        def call(raw, out, rows, cols):
            return kernel(numpy.frombuffer(raw, dtype=numpy.float64), numpy.frombuffer(out, dtype=numpy.float64),
                          rows, cols)
        return call

    def tiers():
        return {"prange": f"numba {numba.__version__} ({numba.threading_layer()}, {numba.get_num_threads()} threads)",
                "range": "numba"}

    return wrap(kernels_numba.standardize_rows), wrap(kernels_numba.standardize), tiers


def prange_part(system):
    rows = int(os.environ.get("ROWS", "50000"))
    cols = int(os.environ.get("COLS", "64"))
    standardize_rows, standardize, tiers = {"ppy": ppy_kernels, "numba": numba_kernels}[system]()
    raw, out_rows, out_seq = inputs(rows, cols)
    for _ in range(2):  # warm-up: the JIT (or numba's cache), the pool's threads
        standardize_rows(raw, out_rows, rows, cols)
        standardize(raw, out_seq, rows, cols)
    par, seq = [], []
    totals_rows, totals_seq = set(), set()
    for _ in range(REPEATS):
        started = time.perf_counter()
        totals_rows.add(standardize_rows(raw, out_rows, rows, cols))
        par.append(time.perf_counter() - started)
        started = time.perf_counter()
        totals_seq.add(standardize(raw, out_seq, rows, cols))
        seq.append(time.perf_counter() - started)
    print(json.dumps({
        "prange_ms": ms(statistics.median(par)),
        "range_ms": ms(statistics.median(seq)),
        "totals_prange": sorted(repr(t) for t in totals_rows),
        "totals_range": sorted(repr(t) for t in totals_seq),
        "out_prange": hashlib.sha256(memoryview(out_rows).cast("B")).hexdigest()[:16],
        "out_range": hashlib.sha256(memoryview(out_seq).cast("B")).hexdigest()[:16],
        "tiers": tiers(),
        "rows": rows, "cols": cols,
    }))


def main():
    if sys.argv[1] == "threads":
        threads_part()
    else:
        prange_part(sys.argv[2])


if __name__ == "__main__":
    main()
