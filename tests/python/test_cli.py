"""The `ppy` command: check, build, run, dis, clean."""

import sys
import textwrap
from pathlib import Path

import pytest

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


def test_check_verbose_lists_tiers_and_fallback_reasons(runner, tmp_path):
    path = _write(tmp_path, "mixed.ppy", """\
        def fast(x: int) -> int:
            return x + 1

        def slow(xs: list) -> list:
            return [x + 1 for x in xs]
        """)
    result = runner.ppy("check", "-v", path)
    assert result.returncode == 0
    assert result.stdout == (f"{path}:1: fast: vm\n"
                             f"{path}:4: slow: python (a comprehension at {path}:5:12)\n")


def test_build_is_silent_and_verbose_says_why(runner, tmp_path):
    path = _write(tmp_path, "k.ppy", "def f(x: int) -> int:\n    return x\n")
    first = runner.ppy("build", tmp_path)
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    again = runner.ppy("build", "-v", tmp_path)
    assert again.stdout == f"{path}: up to date\n"
    path.write_text("def f(x: int) -> int:\n    return x + 1\n")
    changed = runner.ppy("build", "-v", tmp_path)
    assert changed.stdout.startswith(f"{path}: built (source changed) in ")


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
