"""ppy as a user installs it: the wheel `pip wheel .` made for this interpreter,
installed into a fresh virtual environment, runs differential programs with
no source tree in sight.

scripts/test.sh builds the wheel and names it in PPY_WHEEL; without it (a
plain `pytest` in a development checkout) the test skips.
"""

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT, Runner

# Every fifth program of the differential suite, and those that import
# modules of their own: the suite itself (test_programs.py) runs all of them
# in every mode from the same wheel, installed into scripts/test.sh's virtual
# environment; this test adds a fresh one, without the interpreter's own
# site-packages and with no source tree anywhere, where a sample shows as
# much as the whole (which took 215 s here, one process at a time, on each
# CPython of the CI run).
PROGRAMS = [path for index, path in enumerate(sorted((ROOT / "tests" / "programs").glob("*.ppy")))
            if index % 5 == 0 or "modules_" in path.read_text()]


def _needs(path, module):
    return re.search(rf"^\s*(import|from) {module}\b", path.read_text(), re.M) is not None


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    wheel = os.environ.get("PPY_WHEEL")
    if not wheel:
        pytest.skip("PPY_WHEEL is not set: scripts/test.sh builds the wheel and names it there")
    wheel = Path(wheel)
    assert wheel.is_file(), wheel
    folder = tmp_path_factory.mktemp("wheel")
    venv = folder / "venv"
    runner = Runner(folder / "cache")
    created = runner.run([sys.executable, "-m", "venv", venv], timeout=300)
    assert created.returncode == 0, created.stderr
    python = venv / "bin" / "python"
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = runner.run([*pip, "--no-deps", "--no-index", wheel], timeout=300)
    assert done.returncode == 0, done.stderr
    # numpy from the package index (pip's cache, usually): some programs use it.
    have_numpy = runner.run([*pip, "numpy"], timeout=600).returncode == 0
    return python, have_numpy, folder


def test_the_wheel_runs_differential_programs_without_the_source_tree(installed):
    python, have_numpy, folder = installed
    programs = folder / "programs"
    programs.mkdir()
    for path in PROGRAMS:
        shutil.copy(path, programs / path.name)
    # (The helper modules some programs import, in folders of their own.)
    for helpers in sorted((ROOT / "tests" / "programs").glob("modules_*")):
        shutil.copytree(helpers, programs / helpers.name, ignore=shutil.ignore_patterns(".ppy-cache", "__pycache__"))
    runner = Runner(folder / "cache")
    where = runner.run([python, "-c", "import ppy, ppy._ppy; print(ppy.__file__); print(ppy._ppy.__file__)"],
                       cwd=programs)
    assert where.returncode == 0, where.stderr
    for line in where.stdout.splitlines():
        assert line.startswith(str(folder / "venv")), where.stdout
        assert not line.startswith(str(ROOT)), where.stdout
    compared = 0
    for path in sorted(programs.glob("*.ppy")):
        if _needs(path, "torch") or (_needs(path, "numpy") and not have_numpy):
            continue
        expected = runner.run([python, path.name], cwd=programs, PPY_IMPORT="python")
        assert "ModuleNotFoundError" not in expected.stderr, (path.name, expected.stderr)
        for mode in ({"PPY_JIT": "0"}, {"PPY_JIT": "eager"}):
            actual = runner.run([python, "-m", "ppy", "run", path.name], cwd=programs, **mode)
            assert actual.stdout == expected.stdout, (path.name, mode, actual.stderr)
            assert actual.returncode == expected.returncode, (path.name, mode, actual.stderr)
        compared += 1
    assert compared >= len(PROGRAMS) * 3 // 4, compared
