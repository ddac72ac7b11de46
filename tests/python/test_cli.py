"""The `ppy` command: check, build, run, dis, clean."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import spawn

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "31_torchrun"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_check_is_silent_on_a_clean_tree(runner):
    result = runner.ppy("check", EXAMPLE)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_check_reports_a_syntax_error_with_a_caret(runner, tmp_path):
    path = _write(tmp_path, "bad.ppy", "def f(x):\n    return x +\n")
    result = runner.ppy("check", path)
    assert result.returncode == 1
    assert result.stdout == (
        f"{path}:2:15: error: invalid syntax\n"
        "    2 |     return x +\n"
        "      |               ^\n")


# Sources the parser accepts and CPython's compiler rejects: ppy refuses each
# with CPython's own message and line, in check, build, run and import alike.
COMPILE_TIME_ERRORS = [
    "def f(n: int) -> int:\n    if n:\n        break\n    return n\n",
    "def f(n: int) -> int:\n    continue\n",
    "def f(a: int, a: int) -> int:\n    return a\n",
    "return 1\n",
    "def f(x):\n    nonlocal x\n",
    "x = 1\nbreak\n",
    "def f():\n    yield 1\n    return\nawait f()\n",
]


@pytest.mark.parametrize("source", COMPILE_TIME_ERRORS)
def test_what_cpythons_compiler_rejects_ppy_rejects_the_same_way(runner, tmp_path, source):
    path = _write(tmp_path, "bad.ppy", source)
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as error:
        expected = error
    else:
        pytest.fail("CPython accepts this source")
    check = runner.ppy("check", path)
    assert check.returncode == 1
    assert check.stdout.startswith(f"{path}:{expected.lineno}:"), check.stdout + check.stderr
    assert f"error: {expected.msg}" in check.stdout
    build = runner.ppy("build", path)
    assert build.returncode == 1 and f"error: {expected.msg}" in build.stdout, build.stdout + build.stderr
    plain = runner.python(path, PPY_IMPORT="python")
    native = runner.ppy("run", path)
    assert native.returncode == plain.returncode == 1, native.stderr
    assert native.stderr.strip().splitlines()[-1] == plain.stderr.strip().splitlines()[-1]
    imported = runner.python("-c", "import ppy, bad", cwd=tmp_path)
    assert f"SyntaxError: {expected.msg}" in imported.stderr


def test_check_reports_every_type_error_with_a_caret(runner, tmp_path):
    path = _write(tmp_path, "types.ppy", """\
        def f(n: int) -> int:
            total: int = 0
            total += 0.5
            ratio: float = n
            return "x"
        """)
    result = runner.ppy("check", path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    errors = [line for line in lines if ": error: " in line]
    assert errors == [
        f"{path}:3:5: error: 'total' is int (from its first assignment at line 2); += makes it float",
        f"{path}:4:20: error: cannot assign int (write float(...) or a float literal) to 'ratio' (float, from its "
        "first assignment at line 4)",
        f"{path}:5:12: error: 'f' is annotated to return int but this returns str",
    ]
    assert lines[1:3] == ["    3 |     total += 0.5", "      |     ^~~~~~~~~~~~"]


def test_check_says_a_bool_element_takes_a_bool(runner, tmp_path):
    # numpy would store an int's truth, a '?' memoryview refuses it: ppy
    # refuses it before the call, and says what to write.
    path = _write(tmp_path, "masks.ppy", """\
        from ppy import Buffer

        def f(m: Buffer[bool], x: int) -> None:
            m[0] = x
            m[1] += 1
            m[2] = x > 0
        """)
    result = runner.ppy("check", path)
    assert result.returncode == 1
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    hint = "(a bool element takes a bool: `x != 0`)"
    assert errors == [
        f"{path}:4:12: error: cannot store int into Buffer[bool] {hint}",
        f"{path}:5:5: error: cannot store int into Buffer[bool] {hint}",
    ]


def test_check_verbose_lists_tiers_and_fallback_reasons(runner, tmp_path):
    path = _write(tmp_path, "mixed.ppy", """\
        def fast(x: int) -> int:
            return x * 2 % 7 + 1

        def slow(xs: list) -> list:
            return [x + 1 for x in xs]

        def small(x: int) -> int:
            return x + 1
        """)
    result = runner.ppy("check", "-v", path)
    assert result.returncode == 0
    assert result.stdout == (f"{path}:1: fast: vm\n"
                             f"{path}:4: slow: python (a comprehension at {path}:5:12)\n"
                             f"{path}:7: small: vm; called from Python: python (at most two operations CPython "
                             "specializes, or one other: cheaper as Python than a call into compiled code; "
                             "@ppy.native keeps it compiled)\n")


def test_check_verbose_into_a_closed_pipe_ends_quietly(runner, tmp_path):
    """`ppy check -v many.ppy | head -1`: ppy's own output meets a reader that
    has gone, and the command ends with status 1 and no BrokenPipeError
    traceback (nor the interpreter's at exit)."""
    path = _write(tmp_path, "many.ppy", "".join(f"def f{i}(x: int) -> int:\n    return x * {i}\n\n\n"
                                                for i in range(1500)))
    process = spawn([sys.executable, "-m", "ppy", "check", "-v", str(path)], env=runner.env(),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        process.stdout.close()
        stderr = process.stderr.read()
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert first.startswith(f"{path}:1: f0: vm"), first
    assert "Error" not in stderr, stderr
    assert process.returncode == 1


def test_check_verbose_says_which_small_functions_python_calls_as_python(runner, tmp_path):
    """compiler/compile.cpp, SmallCallAsPython: a body weighing 2 at most
    (1 per operation CPython specializes, 2 per other, 3 per math function)
    with scalar parameters and result, no loop and no call; a default value,
    @ppy.native or PPY_OBJECT_CODE=compile keeps the compiled function."""
    path = _write(tmp_path, "sizes.ppy", """\
        import math
        import ppy

        def nothing(x: float) -> None:
            pass

        def fma(a: float, b: float, c: float) -> float:
            return a * b + c

        def branch(x: int) -> int:
            if x > 0:
                return x
            return 0

        def ratio(x: float, y: float) -> float:
            return x / y

        def three(a: float, b: float, t: float) -> float:
            return a + (b - a) * t

        def ratio_plus(x: float, y: float) -> float:
            return x / y + 1.0

        def root(x: float) -> float:
            return math.sqrt(x)

        def with_default(x: float, y: float = 1.0) -> float:
            return x + y

        @ppy.native
        def native(x: float) -> float:
            return x + 1.0

        def loop(n: int) -> int:
            for i in range(n):
                pass
            return n
        """)
    def small_ones(result):
        assert result.returncode == 0, result.stderr
        return [line.split(": ")[1] for line in result.stdout.splitlines() if "called from Python: python" in line]
    assert small_ones(runner.ppy("check", "-v", path)) == ["nothing", "fma", "branch", "ratio"]
    assert small_ones(runner.ppy("check", "-v", path, PPY_OBJECT_CODE="compile")) == []


# A class with methods (one static), a nested function and a function with a
# lambda: ppy compiles module-level functions only, so `ppy check -v` and
# `ppy run --trace` must list the methods and the nested function too, under
# Python's __qualname__, or their count of native functions overstates it.
# (test_hook.py traces the same module.)
SHAPES = """\
    class P:
        def __init__(self, x: float, y: float):
            self.x = x
            self.y = y

        def norm(self) -> float:
            return (self.x * self.x + self.y * self.y) ** 0.5

        @staticmethod
        def origin() -> "P":
            return P(0.0, 0.0)

    def outer(n: int) -> int:
        def inner(k: int) -> int:
            return k * 2
        return inner(n)

    def total(n: int) -> int:
        s = 0
        for i in range(n):
            s += i
        return s

    def keyed(xs: list) -> list:
        return sorted(xs, key=lambda v: -v)
"""

EVERY_DEF = SHAPES + """\

    if __name__ == "__main__":
        def main() -> None:
            print(P(3.0, 4.0).norm(), P.origin().x, outer(3), total(4), keyed([1, 3, 2]))
        main()
    """


def test_check_verbose_lists_methods_and_nested_functions(runner, tmp_path):
    path = _write(tmp_path, "defs.ppy", EVERY_DEF)
    result = runner.ppy("check", "-v", path)
    assert result.returncode == 0, result.stdout + result.stderr
    method = "ppy compiles module-level functions only"
    assert result.stdout.splitlines() == [
        f"{path}:2: P.__init__: python (a method of class P at {path}:2:5; {method})",
        f"{path}:6: P.norm: python (a method of class P at {path}:6:5; {method})",
        f"{path}:10: P.origin: python (a static method of class P at {path}:10:5; {method})",
        f"{path}:13: outer: python (a nested function (a closure) at {path}:14:5)",
        f"{path}:14: outer.<locals>.inner: python (a nested function in outer at {path}:14:5; {method}; "
        "outer runs as Python too)",
        f"{path}:18: total: vm",
        f"{path}:24: keyed: python (a lambda at {path}:25:27)",
        f"{path}:28: main: python (a function inside an if statement at {path}:28:5; "
        "ppy compiles only functions defined directly in the module body)",
    ]
    # The names are Python's own: those of the code of every def. (A line is
    # the def's, as for module-level functions; CPython's code starts at a decorator.)
    assert [line.split(": ")[1] for line in result.stdout.splitlines()] == _python_defs(path)


# Every def's __qualname__ as CPython compiles the file, in source order.
def _python_defs(path):
    import types

    found = []
    pending = [compile(path.read_text(), str(path), "exec")]
    while pending:
        code = pending.pop()
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                pending.append(constant)
                if constant.co_flags & 0x2 and not constant.co_name.startswith("<"):  # CO_NEWLOCALS: a function
                    found.append((constant.co_firstlineno, constant.co_qualname))
    return [name for _, name in sorted(found)]


def test_check_verbose_names_defs_in_classes_in_functions(runner, tmp_path):
    path = _write(tmp_path, "deep.ppy", """\
        def f() -> int:
            class C:
                def m(self) -> int:
                    def g() -> int:
                        return 1
                    return g()
            return C().m()
        """)
    result = runner.ppy("check", "-v", path)
    assert result.returncode == 0, result.stdout + result.stderr
    method = "ppy compiles module-level functions only"
    assert result.stdout.splitlines() == [
        f"{path}:1: f: python (a class definition at {path}:2:5)",
        f"{path}:3: f.<locals>.C.m: python (a method of class f.<locals>.C at {path}:3:9; {method}; "
        "f runs as Python too)",
        f"{path}:4: f.<locals>.C.m.<locals>.g: python (a nested function in f.<locals>.C.m at {path}:4:13; "
        f"{method}; f.<locals>.C.m runs as Python too)",
    ]
    assert [line.split(": ")[1] for line in result.stdout.splitlines()] == _python_defs(path)


def test_build_is_silent_and_verbose_says_why(runner, tmp_path):
    path = _write(tmp_path, "k.ppy", "def f(x: int) -> int:\n    return x\n")
    first = runner.ppy("build", tmp_path)
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    again = runner.ppy("build", "-v", tmp_path)
    assert again.stdout == f"{path}: up to date\n"
    path.write_text("def f(x: int) -> int:\n    return x + 1\n")
    changed = runner.ppy("build", "-v", tmp_path)
    assert changed.stdout.startswith(f"{path}: built (source changed) in ")


OBJECT_CODE = """\
    import ppy

    def lookup(rows, key):
        total = 0
        for row in rows:
            total += row[key]
        return total

    def scaled(n: int) -> int:
        total = 0
        for i in range(n):
            total += i * 3 % 7
        return total

    @ppy.native
    def first(rows):
        return rows[0]

    if __name__ == "__main__":
        print(lookup([{"a": 1.5}, {"a": 2}], "a"), scaled(10), first("xyz"))
    """


def test_functions_of_object_operations_run_as_python(runner, tmp_path):
    """The "never slower" rule (issue 13): a function whose work is all object
    operations runs as Python, and check, the trace and the cache say so;
    typed work or @ppy.native keeps a function compiled; PPY_OBJECT_CODE=compile
    compiles it anyway, and an entry built under the other setting is a miss."""
    path = _write(tmp_path, "objects.ppy", OBJECT_CODE)
    reason = "python (mostly object operations, which CPython runs about as fast; @ppy.native compiles it)"
    check = runner.ppy("check", "-v", path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{path}:3: lookup: {reason}\n" in check.stdout
    assert f"{path}:9: scaled: vm\n" in check.stdout and f"{path}:16: first: vm\n" in check.stdout
    compiled = runner.ppy("check", "-v", path, PPY_OBJECT_CODE="compile")
    assert f"{path}:3: lookup: vm" in compiled.stdout, compiled.stdout
    run = runner.ppy("run", "--trace", path)
    assert run.stdout == "3.5 30 x\n", run.stderr
    assert f"__main__.lookup: {reason}" in run.stderr
    module = _write(tmp_path, "use_objects.py", "import ppy\nimport objects\nprint(objects.lookup([{'a': 1}], 'a'))\n")
    first = runner.python(module, cwd=tmp_path, PPY_TRACE="1")
    assert first.stdout == "1\n" and f"objects.lookup: {reason}" in first.stderr, first.stderr
    other = runner.python(module, cwd=tmp_path, PPY_TRACE="1", PPY_OBJECT_CODE="compile")
    assert other.stdout == "1\n"
    assert "module objects (objects.ppy): cache miss (PPY_OBJECT_CODE changed)" in other.stderr, other.stderr
    assert "objects.lookup: vm" in other.stderr


def test_build_fails_on_a_native_function_that_cannot_compile(runner, tmp_path):
    path = _write(tmp_path, "n.ppy", """\
        import ppy

        @ppy.native
        def g(n: int) -> int:
            try:
                return n
            except ValueError:
                return 0
        """)
    result = runner.ppy("build", "--warm", tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith(f"{path}:5:5: error: @ppy.native function 'g' cannot be compiled: "
                                    "it uses a try statement\n")
    assert "    5 |     try:\n" in result.stdout


def test_run_passes_arguments_and_exit_status(runner, tmp_path):
    path = _write(tmp_path, "main.ppy", """\
        import sys

        def double(x: int) -> int:
            return 2 * x

        if __name__ == "__main__":
            print(sys.argv[1:], double(int(sys.argv[1])))
            sys.exit(3)
        """)
    result = runner.ppy("run", path, "21", "x")
    assert (result.returncode, result.stdout) == (3, "['21', 'x'] 42\n")


def test_run_prints_tracebacks_with_ppy_frames(runner, tmp_path):
    path = _write(tmp_path, "fail.ppy", """\
        def f(x: float) -> float:
            return x / 0.0

        f(1.0)
        """)
    result = runner.ppy("run", path)
    assert result.returncode == 1
    assert result.stderr.endswith("ZeroDivisionError: float division by zero\n")
    assert f'File "{path}", line 4, in <module>' in result.stderr
    assert f'File "{path}", line 2, in f' in result.stderr
    assert "cli.py" not in result.stderr


def test_dis_prints_the_bytecode(runner):
    result = runner.ppy("dis", EXAMPLE / "features.ppy", "bucketize")
    assert result.returncode == 0
    assert result.stdout.startswith("function bucketize(values: Buffer[f64], count: int, counts: Buffer[i64], "
                                    "bins: int, low: float, high: float) -> int\n")
    assert "FORLOOP_INC" in result.stdout


def test_clean_removes_cache_folders(runner, tmp_path):
    _write(tmp_path, "k.ppy", "def f(x: int) -> int:\n    return x\n")
    (tmp_path / ".ppy-cache").mkdir()
    (tmp_path / ".ppy-cache" / "stale.ppyc").write_text("x")
    result = runner.ppy("clean", tmp_path)
    assert result.returncode == 0
    assert not (tmp_path / ".ppy-cache").exists()


def test_version_and_help(runner):
    assert runner.ppy("--version").stdout.startswith("ppy 0.1.0")
    assert "build" in runner.ppy("--help").stdout


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameter syntax is new in Python 3.12")
def test_type_parameters_and_type_aliases_run_as_python(runner, tmp_path):
    path = _write(tmp_path, "generic.ppy", """\
        type Pair = tuple[int, int]

        def first[T](items: list[T]) -> T:
            return items[0]

        def twice(n: int) -> int:
            return 2 * n

        if __name__ == "__main__":
            print(first([3, 4]), twice(first([5])), Pair.__value__)
        """)
    check = runner.ppy("check", "-v", path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{path}:3: first: python (type parameters (def f[T]) at {path}:3:11)" in check.stdout, check.stdout
    assert f"{path}:6: twice: vm" in check.stdout
    plain = runner.python(path, PPY_IMPORT="python")
    native = runner.ppy("run", path)
    assert native.stdout == plain.stdout == "3 10 tuple[int, int]\n", native.stderr
