"""Element-generic kernels: a parameter annotated `Buffer` alone makes ppy
compile the function once per element type and pick the specialization for
each call's argument. Results are compared with Python in
tests/programs/102_generic_kernels.ppy; here: that f32 and f64 callers both run
machine code, from a cold and a warm cache, and what is refused."""

import re
import textwrap

import pytest
from conftest import trace_counts

np = pytest.importorskip("numpy")

KERNELS = textwrap.dedent("""
    from ppy import Buffer

    def dot(x: Buffer, y: Buffer) -> float:
        s = 0.0
        for i in range(len(x)):
            s += x[i] * y[i]
        return s

    def not_generic(x: int) -> int:
        out: Buffer = None
        return x
""")

PROBE = textwrap.dedent("""
    import numpy as np, ppy, kernels
    for dt in (np.float64, np.float32, np.int32):
        x = np.arange(100000, dtype=dt) % 7
        print(dt.__name__, kernels.dot(x, x), ppy.tier(kernels.dot))
    try:
        kernels.dot(np.ones(3), np.ones(3, dtype=np.float32))
    except TypeError as error:
        print(error)
""")


def _entries(stderr, name):
    counts = trace_counts(stderr, f"kernels.{name}")
    assert counts, stderr
    return counts


@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_every_element_type_runs_its_own_machine_code(runner, tmp_path, cache):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    if cache == "warm":
        assert runner.python("-c", "import ppy, kernels", cwd=tmp_path).returncode == 0
    result = runner.python("-c", PROBE, cwd=tmp_path, PPY_TRACE="1", PPY_JIT="eager")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "float64 1299965.0 jit",
        "float32 1299965.0 jit",
        "int32 1299965.0 jit",
        # both buffers take the first one's element type
        "dot() argument 'y' must be Buffer[float] (format 'd'), got a buffer of format 'f' (itemsize 4)",
    ], result.stderr
    for name in ("dot", "dot[f32]", "dot[i32]"):
        calls, entries = _entries(result.stderr, name)
        assert calls >= 1 and entries >= 1, (name, result.stderr)


def test_a_bare_buffer_local_needs_a_generic_parameter(runner, tmp_path):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    result = runner.ppy("check", "-v", tmp_path / "kernels.ppy", cwd=tmp_path)
    assert "Buffer alone is the element type of an element-generic function's Buffer parameter" in result.stdout
    assert re.search(r"dot: vm", result.stdout), result.stdout
