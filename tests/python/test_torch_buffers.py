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


CHANGING = textwrap.dedent("""
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

    def poke(callback: object, i: int) -> int:
        if i == 2:
            callback()
        return i

    def write_through(xs: Buffer[float], callback: object, n: int) -> float:
        # The callback runs inside a typed callee, in the middle of a loop
        # whose bounds checks machine code hoists.
        s: float = 0.0
        for i in range(n):
            xs[poke(callback, i)] = 3.0
            s += xs[i]
        return s
""")

CHANGING_MAIN = textwrap.dedent("""
    import gc, ppy, torch, changing
    def run(kernel, how, *args):
        t = torch.zeros(1 << 16, dtype=torch.float64)
        def callback():
            other = torch.full((4,), 7.0, dtype=torch.float64)
            if how == "set_":
                t.set_(other)
            elif how == "data":
                t.data = other
            elif how == "grow":
                t.resize_(1 << 20)  # reallocates: the old memory is freed
            elif how == "shrink":
                t.resize_(1)
            elif how == "int":
                t.set_(torch.zeros(8, dtype=torch.int64))  # torch refuses: RuntimeError
            elif how == "2-D":
                t.resize_(2, 2)
            gc.collect()
            torch.zeros(1 << 16, dtype=torch.float64).fill_(3.0)  # reuse freed memory, if any
        try:
            result = float(kernel(t, callback, *args))
        except Exception as error:
            result = type(error).__name__
        print(kernel.__name__, how, result, t.shape, float(t[:8].sum()))
    for how in ("set_", "data", "grow", "shrink", "int", "2-D"):
        run(changing.write_around, how)
        run(changing.write_through, how, 6)
    print("tier", ppy.tier(changing.write_through))
""")


def test_a_tensor_changed_during_a_call_is_followed_or_refused(runner, tmp_path):
    """A callback that re-points (`t.set_`, `t.data =`) or resizes the tensor a
    call borrowed: the call goes on with the tensor's new memory and length, as
    plain Python's indexing would (an IndexError where it shrank), or raises
    BufferError if the tensor no longer fits the parameter; never a write into
    freed memory (the sanitizer build would see one). Machine code included:
    the callback runs inside a typed call in a loop with hoisted bounds."""
    (tmp_path / "changing.ppy").write_text(CHANGING)
    (tmp_path / "main.py").write_text(CHANGING_MAIN)
    python = runner.python("main.py", cwd=tmp_path, PPY_IMPORT="python")
    assert python.returncode == 0, python.stderr
    lines = python.stdout.splitlines()
    assert lines[-1] == "tier python"
    for jit in ("0", "eager"):
        result = runner.python("main.py", cwd=tmp_path, PPY_JIT=jit)
        assert result.returncode == 0, result.stderr
        got = result.stdout.splitlines()
        assert got[-1] == ("tier jit" if jit == "eager" else "tier vm"), result.stdout
        # A tensor made 2-D no longer fits Buffer[float]: Python goes on
        # (indexing rows), ppy raises BufferError.
        for expected, actual in zip(lines[:-1], got[:-1]):
            if " 2-D " in expected:
                assert " BufferError " in actual, (expected, actual)
            else:
                assert actual == expected, (jit, expected, actual)


SHRINKING = textwrap.dedent("""
    from ppy import Buffer

    HOOKS = []

    def hook(i: int) -> int:
        for h in HOOKS:
            h()
        return i

    def bump(i: int) -> int:
        if i == 2:
            hook(i)
        return i

    def scan(xs: Buffer[float], k: int) -> float:
        # `while i < n` with n = len(xs) proves xs[i] in machine code. The
        # hook shrinks the tensor inside a typed call: machine code leaves,
        # and when the interpreter enters it again at the loop, n still holds
        # the old length, which must prove nothing.
        n = len(xs)
        i = 0
        s = 0.0
        while i < n:
            if i >= k:
                s += xs[i]
            if i < 3:
                bump(i)
            i += 1
        return s
""")

SHRINKING_MAIN = textwrap.dedent("""
    import ppy, torch, shrinking
    for how in ("set_", "resize_"):
        t = torch.ones(100000, dtype=torch.float64)
        if how == "set_":
            shrinking.HOOKS[:] = [lambda: t.set_(torch.full((3,), 2.0, dtype=torch.float64))]
        else:
            shrinking.HOOKS[:] = [lambda: t.resize_(3)]
        try:
            print(how, shrinking.scan(t, 50000))
        except IndexError as error:
            print(how, "IndexError", error)
""")


def test_a_length_a_loop_relies_on_is_checked_again_when_machine_code_is_entered(runner, tmp_path):
    """A `while i < len(xs)` loop's loads go unchecked in machine code; a
    tensor shrunk by a callback makes every later entry into that code check
    the length the loop holds against the tensor's (a stale one read far past
    the new memory before)."""
    (tmp_path / "shrinking.ppy").write_text(SHRINKING)
    (tmp_path / "main.py").write_text(SHRINKING_MAIN)
    python = runner.python("main.py", cwd=tmp_path, PPY_IMPORT="python")
    assert python.returncode == 0, python.stderr
    assert python.stdout.count("IndexError") == 2, python.stdout
    for jit in ("0", "eager"):
        result = runner.python("main.py", cwd=tmp_path, PPY_JIT=jit)
        assert result.returncode == 0, result.stderr
        assert result.stdout == python.stdout, (jit, result.stdout)


GROWN_INDEXES = textwrap.dedent("""
    import ppy, torch
    from ppy import Buffer

    def read1(a: Buffer[float], k: int) -> float:
        a[0] = 1.0
        big = k * k * k
        return a[big]

    def store1(a: Buffer[float], k: int) -> None:
        a[0] = 2.0
        big = -(k * k * k)
        a[big] = 3.0

    def read2(m: Buffer[float, 2], k: int) -> float:
        m[0, 0] = 5.0
        big = k * k * k
        return m[0, big]

    for f, make in [(read1, lambda: torch.zeros(3, dtype=torch.float64)),
                    (store1, lambda: torch.zeros(3, dtype=torch.float64)),
                    (read2, lambda: torch.zeros(2, 2, dtype=torch.float64))]:
        a = make()
        try:
            print(f.__name__, f(a, 3000000))
        except (IndexError, ValueError, OverflowError) as e:
            print(f.__name__, type(e).__name__, e)
        print("  kept", a.flatten().tolist())
""")


def test_a_grown_index_into_a_tensor_raises_torchs_error(runner, tmp_path):
    """An index that grew past 64 bits (after an effect, so the frame keeps
    the Python int) refused as torch refuses it, ValueError "Overflow when
    unpacking long long", with the stores before it kept: the torch part of
    tests/programs/224, whose reference run torch does not survive under the
    sanitizers."""
    (tmp_path / "grown.ppy").write_text(GROWN_INDEXES)
    expected = runner.python("grown.ppy", cwd=tmp_path, PPY_IMPORT="python")
    assert expected.returncode == 0 and "ValueError Overflow when unpacking long long" in expected.stdout, expected
    for mode in ({"PPY_JIT": "0"}, {"PPY_JIT": "eager"}):
        actual = runner.ppy("run", "grown.ppy", cwd=tmp_path, **mode)
        assert (actual.returncode, actual.stdout) == (0, expected.stdout), actual.stderr
