"""Buffer-annotated locals (`out: Buffer[float] = np.empty(n)`): what ppy
checks where plain Python does not, and that the allocate-fill-return loop
runs in machine code. Results are compared with Python in
tests/programs/88_allocate_fill_return.ppy."""

import textwrap

import pytest
from conftest import trace_counts

np = pytest.importorskip("numpy")

KERNELS = textwrap.dedent("""
    import numpy as np
    from ppy import Buffer

    def linspace(n: int, step: float):
        out: Buffer[float] = np.empty(n)
        for i in range(n):
            out[i] = i * step
        return out

    def total_of(x: object) -> float:
        b: Buffer[float] = x
        s = 0.0
        for i in range(len(b)):
            s += b[i]
        return s
""")


def test_a_buffer_local_is_checked_as_a_parameter_is(runner, tmp_path):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    probe = textwrap.dedent("""
        import array, numpy as np, ppy, kernels
        print(kernels.total_of(np.arange(4.0)), kernels.total_of(memoryview(array.array("d", [1.5]))))
        print(kernels.total_of(np.arange(6.0)[::2]), kernels.total_of(np.arange(6.0)[::-3]))
        for bad in (np.arange(3), [1.0], np.zeros((2, 2)), None):
            try:
                kernels.total_of(bad)
            except TypeError as error:
                print(error)
    """)
    result = runner.python("-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "6.0 1.5"
    assert lines[1] == "6.0 7.0"  # strided views are read through their strides
    assert lines[2] == "total_of() local 'b' must be Buffer[float] (format 'd'), got a buffer of format 'l' (itemsize 8)"
    assert lines[3] == "total_of() local 'b' must be Buffer[float] (format 'd'), not list (it has no buffer interface)"
    assert lines[4] == "total_of() local 'b' must be a Buffer[float] (format 'd'), got 2 dimensions"
    assert lines[5] == "total_of() local 'b' must be Buffer[float] (format 'd'), not NoneType (it has no buffer interface)"


@pytest.mark.parametrize("jit", ["eager", "hot"])
def test_the_allocate_fill_return_loop_runs_in_machine_code(runner, tmp_path, jit):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    probe = "import ppy, kernels; print(kernels.linspace(200000, 0.5)[-1], ppy.tier(kernels.linspace))"
    env = {"PPY_JIT": "eager"} if jit == "eager" else {}
    result = runner.python("-c", probe, cwd=tmp_path, PPY_TRACE="1", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "99999.5 jit\n", result.stderr
    counts = trace_counts(result.stderr, "kernels.linspace")
    assert counts and counts[0] == 1 and counts[1] >= 1, result.stderr
