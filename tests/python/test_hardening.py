"""Ordinary input that once crashed ppy or hung it: deep typed recursion on a
raised recursion limit or a small thread stack, and functions too large for the
JIT's register allocator."""

import signal
import textwrap

import pytest

DEEP = """\
def down(n: int) -> int:
    if n == 0:
        return 0
    return down(n - 1) + 1
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("jit", ["0", "eager"])
def test_deep_typed_recursion_raises_recursion_error_never_crashes(runner, tmp_path, jit):
    _write(tmp_path, "deep.ppy", DEEP)
    probe = textwrap.dedent("""\
        import sys, threading, ppy, deep
        sys.setrecursionlimit(200000)
        for n in (10, 100000):
            try:
                print(n, deep.down(n))
            except RecursionError:
                print(n, "RecursionError")
        sys.setrecursionlimit(1000)
        threading.stack_size(2 << 20)
        def small_stack():
            try:
                print("thread", deep.down(950))
            except RecursionError:
                print("thread RecursionError")
        worker = threading.Thread(target=small_stack)
        worker.start()
        worker.join()
        """)
    result = runner.python("-c", probe, cwd=tmp_path, PPY_JIT=jit)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    lines = result.stdout.splitlines()
    assert lines[0] == "10 10"
    assert lines[1] in ("100000 100000", "100000 RecursionError")
    assert lines[2] in ("thread 950", "thread RecursionError")
    assert result.returncode != -signal.SIGSEGV


def test_a_function_too_large_for_the_jit_stays_on_the_interpreter(runner, tmp_path):
    body = "".join(f"    x = (x * 3 + {i % 7}) % 1000003\n" for i in range(20000))
    _write(tmp_path, "huge.ppy", f"def huge(x: int) -> int:\n{body}    return x\n")
    expected = runner.python("-c", "import ppy, huge; print(huge.huge(7))", cwd=tmp_path, PPY_IMPORT="python")
    result = runner.python("-c", "import ppy, huge; print(huge.huge(7), ppy.tier(huge.huge))", cwd=tmp_path,
                           PPY_JIT="eager", PPY_TRACE="1", timeout=300)
    assert result.stdout == expected.stdout.strip() + " vm\n", result.stderr[-2000:]
    assert "too large for machine code" in result.stderr


@pytest.mark.parametrize("terms", [600, 2000])
def test_deep_expressions_run_as_cpython_runs_them(runner, tmp_path, terms):
    """A generated expression thousands deep: the function runs as Python
    (CPython compiles it), the module's other functions as before where the
    module can still be rewritten, and nothing crashes, even in a thread with a
    1 MiB stack."""
    sum_of_terms = " + ".join(["x"] * terms)
    _write(tmp_path, "deep.ppy", f"def f(x: int) -> int:\n    return {sum_of_terms}\n\n\n"
                                 "def g(x: int) -> int:\n    return x + 1\n")
    probe = textwrap.dedent("""\
        import sys, threading
        def run():
            import ppy, deep
            print(deep.f(1), deep.g(1), ppy.tier(deep.f))
        threading.stack_size(1 << 20)
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        """)
    plain = runner.python("-c", probe, cwd=tmp_path, PPY_IMPORT="python")
    native = runner.python("-c", probe, cwd=tmp_path)
    assert plain.returncode == native.returncode == 0, native.stderr[-3000:]
    assert plain.stdout == f"{terms} 2 python\n"
    assert native.stdout == plain.stdout, native.stderr[-3000:]
    check = runner.ppy("check", "-v", "deep.ppy", cwd=tmp_path)
    assert "f: python (an expression nested too deeply" in check.stdout, check.stdout + check.stderr


def test_a_dynamic_bool_index_into_a_mask_reading_buffer_raises(runner, tmp_path):
    """numpy and torch read a bool index as a mask (all elements or none); a
    compiled element access cannot, so a bool arriving as an object raises
    TypeError there instead of writing one element (array.array's reading is
    tests/programs/85_object_bool_index.ppy)."""
    np = pytest.importorskip("numpy")
    (tmp_path / "masks.ppy").write_text(textwrap.dedent("""
        from ppy import Buffer

        def put(xs: Buffer[float], k: object, v: float) -> None:
            xs[k] = v

        def get(xs: Buffer[float], k: object) -> float:
            return xs[k]
    """))
    probe = textwrap.dedent("""
        import numpy as np, ppy, masks
        xs = np.zeros(3)
        for call in (lambda: masks.put(xs, True, 9.0), lambda: masks.get(xs, False)):
            try:
                call()
                print("ran")
            except TypeError as error:
                print("TypeError:", error)
        masks.put(xs, 1, 9.0)
        print(xs.tolist(), ppy.tier(masks.put))
    """)
    for jit in ("0", "eager"):
        result = runner.python("-c", probe, cwd=tmp_path, PPY_JIT=jit)
        assert result.returncode == 0, result.stderr
        message = ("TypeError: a bool index into a numpy.ndarray selects by mask there, which ppy's element "
                   "access does not do; write int(...) for an element")
        # (put starts with the object index's conversion and has no loop:
        # machine code would never run, so there is none, eager or not.)
        assert result.stdout.splitlines() == [message, message, "[0.0, 9.0, 0.0] vm"]
