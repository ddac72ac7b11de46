"""`import ppy` and the two loaders, on the seed's features.ppy."""

import re
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import communicate, spawn, trace_counts
from test_cli import SHAPES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "31_torchrun"
SEED_LINE = "checksum=-2083.056718 outside=134 counts=[452, 3853, 11555, 16790, 16661, 11022, 3174, 359]\n"


def test_features_prints_the_seed_line_under_python_and_ppy(runner):
    plain = runner.python("features.ppy", cwd=EXAMPLE)
    native = runner.ppy("run", "features.ppy", cwd=EXAMPLE)
    assert plain.stdout == SEED_LINE, plain.stderr
    assert native.stdout == SEED_LINE, native.stderr


PROBE = """
import ppy
import features
print(type(features.__loader__).__name__)
print(ppy.tier(features.standardize), ppy.tier(features.bucketize), ppy.tier(features._check))
features._check()
"""


def test_import_gives_a_generated_module_whose_kernels_run_on_the_vm(runner):
    result = runner.python("-c", PROBE, cwd=EXAMPLE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["GeneratedLoader", "vm vm vm", SEED_LINE.strip()]


def test_ppy_import_python_gives_a_source_module_with_the_same_results(runner):
    result = runner.python("-c", PROBE, cwd=EXAMPLE, PPY_IMPORT="python")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["PpySourceLoader", "python python python", SEED_LINE.strip()]


def test_the_second_import_is_served_from_the_cache(runner):
    runner.python("-c", "import ppy, features", cwd=EXAMPLE)
    log = (runner.cache_dir / "build.log").read_text()
    assert log.count("module=features") == 1
    runner.python("-c", "import ppy, features", cwd=EXAMPLE)
    assert (runner.cache_dir / "build.log").read_text() == log
    entries = sorted(p.name for p in runner.cache_dir.iterdir() if p.suffix == ".ppyc")
    assert entries == [runner.entry(EXAMPLE / "features.ppy").name]
    assert entries[0].endswith(f".{sys.implementation.cache_tag}.ppyc")


def test_same_named_modules_of_two_folders_keep_an_entry_each(runner, tmp_path):
    for folder, value in (("a", 1), ("b", 2)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "utils.ppy").write_text(f"def one() -> int:\n    return {value}\n")
    for _ in range(2):
        for folder, value in (("a", 1), ("b", 2)):
            result = runner.python("-c", "import ppy, utils; print(utils.one())", cwd=tmp_path / folder)
            assert result.stdout == f"{value}\n", result.stderr
    # Two builds in all: neither rebuilt the other's entry.
    assert (runner.cache_dir / "build.log").read_text().count("module=utils") == 2


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_runtime_errors_show_the_ppy_file_and_line(runner, tmp_path):
    _write(tmp_path, "kernel.ppy", """\
        def ratio(a: int, b: int) -> int:
            scaled = a * 10
            return scaled // b

        def outer(a: int) -> int:
            return ratio(a, 0) + 1
        """)
    result = runner.python("-c", "import ppy, kernel; kernel.outer(3)", cwd=tmp_path)
    assert result.returncode == 1
    assert "ZeroDivisionError: integer division or modulo by zero" in result.stderr
    assert f'File "{tmp_path / "kernel.ppy"}", line 3, in ratio' in result.stderr
    assert f'File "{tmp_path / "kernel.ppy"}", line 6, in outer' in result.stderr
    # Innermost last, as Python prints it.
    assert result.stderr.index("in outer") < result.stderr.index("in ratio")


def test_int_overflow_raises_naming_the_file_and_line(runner, tmp_path):
    """An annotated int local is 64-bit: a larger value raises OverflowError
    naming the file and line. An unannotated int grows as Python's does: a
    pure call deoptimizes (reruns as Python), and after an effect (here a
    store into a buffer, which a rerun would repeat) the int becomes a Python
    int in place (tests/programs/94_ints_that_outgrow_64_bits.ppy and
    110_ints_grow_after_effects.ppy)."""
    _write(tmp_path, "grow.ppy", """\
        from ppy import Buffer

        def square(x: int) -> int:
            y: int = x * x
            return y % 1000003

        def square_after_store(xs: Buffer[float], x: int):
            xs[0] = 1.0
            return x * x

        def square_pure(x: int):
            return x * x // 1
        """)
    for jit in ("0", "eager"):
        result = runner.python("-c", "import array, ppy, grow; grow.square(2**40)", cwd=tmp_path, PPY_JIT=jit)
        assert "OverflowError: " in result.stderr, result.stderr
        assert f"{tmp_path / 'grow.ppy'}:4: int result of * does not fit in 64 bits" in result.stderr
        call = "xs = array.array('d', [0.0]); print(grow.square_after_store(xs, 2**40), xs[0])"
        result = runner.python("-c", f"import array, ppy, grow; {call}", cwd=tmp_path, PPY_JIT=jit)
        assert result.stdout == f"{2**80} 1.0\n", result.stderr
    result = runner.python("-c", "import ppy, grow; print(grow.square_pure(2**40), ppy.tier(grow.square_pure))",
                           cwd=tmp_path)
    assert result.stdout == f"{2**80} vm\n", result.stderr


def test_a_syntax_error_is_cpythons_own(runner, tmp_path):
    _write(tmp_path, "broken.ppy", "def f(:\n    pass\n")
    result = runner.python("-c", "import ppy, broken", cwd=tmp_path)
    assert "SyntaxError" in result.stderr
    assert 'broken.ppy", line 1' in result.stderr


def test_type_errors_warn_and_the_function_runs_as_python(runner, tmp_path):
    _write(tmp_path, "loose.ppy", """\
        def f(n: int) -> int:
            total: int = 0
            total += 0.5
            return n
        """)
    result = runner.python("-c", "import ppy, loose; print(loose.f(4), ppy.tier(loose.f))", cwd=tmp_path)
    assert result.stdout == "4 python\n"
    assert "loose.ppy:3:5: warning: 'total' is int" in result.stderr
    quiet = runner.python("-c", "import ppy, loose; print(loose.f(4))", cwd=tmp_path, PPY_QUIET="1")
    assert quiet.stderr == ""


def test_native_turns_a_fallback_into_an_import_error(runner, tmp_path):
    _write(tmp_path, "strict.ppy", """\
        import ppy

        @ppy.native
        def f(xs: list) -> int:
            return len([x for x in xs])
        """)
    result = runner.python("-c", "import ppy, strict", cwd=tmp_path)
    assert "ppy.CompileError" in result.stderr
    assert "cannot be compiled: it uses a comprehension" in result.stderr


def test_arguments_that_do_not_fit_the_annotations_run_the_python_code(runner, tmp_path):
    _write(tmp_path, "exact.ppy", """\
        def half(x: float) -> float:
            return x / 2

        def twice(n: int) -> int:
            return n * 2
        """)
    result = runner.python(
        "-c", "import ppy, exact; print(exact.half(3.0), exact.half(3), exact.twice(2**70), exact.twice(True))",
        cwd=tmp_path)
    assert result.stdout == "1.5 1.5 2361183241434822606848 2\n", result.stderr


def test_a_buffer_of_the_wrong_format_names_the_parameter(runner, tmp_path):
    _write(tmp_path, "sums.ppy", """\
        from ppy import Buffer

        def total(xs: Buffer[float]) -> float:
            s = 0.0
            for x in xs:
                s += x
            return s
        """)
    result = runner.python("-c", "import ppy, array, sums; sums.total(array.array('f', [1.0]))", cwd=tmp_path)
    assert "TypeError: total() argument 'xs' must be Buffer[float] (format 'd'), got a buffer of format 'f'" in (
        result.stderr)


def test_a_char_buffer_is_not_taken_for_bytes(runner, tmp_path):
    # Format 'c' elements are one-byte bytes objects in Python, not ints.
    _write(tmp_path, "first.ppy", """\
        from ppy import Buffer, u8

        def first(data: Buffer[u8]) -> int:
            return data[0]
        """)
    result = runner.python("-c", "import ppy, first; first.first(memoryview(b'ab').cast('c'))", cwd=tmp_path)
    assert "TypeError: first() argument 'data' must be Buffer[u8]" in result.stderr
    assert "got a buffer of format 'c' (itemsize 1)" in result.stderr


def test_a_negative_float_to_a_fractional_power_is_refused(runner, tmp_path):
    # CPython gives a complex number, which a typed float result cannot hold.
    _write(tmp_path, "power.ppy", """\
        def root(x: float, y: float) -> float:
            return x ** y - 1.0
        """)
    result = runner.python("-c", "import ppy, power; print(power.root(4.0, 0.5)); power.root(-8.0, 0.5)",
                           cwd=tmp_path)
    assert result.stdout == "1.0\n"
    assert ("ValueError: a negative float to a fractional power is a complex number in Python, "
            "which this typed float power cannot hold") in result.stderr
    assert 'power.ppy", line 2, in root' in result.stderr


def test_a_bool_stored_into_an_int_local_is_refused(runner, tmp_path):
    # CPython would keep True (and print it); an int local would print 1.
    _write(tmp_path, "unbox.ppy", """\
        def as_int(o) -> int:
            n: int = o
            return n
        """)
    result = runner.python("-c", "import ppy, unbox; print(unbox.as_int(7)); unbox.as_int(True)", cwd=tmp_path)
    assert result.stdout == "7\n"
    assert ("TypeError: expected an int, got bool (ppy does not turn bools into ints implicitly; "
            "convert with int())") in result.stderr
    assert 'unbox.ppy", line 2, in as_int' in result.stderr


SUBCLASS_VALUES = """\
    def as_int(xs, i: int) -> int:
        n: int = xs[i]
        return n + 1

    def as_float(xs, count: int) -> float:
        t: float = 0.0
        for i in range(count):
            v: float = xs[i % len(xs)]
            t += v / (i + 1)
        return t
    """

SUBCLASS_CALLS = """\
import enum, ppy, traceback, unbox
class Color(enum.IntEnum):
    RED = 1
class Noisy(float):
    def __truediv__(self, other):
        return 1000.0
print(unbox.as_int([4, 5], 1), unbox.as_float([2.0, 4.0], 4))
for call in (lambda: unbox.as_int([Color.RED], 0), lambda: unbox.as_float([2.0, Noisy(1.0)], 4)):
    try:
        call()
    except TypeError as e:
        print(e, traceback.extract_tb(e.__traceback__)[-1].lineno)
"""


def test_int_and_float_subclasses_stored_into_typed_locals_are_refused(runner, tmp_path):
    # CPython keeps an IntEnum member (its repr) and a float subclass (its
    # operators; numpy.float64 divides by zero into inf): a typed local would
    # silently drop them, so it refuses them, as it refuses a bool.
    _write(tmp_path, "unbox.ppy", SUBCLASS_VALUES)
    result = runner.python("-c", SUBCLASS_CALLS, cwd=tmp_path)
    assert result.stdout.splitlines() == [
        "6 5.666666666666667",
        "expected an int, got Color (a typed int holds an exact int, not a subclass; convert with int()) 2",
        "expected a float, got Noisy (a typed float holds an exact float, not a subclass; convert with float()) 8",
    ], result.stderr


def test_defaults_and_code_of_a_compiled_function_cannot_be_changed(runner, tmp_path):
    # Its calls bind the defaults it was compiled with: a change would be
    # silently ignored, so it raises; other attributes are set as usual.
    _write(tmp_path, "defaults.ppy", """\
        def scale(a: float, b: float = 2.0) -> float:
            return a * b
        """)
    script = textwrap.dedent("""\
        import ppy, defaults
        for name in ("__defaults__", "__kwdefaults__", "__code__"):
            try:
                setattr(defaults.scale, name, None)
            except AttributeError as e:
                print(e)
        defaults.scale.note = "kept"
        print(defaults.scale(1.5), defaults.scale.__defaults__, defaults.scale.note)
        """)
    result = runner.python("-c", script, cwd=tmp_path)
    assert result.stdout.splitlines() == [
        f"cannot change {name} of the compiled function scale: its calls use what it was compiled with "
        "(rebind the name to a new function instead)" for name in ("__defaults__", "__kwdefaults__", "__code__")
    ] + ["3.0 (2.0,) kept"], result.stderr


def test_import_ppy_is_cheap_and_loads_no_compiler(runner):
    result = runner.python("-c", "import sys, ppy; print('ppy._ppy' in sys.modules, 'ast' in sys.modules)")
    assert result.stdout == "False False\n"


def test_ctrl_c_interrupts_a_long_native_loop(runner, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    _write(tmp_path, "spin.ppy", """\
        from ppy import Buffer

        def spin(n: int) -> int:
            total = 0
            for i in range(n):
                total += i % 7
            return total

        def wait() -> int:
            k = 0
            while True:
                k += 1

        def nested(xs: Buffer[int], n: int) -> int:
            # The loop over i runs in chunks that may take every tick left
            # before the check; the while loop inside must still check.
            total = 0
            for i in range(len(xs)):
                k = 0
                while k < n:
                    k += xs[i] % 3 + 1
                total += k
            return total

        def stride(n: int, s: int) -> int:
            # A while loop that adds on every way around runs in chunks of
            # ticks, checking between them (FindWhileLoops).
            k = 0
            while k < n:
                k += s
            return k

        def nested_short(n: int) -> int:
            # Short chunked loops inside a long one: the long one counts.
            total = 0
            for i in range(n):
                k = 0
                while k < 5:
                    k += 1
                total += k
            return total

        def nested_while(n: int) -> int:
            # A while loop with loops inside runs in chunks of its own
            # (FindNestedWhileChunks), checking between them.
            i = 0
            total = 0
            while i < n:
                i += 1
                k = 0
                while k < 3:
                    k += 1
                while i < n and i % 7 != 0:
                    i += 1
                total += k
            return total
        """)
    for call in ("spin.spin(10**15)", "spin.wait()", "spin.nested(__import__('array').array('q', [1] * 5000), 10**18)",
                 "spin.stride(10**18, 1)", "spin.stride(10**18, 3)", "spin.nested_short(10**15)",
                 "spin.nested_while(10**18)"):
        # spawn gives the child SIGINT's default disposition, so its Python
        # installs the KeyboardInterrupt handler whatever this run inherited.
        process = spawn(
            [sys.executable, "-c", f"import ppy, spin; print('ready', flush=True); {call}"], cwd=tmp_path,
            env=runner.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout.readline() == "ready\n"
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, stderr = communicate(process, 10)
        assert time.monotonic() - started < 2.0
        # CPython ends an unhandled KeyboardInterrupt by dying of SIGINT.
        assert process.returncode == -signal.SIGINT
        assert stderr.rstrip().endswith("KeyboardInterrupt"), stderr
        assert "spin.ppy" in stderr


def test_trace_reports_the_cache_the_tiers_and_a_summary(runner):
    first = runner.ppy("run", "--trace", "features.ppy", cwd=EXAMPLE)
    assert first.stdout == SEED_LINE
    assert "ppy trace: module __main__ (features.ppy): cache miss (no entry), built into the cache in" in first.stderr
    for name in ("standardize", "bucketize", "_check"):
        assert f"ppy trace:   __main__.{name}: vm (machine code once hot)\n" in first.stderr
    second = runner.ppy("run", "--trace", "features.ppy", cwd=EXAMPLE)
    assert "ppy trace: module __main__ (features.ppy): cache hit, loaded in" in second.stderr
    summary = second.stderr.split("summary:")[1]
    assert "__main__.standardize" in summary and "1 calls" in summary and "jit entries" in summary


def test_trace_reports_side_exits_and_deoptimizations(runner, tmp_path):
    """The summary says which functions' machine code handed calls back to
    the interpreter, and which deoptimized (an int past 64 bits before any
    effect: the call ran as Python), how often, and where last; a function
    that did neither is not listed there, nor one whose machine code
    returns None through the interpreter (a return, not a side exit)."""
    main = _write(tmp_path, "main.ppy", """\
        from array import array

        from ppy import Buffer

        def grow(n: int) -> int:
            t = 1
            for i in range(n):
                t = t * 3
            return t

        def steady(n: int) -> int:
            t = 0
            for i in range(n):
                t += i
            return t

        def fill(xs: Buffer[float], n: int) -> None:
            for i in range(n):
                xs[i] = i * 0.5

        xs = array("d", [0.0] * 10)
        fill(xs, 10)
        fill(xs, 10)
        print(grow(10), grow(50), grow(60), steady(100), sum(xs))
        """)
    plain = runner.python(main, cwd=tmp_path)
    traced = runner.ppy("run", "--trace", main, cwd=tmp_path, PPY_JIT="eager")
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout, traced.stderr
    section = traced.stderr.split("summary: side exits")[1]
    rows = [line.split() for line in section.splitlines()[1:] if line.startswith("ppy trace:   ")]
    assert [row[2] for row in rows] == ["__main__.grow"], section
    assert re.search(r"__main__\.grow\s+2 side exits \(last: line 8, at MUL_I\)\s+2 deoptimizations \(last: "
                     r"line 8, an int result of \* beyond 64 bits\)", section), section
    assert re.search(r"__main__\.fill\s+2 calls\s+\S+ ms\s+2 jit entries", traced.stderr), traced.stderr


def test_name_like_string_constants_are_interned(runner, tmp_path):
    """As CPython's compiler does, a compiled module's name-like string
    constants (attribute, global and method names among them) are the
    interned strings, so that dict lookups by them compare by identity; other
    strings are not interned (by either)."""
    _write(tmp_path, "names.ppy", """\
        import ppy

        @ppy.native
        def constants():
            return "attribute_name_42", "not a name!"
        """)
    probe = ("import sys, ppy, names\n"
             "a, b = names.constants()\n"
             "print(hasattr(names.constants, '__ppy_dis__'), a is sys.intern('attribute_name_42'), "
             "b is sys.intern('not a name!'))\n")
    native = runner.python("-c", probe, cwd=tmp_path)
    plain = runner.python("-c", probe, cwd=tmp_path, PPY_IMPORT="python")
    assert native.stdout == "True True False\n", native.stderr
    assert plain.stdout == "False True False\n", plain.stderr


def test_trace_counts_a_callee_rerun_as_python_once(runner, tmp_path):
    """A typed callee that deoptimizes under a caller that has had an effect:
    the callee reruns as Python and its grown result goes on in the caller.
    That is one deoptimization per call, of the callee's, at its `*`; the
    grown result it hands the caller is none (the trace once counted it
    too, under a name read from a freed string)."""
    main = _write(tmp_path, "main.ppy", """\
        def sq(v: int) -> int:
            return v * v

        def f(n: int):
            acc = 0
            for i in range(n):
                print(end="")
                acc += sq(3037000499 * 1024) % 1000
            return acc

        print(f(3), f(3))
        """)
    plain = runner.python(main, cwd=tmp_path)
    for jit in ("0", "eager"):
        traced = runner.ppy("run", "--trace", main, cwd=tmp_path, PPY_JIT=jit)
        assert traced.returncode == 0 and traced.stdout == plain.stdout, traced.stderr
        assert re.search(r"__main__\.sq\s+\d+ side exits.*\s+6 deoptimizations \(last: "
                         r"line 2, an int result of \* beyond 64 bits\)", traced.stderr), traced.stderr


def test_trace_lists_the_guards_machine_code_relies_on(runner, tmp_path):
    """Each function that entered machine code is listed with the guards
    that code checks (a loop's bounds, once at its head; that a name still
    holds the function its calls run in place; a value specialization's
    values), at the line of the statement each one guards, for the general
    code and the specialization apart; `ppy dis --jit` shows the same as
    comments. A function whose code relies on none is not listed."""
    main = _write(tmp_path, "main.ppy", """\
        import array
        from ppy import Buffer

        def half(x: float) -> float:
            return x * 0.5

        def scale(xs: Buffer[float], n: int) -> float:
            t: float = 0.0
            for i in range(n):
                t += half(xs[i])
            return t

        def plain(n: int) -> int:
            return n + 1

        a = array.array('d', [1.0] * 100)
        print(scale(a, 100), scale(a, 100), scale(a, 100), scale(a, 50), plain(3))
        """)
    plain = runner.python(main, cwd=tmp_path)
    traced = runner.ppy("run", "--trace", main, cwd=tmp_path, PPY_JIT="eager")
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout, traced.stderr
    section = traced.stderr.split("summary: guards")[1].split("summary:")[0]
    rows = [re.sub(r"\s+", " ", line.removeprefix("ppy trace:").strip()) for line in section.splitlines()[1:]
            if line.startswith("ppy trace:   ")]
    bounds = ("line 9: the loop's head checks that its indexes of 'xs' stay inside the buffer on every iteration "
              "(if not, the interpreter runs the loop)")
    callee = ("line 9: the loop's head checks that the name half still holds the function it runs in place of its "
              "calls (if not, the interpreter runs the loop)")
    assert "__main__.scale (n=100) line 7: the frame holds exactly n=100 (checked before each entry: other values " \
           "run the general code)" in rows, section
    for name in ("__main__.scale (n=100)", "__main__.scale"):
        assert f"{name} {bounds}" in rows and f"{name} {callee}" in rows, section
    assert not any("plain" in row or "half" in row.split()[0] for row in rows), section
    dis = runner.ppy("dis", "--jit", main, "scale", cwd=tmp_path)
    assert dis.returncode == 0, dis.stderr
    assert f"; guard, {bounds}" in dis.stdout and f"; guard, {callee}" in dis.stdout, dis.stdout


def test_trace_lists_every_def_with_its_qualified_name(runner, tmp_path):
    """Methods and nested functions run as Python (ppy compiles module-level
    functions only): the trace lists them too, in source order under their
    __qualname__, for __main__ and for an imported module alike."""
    _write(tmp_path, "shapes.ppy", SHAPES)
    main = _write(tmp_path, "main.ppy", """\
        import ppy  # so that plain Python imports shapes.ppy too
        from shapes import P, outer, total, keyed

        class Report:
            @classmethod
            def show(cls) -> None:
                print(P(3.0, 4.0).norm(), P.origin().x, outer(3), total(4), keyed([1, 3, 2]))

        Report.show()
        """)
    plain = runner.python(main, cwd=tmp_path)
    traced = runner.ppy("run", "--trace", main, cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout == "5.0 0.0 6 6 [3, 2, 1]\n", traced.stderr
    method = "ppy compiles module-level functions only"
    lines = [line for line in traced.stderr.splitlines() if line.startswith("ppy trace:   ")
             and "calls" not in line]
    assert lines == [f"ppy trace:   {line}" for line in [
        f"__main__.Report.show: python (a class method of class Report, line 6; {method})",
        f"shapes.P.__init__: python (a method of class P, line 2; {method})",
        f"shapes.P.norm: python (a method of class P, line 6; {method})",
        f"shapes.P.origin: python (a static method of class P, line 10; {method})",
        "shapes.outer: python (a nested function (a closure), line 14)",
        f"shapes.outer.<locals>.inner: python (a nested function in outer, line 14; {method}; "
        "outer runs as Python too)",
        "shapes.total: vm (machine code once hot)",
        "shapes.keyed: python (a lambda, line 25)",
    ]], traced.stderr
    again = runner.ppy("run", "--trace", main, cwd=tmp_path)  # from the cache: the same listing
    assert "cache hit" in again.stderr, again.stderr
    assert [line for line in again.stderr.splitlines() if line.startswith("ppy trace:   ")
            and "calls" not in line] == lines, again.stderr


def test_tracebacks_name_the_file_as_the_import_found_it(runner, tmp_path):
    # Built from inside the folder, by a relative path: the entry records ./k.ppy.
    _write(tmp_path, "k.ppy", """\
        def fail(n: int) -> int:
            return n // 0

        def python_fail(n):
            return [n][5]
        """)
    assert runner.ppy("build", ".", cwd=tmp_path).returncode == 0
    probe = ("import sys, ppy; sys.path.insert(0, sys.argv[1]); import k\n"
             "for f in (k.fail, k.python_fail):\n"
             "    try:\n"
             "        f(1)\n"
             "    except Exception as e:\n"
             "        import traceback; print(traceback.extract_tb(e.__traceback__)[-1].filename)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    native = runner.python("-c", probe, str(tmp_path), cwd=elsewhere)
    plain = runner.python("-c", probe, str(tmp_path), cwd=elsewhere, PPY_IMPORT="python")
    assert native.stdout == plain.stdout == f"{tmp_path / 'k.ppy'}\n" * 2, native.stderr


WAITS_FOR_A_THREAD = """\
import threading
import time

flag = False


def wait_for_flag() -> int:
    n = 0
    while not flag:
        n += 1
    return 1


def setter():
    global flag
    time.sleep(0.05)
    flag = True


t = threading.Thread(target=setter)
t.start()
print(wait_for_flag())
t.join()
"""


def test_an_interpreted_loop_lets_other_threads_run(runner, tmp_path):
    # A loop that waits on another thread's store: the interpreter's loop
    # checks let the GIL go every switch interval, as CPython's eval loop does.
    (tmp_path / "waits.ppy").write_text(WAITS_FOR_A_THREAD)
    result = runner.ppy("run", "waits.ppy", cwd=tmp_path, PPY_JIT="0", timeout=60)
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr


WAITS_IN_MACHINE_CODE = """\
import threading
import time

from ppy import Buffer, u8

flags = bytearray(1)


def wait_for_flag(f: Buffer[u8]) -> int:
    n: int = 0
    while f[0] == 0:
        n += 1
    return 1


def setter():
    time.sleep(0.05)
    flags[0] = 1


t = threading.Thread(target=setter)
t.start()
print(wait_for_flag(flags))
t.join()
"""


@pytest.mark.parametrize("jit", ["eager", "hot"])
def test_a_loop_in_machine_code_lets_other_threads_run(runner, tmp_path, jit):
    # The same wait in machine code, whose loop checks let the GIL go too
    # (asmjit-backend/jit.cpp, CheckSignals): the setter thread runs, and the
    # trace proves the loop ran as machine code.
    (tmp_path / "waits.ppy").write_text(WAITS_IN_MACHINE_CODE)
    env = {} if jit == "hot" else {"PPY_JIT": "eager"}
    result = runner.ppy("run", "waits.ppy", cwd=tmp_path, PPY_TRACE="1", timeout=60, **env)
    assert (result.returncode, result.stdout) == (0, "1\n"), result.stderr
    assert trace_counts(result.stderr, "__main__.wait_for_flag") == (1, 1), result.stderr


def test_python_dash_m_runs_a_ppy_module_natively(runner, tmp_path):
    """`python -m package.kernel` (runpy) runs a .ppy module as __main__
    natively, through GeneratedLoader.get_code, and as plain Python under
    PPY_IMPORT=python, where it has a __file__ as a .py module would."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("import ppy\n")
    (package / "kern.ppy").write_text(textwrap.dedent("""\
        import os

        def f(x: int) -> int:
            return x * 2 % 1000

        if __name__ == "__main__":
            print("kern main", f(21), os.path.basename(__file__), hasattr(f, "__ppy_dis__"))
        """))
    native = runner.python("-m", "pkg.kern", cwd=tmp_path)
    plain = runner.python("-m", "pkg.kern", cwd=tmp_path, PPY_IMPORT="python")
    assert (native.returncode, native.stdout) == (0, "kern main 42 kern.ppy True\n"), native.stderr
    assert (plain.returncode, plain.stdout) == (0, "kern main 42 kern.ppy False\n"), plain.stderr


def test_a_cache_dir_whose_parents_are_missing_is_made(runner, tmp_path):
    """PPY_CACHE_DIR a few levels below a folder that exists: ppy makes it
    (with its parents) and keeps the entries there, not in the per-user cache."""
    (tmp_path / "kern.ppy").write_text("def f(x: int) -> int:\n    return x + 1\n")
    cache = tmp_path / "nested" / "a" / "b"
    run = runner.python("-c", "import ppy, kern; print(kern.f(1))", cwd=tmp_path, PPY_CACHE_DIR=str(cache),
                        XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert (run.returncode, run.stdout) == (0, "2\n"), run.stderr
    assert list(cache.glob("kern.*.ppyc")), run.stderr
    assert not (tmp_path / "xdg").exists()


def test_the_optimize_level_strips_asserts_and_keeps_entries_apart(runner, tmp_path):
    """`python -O` drops asserts from compiled functions too, as CPython's
    compiler does, and an entry built at one -O level is never run at
    another (its module code has that level's asserts, __debug__ and
    docstrings): each run matches PPY_IMPORT=python at its own level, in
    any order."""
    _write(tmp_path, "checks.ppy", """\
        def checked(x: int) -> int:
            assert x >= 0, "negative"
            return (x - 1) % 1000

        def documented():
            "doc"
            return 1

        MODE = "debug" if __debug__ else "opt"
        """)
    probe = ("import ppy, checks\n"
             "try:\n"
             "    r = checks.checked(-1)\n"
             "except AssertionError as e:\n"
             "    r = repr(e)\n"
             "print(checks.MODE, repr(checks.documented.__doc__), r, hasattr(checks.checked, '__ppy_dis__'))\n")
    for flags in ([], ["-OO"], [], ["-O"], ["-O"], []):
        native = runner.python(*flags, "-c", probe, cwd=tmp_path)
        plain = runner.python(*flags, "-c", probe, cwd=tmp_path, PPY_IMPORT="python")
        assert native.returncode == 0 and native.stdout.endswith(" True\n"), native.stderr
        assert native.stdout[:-len(" True\n")] == plain.stdout[:-len(" False\n")], (flags, native.stdout, plain.stdout)


TORCH_LOOP_AND_A_THREAD = """\
import sys
import threading
import time

import torch
from ppy import Buffer


def spin(xs: Buffer[float], reps: int) -> float:
    s: float = 0.0
    for r in range(reps):
        for i in range(len(xs)):
            s += xs[i] * 0.5
    return s


xs = torch.ones(100000, dtype=torch.float64)
ticks = []


def other():
    # Runs only if the loop lets the GIL go; then moves the tensor's memory.
    for _ in range(5):
        ticks.append(time.perf_counter())
        time.sleep(0.01)
    xs.resize_(10)
    xs.fill_(2.0)


t = threading.Thread(target=other)
t.start()
try:
    result = spin(xs, 3000)
    print("returned", result == 5.0 * 3000 or result > 0)
except IndexError as e:
    print("IndexError")
t.join()
print("other thread ran", len(ticks))
"""


def test_a_machine_code_loop_over_a_torch_tensor_lets_other_threads_run(runner, tmp_path):
    # A loop in machine code that borrows a torch tensor leaves for the
    # interpreter when a GIL switch is due (asmjit-backend/jit.cpp,
    # CheckSignals), which lets the other thread run and refreshes the view
    # when that thread has resized the tensor: the loop then reads the new
    # memory, never the old (it ends with an IndexError past the new end, as
    # in CPython, or returns if it was done first: timing decides, so the
    # test asserts neither).
    pytest.importorskip("torch")
    (tmp_path / "spin.ppy").write_text(TORCH_LOOP_AND_A_THREAD)
    for env in ({"PPY_JIT": "eager"}, {}):
        result = runner.ppy("run", "spin.ppy", cwd=tmp_path, PPY_TRACE="1", timeout=120, **env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.endswith("other thread ran 5\n"), result.stdout + result.stderr
        calls, entries = trace_counts(result.stderr, "__main__.spin")
        assert calls == 1 and entries >= 2, result.stderr


def test_a_relative_cache_dir_is_one_folder_for_the_process(runner, tmp_path):
    """A relative PPY_CACHE_DIR is resolved once, against the working
    directory the process had at its first import: a later os.chdir does not
    start a second cache under the new directory."""
    (tmp_path / "a.ppy").write_text("def f(x: int) -> int:\n    return x + 1\n")
    (tmp_path / "b.ppy").write_text("def g(x: int) -> int:\n    return x + 2\n")
    (tmp_path / "elsewhere").mkdir()
    probe = ("import os, sys, ppy\nsys.path.insert(0, os.getcwd())\nimport a\nos.chdir('elsewhere')\nimport b\n"
             "print(a.f(1), b.g(1))\n")
    run = runner.python("-c", probe, cwd=tmp_path, PPY_CACHE_DIR="cache")
    assert (run.returncode, run.stdout) == (0, "2 3\n"), run.stderr
    assert len(list((tmp_path / "cache").glob("*.ppyc"))) == 2
    assert not (tmp_path / "elsewhere" / "cache").exists()


DAEMON_AT_EXIT = """\
import sys, threading, time
import ppy, dk
n = 2**70 if sys.argv[1] == "python" else 10**13
threading.Thread(target=lambda: dk.spin(n), daemon=True).start()
time.sleep(0.3)
print("main thread exits")
"""


@pytest.mark.parametrize("case", ["python", "interpreter"])
def test_a_daemon_thread_in_a_ppy_frame_does_not_abort_the_exit(runner, tmp_path, case):
    """A daemon thread inside a ppy call when the interpreter exits: in the
    function's Python code (an argument beyond 64 bits makes the call run
    it) CPython ends the thread with an unwind through ppy's frames, which
    aborted the process while _ppy carried its own copy of the unwinder
    (-static-libgcc) to run their cleanups with; on the interpreter it waits
    to be parked (RestoreThread). Either way the process exits 0."""
    (tmp_path / "dk.ppy").write_text(textwrap.dedent("""\
        def spin(n: int) -> int:
            s: int = 0
            for i in range(n):
                s = (s * 31 + i) % 1000003
            return s
        """))
    (tmp_path / "main.py").write_text(DAEMON_AT_EXIT)
    env = {"PPY_JIT": "0"} if case == "interpreter" else {}
    for _ in range(3):
        run = runner.python("main.py", case, cwd=tmp_path, timeout=60, **env)
        assert (run.returncode, run.stdout) == (0, "main thread exits\n"), run.stderr
