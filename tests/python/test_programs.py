"""The differential suite: every program in tests/programs/ and examples/ runs
under CPython (`python X.ppy`) and under ppy (`ppy run X.ppy`), and the two must
print exactly the same bytes and exit the same way.

A program also says which of its functions are meant to run as Python: a line
`# ppy-fallback: name, name` near the top. Under PPY_JIT=eager machine code
must have run (the trace's summary counts the entries), unless the program
says `# ppy-machine-code: none` (object-mode code, which machine code leaves to
the interpreter); under PPY_JIT=0 it must not have. Every other top-level function must
compile (`ppy check -v` says "vm", or "region" for an ATen region, with
PPY_OBJECT_CODE=compile), so a program cannot pass by quietly falling back to
the interpreter it is compared against.

The one line allowed to differ is the seed's `# aten region: False|True`, which
reports the tier itself (test_regions.py checks that it says True under ppy).
"""

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "programs").glob("*.ppy"))
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.ppy") if "__main__" in p.read_text())

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def _needs_torch(path):
    return re.search(r"^\s*import torch|^\s*from torch", path.read_text(), re.M) is not None


def _declared_fallbacks(path):
    match = re.search(r"^# ppy-fallback:(.*)$", path.read_text(), re.M)
    return {name.strip() for name in match.group(1).split(",")} if match else set()


def _runs_no_machine_code(path):
    """Object-mode programs (and the seed's model, a region) compile to machine
    code that leaves every instruction to the interpreter; they say so with a
    line `# ppy-machine-code: none`."""
    return path.name == "model.ppy" or re.search(r"^# ppy-machine-code: none", path.read_text(), re.M) is not None


def _comparable(output):
    return re.sub(r"^# aten region: (True|False)$", "# aten region: <tier>", output, flags=re.M)


SUMMARY = re.compile(r"^ppy trace:\s+\S+\s+(\d+) calls\s+\S+ ms\s+(\d+) jit entries$", re.M)

# The interpreter alone, and every function compiled to machine code before
# its first call (the differential suite's view of the JIT), both with
# functions of mostly object operations compiled too (PPY_OBJECT_CODE=compile:
# these programs test ppy's object mode); and what a user gets, where such
# functions run as Python and the others are compiled once hot.
#
# PPY_TEST_MODES (a comma-separated list) runs some of them: scripts/test.sh
# runs "jit,default" on the CPythons after the first, where what differs from
# one version to the next is the C API that object instructions call, which
# both of those modes run; the interpreter's typed instructions, the one
# thing only "vm" adds, are the same C++ on every version. scripts/sanitize.sh
# runs "vm" alone under ASan, which sees the interpreter but not machine code.
MODES = {
    "vm": {"PPY_JIT": "0", "PPY_OBJECT_CODE": "compile"},
    "jit": {"PPY_JIT": "eager", "PPY_OBJECT_CODE": "compile"},
    "default": {},
}
if os.environ.get("PPY_TEST_MODES"):
    MODES = {mode: MODES[mode] for mode in os.environ["PPY_TEST_MODES"].split(",")}


# CPython's output of each program, run once per test process: the modes of
# one program compare against the same run. (Under pytest-xdist, `--dist
# loadgroup` keeps a program's modes in one worker.)
_expected = {}


def _cpython_output(runner, program):
    if program not in _expected:
        _expected[program] = runner.python(program, cwd=program.parent, PPY_IMPORT="python")
    return _expected[program]


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("program", [
    pytest.param(path, marks=pytest.mark.xdist_group(str(path.relative_to(ROOT))), id=str(path.relative_to(ROOT)))
    for path in PROGRAMS + EXAMPLES])
def test_program_matches_cpython(runner, program, mode):
    if _needs_torch(program) and not HAVE_TORCH:
        pytest.skip("torch is not installed")
    expected = _cpython_output(runner, program)
    actual = runner.ppy("run", program, cwd=program.parent, PPY_TRACE="1", **MODES[mode])
    assert _comparable(actual.stdout) == _comparable(expected.stdout), actual.stderr
    assert actual.returncode == expected.returncode, actual.stderr
    # The trace's summary says where calls ran: in "jit" mode machine code must
    # have run, so the mode cannot pass by silently staying on the interpreter.
    summary = [(int(calls), int(entries)) for calls, entries in SUMMARY.findall(actual.stderr)]
    if mode == "jit" and any(calls for calls, _ in summary) and not _runs_no_machine_code(program):
        assert any(entries for _, entries in summary), actual.stderr[-3000:]
    if mode == "vm":
        assert not any(entries for _, entries in summary), actual.stderr[-3000:]


def assert_functions_compile(report, path):
    """`report`, `ppy check -v` of `path`, lists its top-level functions, and
    each compiles unless its `# ppy-fallback:` line names it (then it must
    fall back). tests/python/test_examples.py checks kernels without a
    `__main__` block the same way."""
    tiers = dict(re.findall(r"^\S+\.ppy:\d+: (\w+): (\w+)", report.stdout, re.M))
    assert tiers, report.stdout + report.stderr
    expected_python = _declared_fallbacks(path)
    for name, tier in tiers.items():
        if name in expected_python:
            assert tier == "python", f"{name} was expected to fall back"
        else:
            assert tier in ("vm", "region"), f"{name} runs as {tier}: {report.stdout}"


@pytest.mark.parametrize("program", PROGRAMS + EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_program_functions_compile(runner, program):
    report = runner.ppy("check", "-v", program, cwd=program.parent, PPY_OBJECT_CODE="compile")
    assert_functions_compile(report, program)
