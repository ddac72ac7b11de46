"""Parallel kernels (issue 15): @ppy.nogil functions release the GIL while
they run typed code, and `for i in ppy.prange(...)` runs its iterations on
a pool of threads (PPY_NUM_THREADS). The differential programs
tests/programs/112_prange_loops.ppy and 113_nogil_calls.ppy compare them with
CPython; these tests check what a differential run cannot: that other threads
really run meanwhile, float reductions by thread count, errors reaching the
caller, Ctrl-C, fork, and the compile-time errors."""

import re
import textwrap

import pytest

MODES = ["0", "eager"]

KERNELS = '''
import ppy
from ppy import Buffer, prange


@ppy.nogil
def count_up(progress: Buffer[int], n: int) -> int:
    """Counts to n, publishing its progress in progress[0] now and then."""
    t = 0
    for i in range(n):
        t += i & 1
        if i % 4096 == 0:
            progress[0] = i
    progress[0] = n
    return t


def reductions(a: Buffer[float], b: Buffer[int]) -> str:
    s = 0.25
    d = 100.0
    p = 1.0
    lo = 1e300
    hi = -1e300
    whole = 0
    iprod = 1
    ilo = 10**18
    ihi = -(10**18)
    for i in prange(len(a)):
        s += a[i]
        d -= a[i] * 0.5
        p *= 1.0 + a[i] * 1e-6
        lo = min(lo, a[i])
        hi = max(hi, a[i])
        whole += b[i]
        iprod *= 1 + (b[i] == 3)
        ilo = min(b[i], ilo)
        ihi = max(ihi, b[i])
    return f"{s!r} {d!r} {p!r} {lo!r} {hi!r} {whole} {iprod} {ilo} {ihi}"


def gather(a: Buffer[float], index: Buffer[int]) -> float:
    s = 0.0
    for i in prange(len(index)):
        s += a[index[i]]
    return s


def spin(n: int) -> int:
    t = 0
    for i in prange(n):
        for j in range(1000):
            t += (i ^ j) & 1
    return t


def overflow(n: int) -> int:
    t = 0
    for i in prange(n):
        t += 2**62
    return t
'''

DATA = '''
import array, random
rng = random.Random(7)
a = array.array("d", [rng.uniform(-1.0, 1.0) for _ in range(30011)])
b = array.array("q", [rng.randrange(-1000, 1000) for _ in range(30011)])
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "kernels.ppy").write_text(KERNELS)
    return tmp_path


def _script(project, body):
    path = project / "main.py"
    path.write_text("import ppy\nimport kernels\n" + DATA + textwrap.dedent(body))
    return path


@pytest.mark.parametrize("mode", MODES)
def test_other_threads_run_while_a_nogil_call_runs(runner, project, mode):
    # The main thread watches the kernel's progress while it runs: with the GIL
    # held for the call, it could only see the value before or after it.
    n = 30_000_000 if mode == "0" else 600_000_000
    script = _script(project, f"""
        import threading
        progress = array.array("q", [0])
        kernels.count_up(progress, 10)
        progress[0] = 0
        seen = set()
        thread = threading.Thread(target=kernels.count_up, args=(progress, {n}))
        thread.start()
        while thread.is_alive():
            seen.add(progress[0])
        thread.join()
        print(len({{v for v in seen if 0 < v < {n}}}))
    """)
    result = runner.python(script, cwd=project, PPY_JIT=mode)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 2, result.stdout


def test_a_nogil_kernel_from_two_threads_matches_sequential_calls(runner, project):
    script = _script(project, """
        import threading
        progress = [array.array("q", [0]) for _ in range(2)]
        sequential = [kernels.count_up(progress[k], 2_000_000 + k) for k in range(2)]
        parallel = [None, None]
        def run(k):
            parallel[k] = kernels.count_up(progress[k], 2_000_000 + k)
        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(sequential == parallel, parallel, list(progress[0]) + list(progress[1]))
    """)
    for mode in MODES:
        result = runner.python(script, cwd=project, PPY_JIT=mode)
        assert result.stdout == "True [1000000, 1000000] [2000000, 2000001]\n", result.stderr


@pytest.mark.parametrize("mode", MODES)
def test_reductions_are_sequential_with_one_thread_and_deterministic_with_more(runner, project, mode):
    script = _script(project, "print(kernels.reductions(a, b))\n")
    expected = runner.python(script, cwd=project, PPY_IMPORT="python")
    assert expected.returncode == 0, expected.stderr
    one = runner.python(script, cwd=project, PPY_JIT=mode, PPY_NUM_THREADS="1")
    assert one.stdout == expected.stdout, one.stderr
    reference = [float(x) for x in expected.stdout.split()[:5]]
    for threads in ("2", "4"):
        first = runner.python(script, cwd=project, PPY_JIT=mode, PPY_NUM_THREADS=threads)
        again = runner.python(script, cwd=project, PPY_JIT=mode, PPY_NUM_THREADS=threads)
        assert first.returncode == 0, first.stderr
        assert first.stdout == again.stdout
        fields = first.stdout.split()
        # Ints, min and max are exact in any grouping; sums and products may
        # differ from the sequential ones in the last bits.
        assert fields[3:] == expected.stdout.split()[3:]
        for got, want in zip(fields[:3], reference[:3]):
            assert float(got) == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_an_index_error_in_an_iteration_reaches_the_caller(runner, project, mode):
    script = _script(project, """
        import traceback
        index = array.array("q", [i % 100 for i in range(20000)])
        index[12345] = 10**6
        try:
            kernels.gather(a, index)
        except IndexError:
            traceback.print_exc()
        index[12345] = 3
        print(kernels.gather(a, index) == sum(a[i % 100] for i in range(20000)) or "close")
    """)
    result = runner.python(script, cwd=project, PPY_JIT=mode, PPY_NUM_THREADS="2")
    assert result.returncode == 0, result.stderr
    assert re.search(r'File ".*kernels.ppy", line 44, in gather\n.*s \+= a\[index\[i\]\]', result.stderr), result.stderr
    assert result.stderr.rstrip().endswith("IndexError: array index out of range")
    assert result.stdout.strip() in ("True", "close")


@pytest.mark.parametrize("mode", MODES)
def test_ctrl_c_stops_a_long_prange_loop(runner, project, mode):
    script = _script(project, """
        import os, signal, threading, time
        kernels.spin(10)
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        try:
            kernels.spin(10**9)
        except KeyboardInterrupt:
            print("interrupted", time.monotonic() - started < 10)
    """)
    result = runner.python(script, cwd=project, PPY_JIT=mode, timeout=60)
    assert result.stdout == "interrupted True\n", result.stderr


def test_an_int_reduction_that_overflows_raises(runner, project):
    script = _script(project, """
        for n in (1, 2, 5):
            try:
                print(kernels.overflow(n))
            except OverflowError as error:
                print("OverflowError", "does not fit in 64 bits" in str(error))
    """)
    for threads in ("1", "2"):
        result = runner.python(script, cwd=project, PPY_NUM_THREADS=threads)
        assert result.stdout == "4611686018427387904\nOverflowError True\nOverflowError True\n", result.stderr


def test_a_forked_child_runs_prange_loops_on_threads_of_its_own(runner, project):
    script = _script(project, """
        import os
        before = kernels.reductions(a, b)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if kernels.reductions(a, b) == before else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), kernels.reductions(a, b) == before)
    """)
    result = runner.python(script, cwd=project, PPY_NUM_THREADS="2", timeout=60)
    assert result.stdout == "0 True\n", result.stderr


BAD = '''
import ppy
from ppy import Buffer, prange


def prints(n: int) -> None:
    for i in prange(n):
        print(i)


def returns(a: Buffer[float]) -> float:
    for i in prange(len(a)):
        if a[i] > 0.0:
            return a[i]
    return 0.0


def breaks(a: Buffer[float]) -> int:
    for i in prange(len(a)):
        if a[i] > 0.0:
            break
    return 0


def reads_its_sum(a: Buffer[float]) -> float:
    s = 0.0
    for i in prange(len(a)):
        s += a[i]
        a[i] = s
    return s


def mixed(a: Buffer[float]) -> float:
    s = 1.0
    for i in prange(len(a)):
        s += a[i]
        s *= 2.0
    return s


@ppy.nogil
def loops_on_objects(n: int) -> int:
    items = []
    for i in range(n):
        items.append(i)
    return len(items)


@ppy.nogil
def falls_back(n: int) -> int:
    return sum([i for i in range(n)])


@ppy.nogil
def fine(n: int) -> str:
    t = 0
    for i in range(n):
        t += i
    return str(t)


@ppy.nogil
def moves_an_object(n: int, o) -> int:
    t = 0
    for i in range(n):
        last = o
        t += i
    return t
'''


def test_code_that_cannot_run_without_the_gil_is_an_error_at_its_line(runner, tmp_path):
    (tmp_path / "bad.ppy").write_text(BAD)
    result = runner.ppy("check", "bad.ppy", cwd=tmp_path)
    assert result.returncode != 0
    errors = re.findall(r"^bad\.ppy:(\d+):(\d+): error: (.*)$", result.stdout + result.stderr, re.M)
    by_line = {int(line): message for line, _, message in errors}
    assert by_line[8].startswith("this cannot run in a prange loop: it needs Python objects")
    assert by_line[14] == "a prange loop cannot return: its iterations run in parallel"
    assert by_line[21] == "a prange loop cannot break: its iterations run in parallel"
    assert by_line[29].startswith("the prange loop reads 's', which it reduces")
    assert by_line[37] == "'s' is reduced with two different operations in a prange loop"
    assert by_line[45].startswith("@ppy.nogil function 'loops_on_objects' needs the GIL in a loop here")
    assert "@ppy.nogil function 'falls_back' cannot be compiled: it uses a comprehension" in by_line[51]
    # (MOVE_O, which machine code runs, moves references: it needs the GIL.)
    assert by_line[66].startswith("@ppy.nogil function 'moves_an_object' needs the GIL in a loop here")
    assert "'moves_an_object' cannot be compiled" in by_line[63]
    assert not any(line >= 54 and line not in (63, 66) for line in by_line), errors


def test_importing_a_nogil_function_that_cannot_release_the_gil_fails(runner, tmp_path):
    (tmp_path / "bad.ppy").write_text(BAD)
    (tmp_path / "main.py").write_text("import ppy\nimport bad\n")
    result = runner.python(tmp_path / "main.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "ppy.CompileError: @ppy.native or @ppy.nogil function(s) loops_on_objects, falls_back" in result.stderr


def test_plain_python_runs_prange_as_range_and_nogil_as_nothing(runner, project):
    script = _script(project, """
        print(ppy.prange(2, 9, 3) == range(2, 9, 3), ppy.nogil(len) is len)
        print(kernels.reductions(a, b) == kernels.reductions(a, b))
    """)
    result = runner.python(script, cwd=project, PPY_IMPORT="python")
    assert result.stdout == "True True\nTrue\n", result.stderr


def test_a_prange_target_must_be_a_name_and_a_reduction_a_number(runner, tmp_path):
    (tmp_path / "bad.ppy").write_text(textwrap.dedent('''\
        from ppy import prange


        def tuple_target(n: int) -> int:
            t = 0
            for i, j in prange(n):
                t += 1
            return t


        def object_sum(n: int) -> int:
            items = []
            for i in prange(n):
                items += [i]
            return len(items)
    '''))
    result = runner.ppy("check", "bad.ppy", cwd=tmp_path)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "bad.ppy:6:9: error: a prange loop's target must be a name" in output
    assert "bad.ppy:14:9: error: the prange loop reduces 'items', which must be an int or a float, not object" in output


MIN_MAX = '''
import math
from ppy import Buffer, prange


def float_max_first(a: Buffer[float]) -> float:
    m = -math.inf
    for i in prange(len(a)):
        m = max(m, a[i])
    return m


def float_min_first(a: Buffer[float]) -> float:
    m = math.inf
    for i in prange(len(a)):
        m = min(m, a[i])
    return m


def int_max_second(a: Buffer[int]) -> int:
    m = -(2**63)
    for i in prange(len(a)):
        m = max(a[i], m)
    return m


def float_max_second(a: Buffer[float]) -> float:
    m = -math.inf
    for i in prange(len(a)):
        m = max(a[i], m)
    return m
'''


def test_a_float_min_or_max_reduction_must_name_the_reduction_first(runner, tmp_path):
    """Python's max(e, m) keeps the later of 0.0 and -0.0 and restarts after a
    NaN: chunks' partials cannot combine to that, so ppy refuses it for
    floats (the function runs as Python), and takes max(m, e), and an int's
    max(e, m), whose results match the sequential loop at any thread count."""
    (tmp_path / "minmax.ppy").write_text(MIN_MAX)
    check = runner.ppy("check", "minmax.ppy", cwd=tmp_path)
    errors = re.findall(r"^minmax\.ppy:(\d+):\d+: error: (.*)$", check.stdout + check.stderr, re.M)
    assert [line for line, _ in errors] == ["30"], check.stdout + check.stderr
    assert errors[0][1].startswith("the prange loop reduces the float 'm' as max(e, m): write max(m, e)")
    (tmp_path / "main.py").write_text(textwrap.dedent('''\
        import math
        import numpy as np
        import ppy
        import minmax

        nan = math.nan
        for values in ([0.0, -0.0], [-0.0, 0.0], [5.0, 6.0, nan, 1.0, 0.5, 7.0], [nan, 1.0, 2.0, nan],
                       [3.0, -0.0, 0.0, nan, 3.0, -1.0, 2.0, 0.0] * 50):
            a = np.array(values)
            print(repr(float(minmax.float_max_first(a))), repr(float(minmax.float_min_first(a))),
                  repr(float(minmax.float_max_second(a))))
        print(int(minmax.int_max_second(np.arange(-500, 1000, 3, dtype=np.int64)[::-1].copy())))
    '''))
    expected = runner.python(tmp_path / "main.py", cwd=tmp_path, PPY_IMPORT="python")
    assert expected.returncode == 0, expected.stderr
    for threads in ("1", "2", "3", "7"):
        for mode in MODES:
            result = runner.python(tmp_path / "main.py", cwd=tmp_path, PPY_JIT=mode, PPY_NUM_THREADS=threads)
            assert result.stdout == expected.stdout, (threads, mode, result.stderr)
