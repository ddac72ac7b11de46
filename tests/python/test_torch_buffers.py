"""CPU torch tensors as Buffer arguments: what autograd must see and what ppy
must refuse rather than read wrongly."""

import textwrap

import pytest

pytest.importorskip("torch")

KERNELS = textwrap.dedent("""
    from ppy import Buffer, u16

    def fill(xs: Buffer[float], v: float) -> None:
        for i in range(len(xs)):
            xs[i] = v

    def total(xs: Buffer[float]) -> float:
        s: float = 0.0
        for i in range(len(xs)):
            s += xs[i]
        return s

    def total16(xs: Buffer[u16]) -> int:
        s: int = 0
        for i in range(len(xs)):
            s += xs[i]
        return s
""")

MAIN = textwrap.dedent("""
    import ppy, torch, kernels
    x = torch.ones(3, dtype=torch.float64)
    w = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = (x * w).sum()
    before = x._version
    kernels.fill(x, 5.0)
    print("bumped", x._version > before)
    try:
        y.backward()
    except RuntimeError as error:
        print("backward refused:", "modified by an inplace operation" in str(error))
    try:
        kernels.fill(w, 1.0)
    except TypeError as error:
        print("grad refused:", "requires grad" in str(error))
    with torch.no_grad():
        kernels.fill(w, 2.0)
    print("no_grad write", w.tolist())
    print("read of a grad tensor", kernels.total(w))
    try:
        kernels.total(torch.ones(3, dtype=torch.float64)._neg_view())
    except TypeError as error:
        print("neg refused:", "negated" in str(error))
    print("uint16", kernels.total16(torch.tensor([1, 2, 65535], dtype=torch.uint16)))
""")


def test_writes_to_tensors_respect_autograd(runner, tmp_path):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    (tmp_path / "main.py").write_text(MAIN)
    result = runner.python("main.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "bumped True",
        "backward refused: True",
        "grad refused: True",
        "no_grad write [2.0, 2.0, 2.0]",
        "read of a grad tensor 6.0",
        "neg refused: True",
        "uint16 65538",
    ]


def test_a_callback_that_repoints_the_tensor_cannot_free_the_memory_in_use(runner, tmp_path):
    """The call holds the tensor's storage: after `t.set_(...)` or `t.data = ...`
    in a callback, the old memory stays allocated until the call returns
    (valgrind and the sanitizer build would see a use after free otherwise)."""
    (tmp_path / "repoint.ppy").write_text(textwrap.dedent("""
        from ppy import Buffer

        def write_around(xs: Buffer[float], callback: object) -> float:
            for i in range(len(xs)):
                xs[i] = 1.0
            callback()
            s: float = 0.0
            for i in range(len(xs)):
                xs[i] = 2.0
                s += xs[i]
            return s
    """))
    probe = textwrap.dedent("""
        import gc, ppy, torch, repoint
        for how in ("set_", "data"):
            t = torch.zeros(1 << 16, dtype=torch.float64)
            def callback():
                other = torch.full((4,), 7.0, dtype=torch.float64)
                if how == "set_":
                    t.set_(other)
                else:
                    t.data = other
                gc.collect()
                torch.zeros(1 << 16, dtype=torch.float64).fill_(3.0)  # reuse freed memory, if any
            print(how, repoint.write_around(t, callback), t.tolist())
    """)
    result = runner.python("-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The writes after the callback land in the memory the call borrowed,
    # never in freed memory; the tensor itself now shows the new storage.
    assert lines == [f"{how} {2.0 * (1 << 16)} [7.0, 7.0, 7.0, 7.0]" for how in ("set_", "data")], result.stdout
