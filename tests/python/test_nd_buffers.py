"""N-dimensional and strided buffers (Buffer[float, 2], a[i, j], a.shape[k],
views of any strides): what ppy checks where Python does not, and which
loops run in machine code. Results are compared with Python in
tests/programs/95_buffers_2d.ppy .. 99_nd_locals_and_rows.ppy."""

import textwrap

import pytest
from conftest import trace_counts

np = pytest.importorskip("numpy")

KERNELS = textwrap.dedent("""
    import numpy as np
    from ppy import Buffer

    def jacobi(a: Buffer[float, 2], b: Buffer[float, 2]) -> None:
        for i in range(1, a.shape[0] - 1):
            for j in range(1, a.shape[1] - 1):
                b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])

    def grid(n: int, m: int):
        out: Buffer[float, 2] = np.empty((n, m))
        for i in range(n):
            for j in range(m):
                out[i, j] = i * m + j
        return out

    def total(a: Buffer[float, 2]) -> float:
        s = 0.0
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                s += a[i, j]
        return s
""")


def _entries(stderr, name):
    counts = trace_counts(stderr, f"kernels.{name}")
    assert counts, stderr
    return counts


@pytest.mark.parametrize("jit", ["eager", "hot"])
def test_the_stencil_and_the_allocate_fill_loops_run_in_machine_code(runner, tmp_path, jit):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    probe = textwrap.dedent("""
        import numpy as np, ppy, kernels
        a = kernels.grid(300, 400)
        b = np.zeros_like(a)
        kernels.jacobi(a, b)
        print(a[299, 399], b[1, 1], b[298, 398], ppy.tier(kernels.jacobi), ppy.tier(kernels.grid))
    """)
    env = {"PPY_JIT": "eager"} if jit == "eager" else {}
    result = runner.python("-c", probe, cwd=tmp_path, PPY_TRACE="1", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "119999.0 401.0 119598.0 jit jit\n", result.stderr
    assert _entries(result.stderr, "jacobi")[1] >= 1
    assert _entries(result.stderr, "grid")[1] >= 1


def test_a_view_strided_in_its_innermost_axis_stays_on_the_interpreter(runner, tmp_path):
    # Machine code addresses the innermost axis without a stride: a frame
    # holding a transposed or column-sliced view runs on the interpreter,
    # with the same results.
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    probe = textwrap.dedent("""
        import numpy as np, ppy, kernels
        a = np.arange(20000.0).reshape(100, 200)
        print(kernels.total(a.T) == a.sum(), kernels.total(a[:, ::2]) == a[:, ::2].sum())
    """)
    result = runner.python("-c", probe, cwd=tmp_path, PPY_TRACE="1", PPY_JIT="eager")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "True True\n", result.stderr
    assert _entries(result.stderr, "total") == (2, 0)


def test_an_nd_buffer_is_checked_as_its_annotation_says(runner, tmp_path):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    probe = textwrap.dedent("""
        import array, numpy as np, ppy, kernels
        for bad in (np.zeros(3), np.zeros((2, 2, 2)), np.zeros((2, 2), dtype=np.float32), [[1.0]],
                    memoryview(np.zeros(4)).cast("B").cast("d", (2, 2))):
            try:
                print(kernels.total(bad))
            except TypeError as error:
                print(error)
    """)
    result = runner.python("-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "total() argument 'a' must be a Buffer[float, 2] (format 'd'), got 1 dimension",
        "total() argument 'a' must be a Buffer[float, 2] (format 'd'), got 3 dimensions",
        "total() argument 'a' must be Buffer[float, 2] (format 'd'), got a buffer of format 'f' (itemsize 4)",
        "total() argument 'a' must be Buffer[float, 2] (format 'd'), not list (it has no buffer interface)",
        "0.0",
    ]


def test_a_buffer_annotation_with_dimensions_evaluates_in_plain_python():
    import ppy

    assert repr(ppy.Buffer[float, 2]) == "ppy.Buffer[float, 2]"
    assert repr(ppy.Buffer[ppy.f32]) == "ppy.Buffer[f32]"
    assert ppy.Buffer[float, 3].ndim == 3


def test_machine_code_that_leaves_a_folded_access_agrees_with_the_interpreter(runner, tmp_path):
    # A u64 element above 2**63 - 1 raises in ppy (plain Python has no such
    # limit, so this is not a differential program): the load that finds it
    # leaves machine code, and the interpreter reads the element's offset,
    # which machine code must therefore have computed.
    (tmp_path / "kernels.ppy").write_text(textwrap.dedent("""
        from ppy import Buffer, u64

        def big(a: Buffer[u64, 2]) -> int:
            s = 0
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    s += a[i, j] % 1000
            return s
    """))
    probe = textwrap.dedent("""
        import numpy as np, ppy, kernels
        u = np.array([[1, 2], [3, 2**64 - 1]], dtype=np.uint64)
        for x in (u, u[:1], u[::-1], u):
            try:
                print(kernels.big(x))
            except OverflowError as error:
                print(error)
    """)
    outputs = {}
    for jit in ("0", "eager"):
        result = runner.python("-c", probe, cwd=tmp_path, PPY_JIT=jit)
        assert result.returncode == 0, result.stderr
        outputs[jit] = result.stdout
    assert outputs["0"] == outputs["eager"]
    assert outputs["0"].splitlines()[:2] == ["u64 element 18446744073709551615 does not fit in a 64-bit int", "3"]


def test_a_function_storing_into_an_nd_buffer_asks_for_a_writable_view(runner, tmp_path):
    # The call boundary knows which buffers a function stores into: a torch
    # tensor that requires grad is refused there (autograd cannot see the
    # stores), one that is only read is accepted.
    pytest.importorskip("torch")
    (tmp_path / "kernels.ppy").write_text(textwrap.dedent("""
        from ppy import Buffer

        def fill(a: Buffer[float, 2]) -> None:
            a[0, 1] = 2.5

        def read(a: Buffer[float, 2]) -> float:
            return a[0, 1]
    """))
    probe = textwrap.dedent("""
        import torch, ppy, kernels
        t = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
        print(kernels.read(t))
        try:
            kernels.fill(t)
        except TypeError as error:
            print(error)
    """)
    result = runner.python("-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "0.0"
    assert lines[1].startswith("fill() argument 'a' must be Buffer[float, 2] (format 'd'): the tensor requires grad")


def test_a_torch_index_error_names_the_dimension_as_torch_does(runner, tmp_path):
    # Not a differential program: torch raises its IndexError through a C++
    # exception, which the sanitizer build's interpreters cannot run.
    pytest.importorskip("torch")
    (tmp_path / "kernels.ppy").write_text(textwrap.dedent("""
        from ppy import Buffer, f32

        def at(t: Buffer[f32, 2], i: int, j: int) -> float:
            return t[i, j]
    """))
    probe = textwrap.dedent("""
        import torch, ppy, kernels
        t = torch.zeros(2, 3)
        for i, j in ((2, 0), (0, 3), (0, -4), (-3, 0)):
            for f in (kernels.at, lambda t, i, j: t[i, j]):
                try:
                    f(t, i, j)
                except IndexError as error:
                    print(error)
    """)
    result = runner.python("-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 8
    assert lines[0::2] == lines[1::2]  # ppy's words are torch's
    assert lines[0] == "index 2 is out of bounds for dimension 0 with size 2"
