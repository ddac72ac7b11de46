"""Calls of small typed functions from a Python loop, ppy against CPython.

    python benchmarks/calls.py [--repeats N] [--iterations K] [--compiled]

benchmarks/calls/small.ppy holds functions of one operation or a few. The
same file is imported twice in one process: through ppy (import ppy), and as
plain Python (read as a .py source), and each function is called from the
same Python loop (`for i in range(K): x = f(...)`), ppy's and CPython's
calls interleaved N times; the table shows the median ns per iteration and
CPython's time divided by ppy's (above 1.0: ppy faster).

By default a function of at most two operations CPython specializes, or
one other, keeps its Python function for
calls from Python (`ppy check -v`: "called from Python: python"; compiler/
compile.cpp, SmallCallAsPython): its row measures CPython against itself.
`--compiled` sets PPY_OBJECT_CODE=compile, which makes every def a compiled
Function, to measure what the rule avoids.
"""

import argparse
import importlib.machinery
import importlib.util
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "calls", "small.ppy")

# Each function's loop body: the call, with arguments of its types.
CALLS = {
    "ident": "x = f(1.5)",
    "add": "x = f(x, 1.0)",
    "iadd": "x = f(i, 1)",
    "sq": "x = f(1.5)",
    "relu": "x = f(1.5)",
    "fadd3": "x = f(1.0, 2.0, 0.25)",
    "fma": "x = f(1.0, 2.0, 0.25)",
    "imad": "x = f(i, 3, 7)",
    "ratio": "x = f(1.0, 3.0)",
    "positive": "x = f(1.5)",
    "fabs": "x = f(-2.0)",
    "imix": "x = f(i, 77)",
    "between": "x = f(0.5, 0.0, 1.0)",
    "lerp": "x = f(1.0, 2.0, 0.25)",
    "root": "x = f(2.0)",
    "half": "x = f(i)",
}


def plain_python_module():
    """small.ppy read as the Python source it is."""
    loader = importlib.machinery.SourceFileLoader("small_as_python", SOURCE)
    spec = importlib.util.spec_from_loader("small_as_python", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def make_loop(function, body):
    namespace = {"f": function}
    exec(f"def loop(n):\n    x = 0.0\n    for i in range(n):\n        {body}\n    return x\n", namespace)
    return namespace["loop"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--iterations", type=int, default=1_000_000)
    parser.add_argument("--compiled", action="store_true", help="PPY_OBJECT_CODE=compile: every def a Function")
    args = parser.parse_args()
    if args.compiled:
        os.environ["PPY_OBJECT_CODE"] = "compile"
    import ppy

    sys.path.insert(0, os.path.dirname(SOURCE))
    compiled = __import__("small")
    python = plain_python_module()
    print(f"{'function':10s} {'calls from Python run':22s} {'CPython ns':>10s} {'ppy ns':>8s} {'speed-up':>8s}")
    for name, body in CALLS.items():
        ours, theirs = getattr(compiled, name), getattr(python, name)
        loop_ppy, loop_python = make_loop(ours, body), make_loop(theirs, body)
        assert loop_ppy(1000) == loop_python(1000), name
        times_ppy, times_python = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            loop_python(args.iterations)
            times_python.append(time.perf_counter() - start)
            start = time.perf_counter()
            loop_ppy(args.iterations)
            times_ppy.append(time.perf_counter() - start)
        ns_python = statistics.median(times_python) * 1e9 / args.iterations
        ns_ppy = statistics.median(times_ppy) * 1e9 / args.iterations
        runs = "python (the rule)" if ppy.tier(ours) == "python" else "compiled code"
        print(f"{name:10s} {runs:22s} {ns_python:10.1f} {ns_ppy:8.1f} {ns_python / ns_ppy:7.3f}x")


if __name__ == "__main__":
    main()
