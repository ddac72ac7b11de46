"""Every example driven by a main.py prints the same bytes under plain Python
and under ppy.

test_programs.py runs the examples' `.ppy` files that have a `__main__` block;
this file covers the others, the ones a `main.py` drives (workers, pools,
reloads, packages, numpy and torch callers). For each `examples/*/main.py`:
`python main.py` with PPY_IMPORT=python is the reference, and the same command
under ppy with PPY_JIT=0 (the interpreter alone) and PPY_JIT=eager (machine
code before the first call) must print exactly the same stdout and exit 0.
All three share one fresh cache folder (the runner's PPY_CACHE_DIR), so the
first ppy run builds and the second loads.

Timings are never part of this: a main.py prints them only when given
`--time`, which the example's README documents and this test does not pass.
The trace (PPY_TRACE=1, on stderr) shows that ppy did import a .ppy module,
so an example cannot pass by running as plain Python twice, and its summary
shows machine code ran under eager (and none under PPY_JIT=0).

The kernels such a main.py imports have no `__main__` block, so
test_programs.py does not check them; here every top-level function of every
such `.ppy` file must compile (`ppy check -v` says `vm` or `region`) unless a
`# ppy-fallback: name, ...` line in the file names it.
"""

import re
from pathlib import Path

import pytest

from test_programs import HAVE_TORCH, MODES, SUMMARY, assert_functions_compile

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*/main.py"))
KERNELS = sorted(
    p for p in (ROOT / "examples").rglob("*.ppy")
    # Not the copies a wheel build leaves under build/, nor anything in a dot folder.
    if "__main__" not in p.read_text()
    and not any(part.startswith(".") or part == "build" for part in p.relative_to(ROOT).parts)
)



def _needs_torch(folder):
    pattern = re.compile(r"^\s*import torch|^\s*from torch", re.M)
    return any(pattern.search(p.read_text()) for p in folder.rglob("*.p*") if p.suffix in (".py", ".ppy"))


def test_examples_are_found():
    assert len(EXAMPLES) >= 10, EXAMPLES


@pytest.mark.parametrize("main", EXAMPLES, ids=lambda p: p.parent.name)
def test_example_prints_the_same_under_python_and_ppy(runner, main):
    folder = main.parent
    if _needs_torch(folder) and not HAVE_TORCH:
        pytest.skip("torch is not installed")
    expected = runner.python("main.py", cwd=folder, PPY_IMPORT="python", timeout=120)
    assert expected.returncode == 0, expected.stderr[-3000:]
    assert expected.stdout, "the example printed nothing"
    for mode, env in MODES.items():
        actual = runner.python("main.py", cwd=folder, PPY_TRACE="1", timeout=120, **env)
        assert actual.returncode == 0, f"{mode}: {actual.stderr[-3000:]}"
        assert actual.stdout == expected.stdout, f"{mode}: {actual.stderr[-3000:]}"
        assert re.search(r"^ppy trace: module \S+ \(", actual.stderr, re.M), f"{mode}: no .ppy module imported"
        summary = [(int(calls), int(entries)) for calls, entries in SUMMARY.findall(actual.stderr)]
        if mode == "jit" and any(calls for calls, _ in summary):
            assert any(entries for _, entries in summary), actual.stderr[-3000:]
        if mode == "vm":
            assert not any(entries for _, entries in summary), actual.stderr[-3000:]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_example_kernels_compile(runner, kernel):
    report = runner.ppy("check", "-v", kernel.name, cwd=kernel.parent, PPY_OBJECT_CODE="compile")
    assert report.returncode == 0, report.stdout + report.stderr
    assert_functions_compile(report, kernel)


def test_overflow_is_an_error_under_ppy_and_a_big_int_under_python(runner):
    """02_exact_semantics/overflow.py is the gallery's one output that differs
    by design: the page shows both, and this keeps them true."""
    folder = ROOT / "examples" / "02_exact_semantics"
    python = runner.python("overflow.py", cwd=folder, PPY_IMPORT="python")
    assert python.returncode == 0, python.stderr
    assert python.stdout == "factorial(20) = 2432902008176640000\nfactorial(21) = 51090942171709440000\n"
    for env in MODES.values():
        native = runner.python("overflow.py", cwd=folder, **env)
        assert native.returncode == 0, native.stderr
        first, second = native.stdout.splitlines()
        assert first == "factorial(20) = 2432902008176640000"
        assert second.startswith("factorial(21) -> OverflowError: "), second
        assert second.endswith("semantics.ppy:75: int result of * does not fit in 64 bits "
                               "(Python ints are unbounded, ppy's are 64-bit)"), second
