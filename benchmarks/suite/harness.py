"""The kernel suite's inputs, result texts and per-process runner.

    python harness.py SYSTEM SIZE REPEATS KERNEL[,KERNEL...]

runs the named kernels of one SYSTEM in this process and prints one JSON line
per kernel: the result text (the kernel's return value and a digest of every
buffer it wrote, which every system must print identically), the timed calls in
milliseconds, and where ppy ran the kernel (`ppy.tier`). benchmarks/suite.py
starts these processes, interleaved; tests/python/test_suite_kernels.py checks
that every system prints the same texts at the small size.

SYSTEM is one of
  python          the .ppy file as plain Python (run with PPY_IMPORT=python)
  interp          the .ppy file on ppy's interpreter (run with PPY_JIT=0)
  jit             the .ppy file as machine code (a warm cache, or PPY_JIT=eager)
  c               <kernel>.c, a shared library in $SUITE_BUILD/c, through ctypes
  numba           <kernel>_numba.py, @njit (cache in $NUMBA_CACHE_DIR)
  cython          <kernel>_cy.pyx built in $SUITE_BUILD/cython-checked (bounds checks on; one
                  module, suite_cy, holds every kernel: see build.py)
  cython-unchecked  the same built in $SUITE_BUILD/cython-unchecked (boundscheck and wraparound off)

The python, interp and jit systems get memoryviews of the inputs (so that plain
Python reads Python ints and floats, as ppy does); numba gets the numpy
arrays; Cython's typed memoryviews get the memoryviews; C gets pointers and
lengths. With SUITE_CALLGRIND=1 and SUITE_REGION=<library>, one call of each
kernel (after two untimed ones for the compiled systems) runs inside the
library's `suite_region` (build.py), whose callgrind client requests count
that call alone and dump the count (run under callgrind --collect-atstart=no).
"""

import ctypes
import hashlib
import importlib
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

KERNELS = ["features", "histogram", "prefix_sum", "sieve", "matmul", "nbody", "mandelbrot", "spectral_norm",
           "tokenizer", "jacobi"]
SIZES = ("small", "default", "large")
SLOW_SYSTEMS = ("python", "interp")


def _digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


# Each spec: sizes (per size name, the keyword parameters), make(**params) ->
# the argument list (numpy arrays for buffers, Python ints and floats), c_args
# (the C function's arguments: an argument's index, or ("len", index)), the C
# result type, and text(result, args) -> the line every system must print.

def _features(rows):
    rng = np.random.default_rng(2024)
    raw = rng.normal(0.0, 1.0, rows * 16)
    return [raw, np.zeros(rows * 32), np.zeros(8, dtype=np.int64), rows, 16]


def _histogram(n, bins):
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**31 - 1, n, dtype=np.int32)
    return [keys, np.zeros(bins, dtype=np.int64), bins]


def _prefix_sum(n):
    rng = np.random.default_rng(11)
    return [rng.integers(-1000, 1000, n, dtype=np.int64), np.zeros(n, dtype=np.int64)]


def _sieve(n):
    return [np.zeros(n, dtype=np.uint8), n]


def _matmul(n):
    rng = np.random.default_rng(5)
    a = rng.uniform(-1.0, 1.0, n * n).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, n * n).astype(np.float32)
    return [a, b, np.zeros(n * n, dtype=np.float32), n]


def _nbody(n, steps):
    rng = np.random.default_rng(3)
    start = np.empty(6 * n)
    start[0::6] = rng.uniform(-10.0, 10.0, n)
    start[1::6] = rng.uniform(-10.0, 10.0, n)
    start[2::6] = rng.uniform(-10.0, 10.0, n)
    start[3::6] = rng.uniform(-0.1, 0.1, n)
    start[4::6] = rng.uniform(-0.1, 0.1, n)
    start[5::6] = rng.uniform(-0.1, 0.1, n)
    mass = rng.uniform(0.5, 2.0, n)
    return [start, np.zeros(6 * n), mass, n, steps, 0.001]


def _mandelbrot(width, height, max_iter):
    return [np.zeros(width * height, dtype=np.int32), width, height, max_iter]


def _spectral_norm(n):
    return [np.zeros(n), np.zeros(n), np.zeros(n), n]


VOCABULARY = [b"the", b"kernel", b"ppy's", b"x_1", b"buffer", b"Tokens", b"42", b"3.14159", b"1.2.3", b"007",
              b",", b".", b"(", b")", b"==", b"+", b"\n", b"  ", b"\t", b"don't", b"_private", b"A", b"numba",
              b"2026", b";", b"\r\n", b"C99", b"#"]


def _tokenizer(n):
    rng = np.random.default_rng(13)
    picks = rng.integers(0, len(VOCABULARY), n // 4)
    text = b" ".join(VOCABULARY[k] for k in picks.tolist())[:n]
    return [np.frombuffer(bytearray(text), dtype=np.uint8), np.zeros(3, dtype=np.int64)]


def _jacobi(rows, cols, steps):
    start = np.zeros(rows * cols)
    start[:cols] = 1.0  # a hot top edge
    start[(rows - 1) * cols:] = -0.5  # a cold bottom edge
    rng = np.random.default_rng(17)
    start[cols:(rows - 1) * cols] = rng.uniform(0.0, 0.1, (rows - 2) * cols)
    return [start, np.zeros(rows * cols), np.zeros(rows * cols), rows, cols, steps]


SPECS = {
    "features": dict(
        what="the seed's features: standardize + bucketize, ROWS x 16 doubles",
        sizes={"small": dict(rows=400), "default": dict(rows=20000), "large": dict(rows=200000)},
        make=_features, c_args=[0, 1, 2, ("len", 2), 3, 4], restype=ctypes.c_double,
        text=lambda r, a: f"checksum={r!r} counts={a[2].tolist()} out={_digest(a[1])}"),
    "histogram": dict(
        what="histogram of N int32 keys into 1000 bins (k % bins)",
        sizes={"small": dict(n=20000, bins=1000), "default": dict(n=2_000_000, bins=1000),
               "large": dict(n=20_000_000, bins=1000)},
        make=_histogram, c_args=[0, ("len", 0), 1, 2], restype=ctypes.c_int64,
        text=lambda r, a: f"fullest={r} counts={_digest(a[1])} max={int(a[1].max())}"),
    "prefix_sum": dict(
        what="inclusive prefix sums of N int64, then a backward pass",
        sizes={"small": dict(n=20000), "default": dict(n=4_000_000), "large": dict(n=40_000_000)},
        make=_prefix_sum, c_args=[0, ("len", 0), 1], restype=ctypes.c_int64,
        text=lambda r, a: f"result={r} out={_digest(a[1])}"),
    "sieve": dict(
        what="sieve of Eratosthenes over N bytes",
        sizes={"small": dict(n=20000), "default": dict(n=4_000_000), "large": dict(n=40_000_000)},
        make=_sieve, c_args=[0, 1], restype=ctypes.c_int64,
        text=lambda r, a: f"primes={r} flags={_digest(a[0])}"),
    "matmul": dict(
        what="naive N x N f32 matrix product (i-j-k), flat buffers",
        sizes={"small": dict(n=24), "default": dict(n=128), "large": dict(n=400)},
        make=_matmul, c_args=[0, 1, 2, 3], restype=ctypes.c_double,
        text=lambda r, a: f"total={r!r} c={_digest(a[2])}"),
    "nbody": dict(
        what="n-body, N bodies x STEPS steps, state in flat buffers",
        sizes={"small": dict(n=8, steps=5), "default": dict(n=64, steps=200), "large": dict(n=200, steps=200)},
        make=_nbody, c_args=[0, 1, 2, 3, 4, 5], restype=ctypes.c_double,
        text=lambda r, a: f"energy={r!r} state={_digest(a[1])}"),
    "mandelbrot": dict(
        what="Mandelbrot escape counts, W x H pixels, separate re/im floats",
        sizes={"small": dict(width=40, height=30, max_iter=50), "default": dict(width=400, height=300, max_iter=200),
               "large": dict(width=1600, height=1200, max_iter=200)},
        make=_mandelbrot, c_args=[0, 1, 2, 3], restype=ctypes.c_int64,
        text=lambda r, a: f"iterations={r} out={_digest(a[0])}"),
    "spectral_norm": dict(
        what="spectral norm, N x N, 10 power iterations, typed calls per element",
        sizes={"small": dict(n=40), "default": dict(n=250), "large": dict(n=1000)},
        make=_spectral_norm, c_args=[0, 1, 2, 3], restype=ctypes.c_double,
        text=lambda r, a: f"norm={r!r} u={_digest(a[0])}"),
    "tokenizer": dict(
        what="byte tokenizer (words, numbers, marks) over N bytes of u8 text",
        sizes={"small": dict(n=20000), "default": dict(n=4_000_000), "large": dict(n=40_000_000)},
        make=_tokenizer, c_args=[0, ("len", 0), 1], restype=ctypes.c_int64,
        text=lambda r, a: f"tokens={r} counts={a[1].tolist()}"),
    "jacobi": dict(
        what="2-D Jacobi stencil, ROWS x COLS flat grid, 2 x STEPS sweeps",
        sizes={"small": dict(rows=20, cols=30, steps=3), "default": dict(rows=200, cols=300, steps=25),
               "large": dict(rows=1000, cols=1000, steps=25)},
        make=_jacobi, c_args=[0, 1, 2, 3, 4, 5], restype=ctypes.c_double,
        text=lambda r, a: f"total={r!r} grid={_digest(a[1])}"),
}


def _load(system, kernel):
    """The kernel's function as `system` runs it, and how to pass it the arguments."""
    build = os.environ.get("SUITE_BUILD", "")
    if system in ("python", "interp", "jit"):
        import ppy  # noqa: F401  (installs the import hook)

        sys.path.insert(0, HERE)
        function = getattr(importlib.import_module(kernel), kernel)
        return function, lambda a: memoryview(a)
    if system == "numba":
        sys.path.insert(0, HERE)
        return getattr(importlib.import_module(kernel + "_numba"), kernel), lambda a: a
    if system in ("cython", "cython-unchecked"):
        sys.path.insert(0, os.path.join(build, "cython-checked" if system == "cython" else "cython-unchecked"))
        return getattr(importlib.import_module("suite_cy"), kernel), lambda a: memoryview(a)
    if system == "c":
        spec = SPECS[kernel]
        c_function = getattr(ctypes.CDLL(os.path.join(build, "c", f"lib{kernel}.so")), kernel)
        c_function.restype = spec["restype"]

        def call(*args):
            converted = []
            for item in spec["c_args"]:
                if isinstance(item, tuple):
                    converted.append(ctypes.c_int64(len(args[item[1]])))
                    continue
                value = args[item]
                if isinstance(value, np.ndarray):
                    converted.append(ctypes.c_void_p(value.ctypes.data))
                elif isinstance(value, float):
                    converted.append(ctypes.c_double(value))
                else:
                    converted.append(ctypes.c_int64(value))
            return c_function(*converted)

        return call, lambda a: a
    raise SystemExit(f"unknown system {system}")


def run(system, size, repeats, kernels):
    region = None
    if os.environ.get("SUITE_CALLGRIND") == "1":
        region = ctypes.CDLL(os.environ["SUITE_REGION"]).suite_region
        region.argtypes = [ctypes.CFUNCTYPE(None)]
    for kernel in kernels:
        spec = SPECS[kernel]
        function, view = _load(system, kernel)
        args = spec["make"](**spec["sizes"][size])
        passed = [view(a) if isinstance(a, np.ndarray) else a for a in args]
        times = []
        result = None
        if system not in SLOW_SYSTEMS or repeats == 0:
            # Untimed: numba's cache load and first-call costs, and ppy's
            # value specialization, which its JIT compiles at the second call
            # that shows the same int arguments (docs/benchmarks.md).
            for _ in range(2):
                result = function(*passed)
        if region is not None:
            holder = []
            callback = ctypes.CFUNCTYPE(None)(lambda: holder.append(function(*passed)))
            region(callback)
            result = holder[0]
        else:
            for _ in range(repeats):
                started = time.perf_counter()
                result = function(*passed)
                times.append((time.perf_counter() - started) * 1000)
        tier = "-"
        if system in ("python", "interp", "jit"):
            import ppy

            tier = ppy.tier(function)
        print(json.dumps({"kernel": kernel, "output": spec["text"](result, args), "times_ms": times,
                          "median_ms": statistics.median(times) if times else None, "tier": tier}), flush=True)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(","))
