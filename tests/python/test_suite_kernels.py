"""The kernel suite (benchmarks/suite.py) at its small size, without timing:
every kernel prints the same result text under CPython, ppy's interpreter, ppy's
JIT and C (gcc -O2 through ctypes), and under numba and Cython where they are
already importable (a test never installs them). Under the JIT, ppy's trace
proves that each kernel's function entered machine code.

Every child (the kernels' processes, gcc, cython) runs with a timeout and is
killed with its process group on every path (conftest.spawn, suite/build.py)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from conftest import trace_counts

from conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "suite"
sys.path.insert(0, str(SUITE))

import build  # noqa: E402
import harness  # noqa: E402

KERNELS = harness.KERNELS
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
HAVE_CYTHON = importlib.util.find_spec("Cython") is not None


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """The C libraries (and Cython, checks on, -O0 to build fast) in a scratch folder,
    and a runner of harness.py processes with a private ppy and numba cache."""
    scratch = tmp_path_factory.mktemp("suite")
    build.build_c(KERNELS, str(scratch), timeout=60)
    if HAVE_CYTHON:
        build.build_cython(KERNELS, str(scratch), ["cython-checked"], optimize="-O0", timeout=60)
    runner = Runner(scratch / "cache")

    def run(system, **env):
        done = runner.python(SUITE / "harness.py", system, "small", 1, ",".join(KERNELS), timeout=120,
                             SUITE_BUILD=str(scratch), NUMBA_CACHE_DIR=str(scratch / "numba"), **env)
        assert done.returncode == 0, done.stderr
        results = [json.loads(line) for line in done.stdout.splitlines()]
        assert [r["kernel"] for r in results] == KERNELS
        return results, done.stderr

    return run


@pytest.fixture(scope="module")
def expected(suite):
    results, _ = suite("python", PPY_IMPORT="python")
    assert all(r["tier"] == "python" for r in results)
    return {r["kernel"]: r["output"] for r in results}


def _outputs(results):
    return {r["kernel"]: r["output"] for r in results}


def test_the_interpreter_prints_what_cpython_prints(suite, expected):
    results, _ = suite("interp", PPY_JIT="0")
    assert _outputs(results) == expected
    assert all(r["tier"] == "vm" for r in results), results


def test_the_jit_prints_what_cpython_prints_from_machine_code(suite, expected):
    results, trace = suite("jit", PPY_JIT="eager", PPY_TRACE="1")
    assert _outputs(results) == expected
    assert all(r["tier"] == "jit" for r in results), results
    # The trace's summary: every call of each kernel's function (two untimed,
    # one timed) entered machine code.
    for kernel in KERNELS:
        counts = trace_counts(trace, f"{kernel}.{kernel}")
        assert counts, f"{kernel} missing from the trace summary:\n{trace}"
        calls, entries = counts
        assert calls == 3 and entries == calls, (kernel, counts)


def test_c_prints_what_cpython_prints(suite, expected):
    results, _ = suite("c")
    assert _outputs(results) == expected


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (benchmark-only extra)")
def test_numba_prints_what_cpython_prints(suite, expected):
    results, _ = suite("numba")
    assert _outputs(results) == expected


@pytest.mark.skipif(not HAVE_CYTHON, reason="Cython is not installed (benchmark-only extra)")
def test_cython_prints_what_cpython_prints(suite, expected):
    results, _ = suite("cython")
    assert _outputs(results) == expected


def test_every_kernel_has_all_four_implementations():
    for kernel in KERNELS:
        for name in (f"{kernel}.ppy", f"{kernel}.c", f"{kernel}_numba.py", f"{kernel}_cy.pyx"):
            assert (SUITE / name).is_file(), name


def test_the_suites_ppy_functions_are_all_typed(runner):
    """`ppy check -v` finds no dynamic local and no function left to Python."""
    for kernel in KERNELS:
        done = runner.ppy("check", "-v", SUITE / f"{kernel}.ppy", timeout=60)
        assert done.returncode == 0, done.stderr
        for line in done.stdout.splitlines():
            assert line.endswith(": vm"), line
