"""Many threads calling compiled functions at once, while the functions tier up.

A child interpreter starts 8 threads; each makes 10,000 calls, drawn at random
(a seed per thread) from a fixed set of calls of one `.ppy` module's functions:
typed int and float loops over numpy arrays and array.array buffers (one of
them writing into a buffer of the thread's own), a long loop that enters
machine code in the middle, a recursive function, a function that raises
IndexError for some arguments and one in object mode; @ppy.nogil versions
of the typed ones, which run without the GIL, and a ppy.prange loop, whose
chunks run on the prange pool (the threads' loops take turns on it). Under
PPY_JIT's default ("hot") the functions are compiled by the JIT while the threads run (the first
call comes from the threads); under PPY_JIT=eager before their first call.
Every call's result (value and type, or exception type and message, and the
buffer it wrote) is checked against CPython's result for the same call: the
same source run as plain Python, in the same process, before the threads
start. scripts/tsan.sh runs this under ThreadSanitizer (docs/fuzzing.md)."""

import json
import sys
import textwrap

import pytest

pytest.importorskip("numpy")

THREADS = 8
CALLS = 10_000

KERNEL = '''\
import ppy
from ppy import Buffer, prange


def dot(xs: Buffer[float], ys: Buffer[float]) -> float:
    total = 0.0
    for x, y in zip(xs, ys):
        total += x * y
    return total


def scaled(xs: Buffer[int], out: Buffer[int], scale: int) -> int:
    total = 0
    for i in range(len(xs)):
        out[i] = xs[i] * scale - i
        total += out[i] // 3
    return total


def spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += (i * 7) % 13
    return total


def fib(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def pick(xs: Buffer[float], i: int) -> float:
    return xs[i] * 2.0 + xs[-1]


@ppy.nogil
def dot_nogil(xs: Buffer[float], ys: Buffer[float]) -> float:
    total = 0.0
    for x, y in zip(xs, ys):
        total += x * y
    return total


@ppy.nogil
def scaled_nogil(xs: Buffer[int], out: Buffer[int], scale: int) -> int:
    total = 0
    for i in range(len(xs)):
        out[i] = xs[i] * scale - i
        total += out[i] // 3
    return total


@ppy.nogil
def spin_nogil(n: int) -> int:
    total = 0
    for i in range(n):
        total += (i * 7) % 13
    return total


@ppy.nogil
def fib_nogil(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib_nogil(n - 2)


@ppy.nogil
def pick_nogil(xs: Buffer[float], i: int) -> float:
    return xs[i] * 2.0 + xs[-1]


def pcount(xs: Buffer[int], scale: int) -> int:
    total = 0
    low = xs[0]
    for i in prange(len(xs)):
        total += xs[i] * scale
        low = min(low, xs[i] - i)
    return total * 1000 + low


def describe(n: int, xs: Buffer[float]) -> str:
    parts = []
    for i in range(n):
        parts.append(f"{i}:{xs[i % len(xs)]:.3f}")
    return ",".join(parts) + f" {len(parts)!r} {dict(n=n)}"
'''

CHILD = textwrap.dedent('''\
    import array, json, os, random, sys, threading, traceback
    import numpy as np
    import ppy, kernel

    THREADS, CALLS = int(sys.argv[1]), int(sys.argv[2])
    FUNCTIONS = ["dot", "scaled", "spin", "fib", "pick", "describe", "dot_nogil", "scaled_nogil", "spin_nogil",
                 "fib_nogil", "pick_nogil", "pcount"]

    # CPython's own functions: the same source, run as plain Python.
    with open("kernel.ppy") as f:
        source = f.read()
    python = {"__name__": "kernel_python"}
    exec(compile(source, "kernel.ppy", "exec"), python)

    floats = np.linspace(-2.0, 3.0, 37)
    other = np.cos(np.arange(37.0))
    short = array.array("d", [0.25, -1.5, 8.0])
    ints = array.array("q", [3 * k - 40 for k in range(29)])
    # (name, arguments): the index of `out` marks the thread's own output buffer.
    OUT = object()
    cases = [("dot", (floats, other)), ("dot", (floats[:5], other[3:8])), ("dot", (floats[:0], other[:0])),
             ("scaled", (ints, OUT, 3)), ("scaled", (ints, OUT, -7)),
             ("spin", (0,)), ("spin", (17,)), ("spin", (20_000,)),
             ("fib", (0,)), ("fib", (1,)), ("fib", (12,)),
             ("pick", (floats, 4)), ("pick", (floats, -37)), ("pick", (floats, 37)), ("pick", (floats, -38)),
             ("pick", (short, 2)), ("pick", (short, 3)), ("pick", (short, -4)),
             ("describe", (0, short)), ("describe", (5, short)), ("describe", (3, floats)),
             ("dot_nogil", (floats, other)), ("dot_nogil", (floats[:0], other[:0])),
             ("scaled_nogil", (ints, OUT, 5)), ("spin_nogil", (17,)), ("spin_nogil", (30_000,)),
             ("fib_nogil", (1,)), ("fib_nogil", (13,)),
             ("pick_nogil", (floats, 4)), ("pick_nogil", (floats, 37)), ("pick_nogil", (short, -4)),
             ("pcount", (ints, 3)), ("pcount", (ints[:1], -2)), ("pcount", (ints[:0], 1))]

    def outcome(function, args):
        """What a call gives: (type, repr) of its result, or the exception's. A
        numpy scalar counts as the Python number it holds (ppy reads elements
        as Python floats, as memoryview does; plain Python keeps numpy's
        float64, whose arithmetic is the same IEEE double arithmetic)."""
        try:
            result = function(*args)
        except Exception as e:
            return ("raised", type(e).__name__, str(e))
        if isinstance(result, np.generic):
            result = result.item()
        return (type(result).__name__, repr(result))

    def arguments(args, out):
        return tuple(out if a is OUT else a for a in args)

    expected = []
    for name, args in cases:
        out = array.array("q", [0] * len(ints))
        expected.append((outcome(python[name], arguments(args, out)), out.tolist()))

    tiers_before = {name: ppy.tier(getattr(kernel, name)) for name in FUNCTIONS}
    barrier = threading.Barrier(THREADS)
    results = [None] * THREADS

    def work(t):
        rng = random.Random(1000 + t)
        out = array.array("q", [0] * len(ints))
        calls, wrong = 0, []
        try:
            barrier.wait()
            for _ in range(CALLS):
                k = rng.randrange(len(cases))
                name, args = cases[k]
                for i in range(len(out)):
                    out[i] = 0
                got = (outcome(getattr(kernel, name), arguments(args, out)), out.tolist())
                calls += 1
                if got != expected[k]:
                    wrong.append({"call": f"{name}{args!r}"[:200], "got": repr(got)[:300],
                                  "expected": repr(expected[k])[:300]})
        except BaseException:
            wrong.append({"error": traceback.format_exc()})
        results[t] = {"calls": calls, "wrong": len(wrong), "first": wrong[:3]}

    sys.setswitchinterval(0.00001)  # hand the GIL over often (every 10 µs)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"threads": results, "tiers_before": tiers_before,
                      "tiers": {name: ppy.tier(getattr(kernel, name)) for name in FUNCTIONS}}), flush=True)
''')

# Functions that must be in machine code after the run (describe, in object
# mode, has no machine code to require).
TYPED = ["dot", "scaled", "spin", "fib", "pick", "dot_nogil", "scaled_nogil", "spin_nogil", "fib_nogil", "pick_nogil",
         "pcount"]


@pytest.mark.parametrize("jit", ["hot", "eager"])
def test_threads_calling_functions_that_tier_up_get_cpython_results(runner, tmp_path, jit):
    (tmp_path / "kernel.ppy").write_text(KERNEL)
    (tmp_path / "child.py").write_text(CHILD)
    run = runner.python("child.py", THREADS, CALLS, cwd=tmp_path, timeout=600,
                        PPY_JIT=None if jit == "hot" else "eager", PPY_TRACE="1" if jit == "hot" else None)
    # 66: ThreadSanitizer reported a race (scripts/tsan.sh; the report is in
    # its reports folder).
    assert run.returncode == 0, (run.returncode, run.stderr[-4000:])
    report = json.loads(run.stdout.splitlines()[-1])
    for t, thread in enumerate(report["threads"]):
        assert thread == {"calls": CALLS, "wrong": 0, "first": []}, (t, thread)
    if jit == "hot":
        # Nothing was compiled before the threads ran, and the threads' calls
        # compiled each typed function (by calls, or by the loop for spin).
        assert all(tier == "vm" for tier in report["tiers_before"].values()), report
        for name in TYPED:
            assert f"jit: compiled {name} (trigger: " in run.stderr, (name, run.stderr[-4000:])
    for name in TYPED:
        assert report["tiers"][name] == "jit", report


def test_the_child_checks_itself_under_plain_python(runner, tmp_path):
    # The same child with the module run as plain Python: every call then
    # matches trivially, which shows the harness itself compares what it should
    # (and that every call of the set runs under CPython).
    (tmp_path / "kernel.ppy").write_text(KERNEL)
    (tmp_path / "child.py").write_text(CHILD)
    run = runner.python("child.py", 2, 500, cwd=tmp_path, timeout=300, PPY_IMPORT="python")
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.splitlines()[-1])
    assert [thread["calls"] for thread in report["threads"]] == [500, 500]
    assert all(thread["wrong"] == 0 for thread in report["threads"]), report
    assert set(report["tiers"].values()) == {"python"}, report
