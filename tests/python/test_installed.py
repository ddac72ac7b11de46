"""A library that ships .ppy kernels in its wheel, installed into a
site-packages its users cannot write (issue 17): a warm cache shipped in the
wheel is used as is; without one, ppy builds into the per-user cache
($XDG_CACHE_HOME/ppy), says so only under --trace, and never writes into
site-packages. The importing process runs as another user (uid 61001, via
setpriv), since root writes through read-only permissions."""

import base64
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
import textwrap
from pathlib import Path

import pytest

from conftest import as_user, communicate, spawn

USER = 61001

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="making a site-packages its user cannot write needs root"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux) to run as another user"),
]

PYPROJECT = textwrap.dedent("""
    [build-system]
    requires = ["setuptools"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "kern"
    version = "1.0"

    [tool.setuptools]
    packages = ["kern"]

    # The kernels, and the warm cache if `ppy build --warm kern` made one
    # before the wheel was built (docs/cli.md, "Shipping kernels in a package").
    [tool.setuptools.package-data]
    kern = ["*.ppy", ".ppy-cache/*.ppyc", ".ppy-cache/*.ppyjit"]
""")

# The documented setuptools hook (docs/cli.md, "Shipping kernels in a
# package"): the warm cache is built into the wheel's build tree.
SETUP_HOOK = textwrap.dedent("""
    import os
    import subprocess
    import sys

    from setuptools import setup
    from setuptools.command.build_py import build_py


    class BuildPyWithWarmCache(build_py):
        def run(self):
            super().run()
            package = os.path.join(self.build_lib, "kern")
            env = {k: v for k, v in os.environ.items() if k != "PPY_CACHE_DIR"}
            subprocess.run([sys.executable, "-m", "ppy", "build", "--warm", package], check=True, env=env)
            cache = os.path.join(package, ".ppy-cache")
            for name in os.listdir(cache):  # the entries and machine code, not locks and the log
                if not name.endswith((".ppyc", ".ppyjit")):
                    os.remove(os.path.join(cache, name))


    setup(cmdclass={"build_py": BuildPyWithWarmCache})
""")

INIT = "import ppy  # noqa: F401  (the import hook for the kernels)\nfrom kern.ops import total\n"
HELPERS = "def twice(x: float) -> float:\n    return 2.0 * x\n"
OPS = textwrap.dedent("""
    from ppy import Buffer
    from kern.helpers import twice

    def total(xs: Buffer[float]) -> float:
        s: float = 0.0  # (a float register: the function's start is machine code)
        for i in range(len(xs)):
            s += twice(xs[i])
        return s
""")
PROBE = "import array, ppy, kern; print(kern.total(array.array('d', [1.0, 2.5])), ppy.tier(kern.total))"


def _run(args, cwd, env, user=None):
    if user is not None:
        args = as_user(user, args)
    process = spawn(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = communicate(process, 300)
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def _write_wheel(source, folder):
    """The wheel of the package in `source` (kern/ and, if there, its warm
    cache's entries and machine code), written directly: the wheel format
    needs no build backend, and some environments' setuptools cannot build
    one (no bdist_wheel)."""
    files = sorted(p for p in (source / "kern").rglob("*")
                   if p.is_file() and (p.parent.name != ".ppy-cache" or p.suffix in (".ppyc", ".ppyjit")))
    info = "kern-1.0.dist-info"
    extra = {f"{info}/METADATA": b"Metadata-Version: 2.1\nName: kern\nVersion: 1.0\n",
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ppy-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kern-1.0-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        entries = [(str(p.relative_to(source)), p.read_bytes()) for p in files] + list(extra.items())
        for name, data in entries:
            archive.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def _has_bdist_wheel():
    if importlib.util.find_spec("setuptools") is None:
        return False
    return importlib.util.find_spec("setuptools.command.bdist_wheel") is not None or \
        importlib.util.find_spec("wheel") is not None


def _snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.fixture
def installed(tmp_path, request):
    """(venv python, site-packages kern folder, env, per-user cache) for the
    wheel built with or without a warm cache (request.param)."""
    base = Path(tempfile.mkdtemp(prefix="ppy-installed-", dir="/tmp"))
    try:
        base.chmod(0o755)
        source = base / "src"
        (source / "kern").mkdir(parents=True)
        (source / "pyproject.toml").write_text(PYPROJECT)
        (source / "kern" / "__init__.py").write_text(INIT)
        (source / "kern" / "helpers.ppy").write_text(HELPERS)
        (source / "kern" / "ops.ppy").write_text(OPS)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PPY_")}
        if request.param == "warm":
            built = _run([sys.executable, "-m", "ppy", "build", "--warm", "kern"], source, env)
            assert built.returncode == 0, built.stderr
        if request.param == "hook":
            (source / "setup.py").write_text(SETUP_HOOK)
            wheel = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w",
                          str(base / "dist"), "."], source, env)
            assert wheel.returncode == 0, wheel.stderr
            [path] = (base / "dist").glob("kern-*.whl")
        else:
            path = _write_wheel(source, base / "dist")
        venv = _run([sys.executable, "-m", "venv", "--system-site-packages", str(base / "venv")], base, env)
        assert venv.returncode == 0, venv.stderr
        python = base / "venv" / "bin" / "python"
        # The new environment sees the ppy under test (this interpreter's,
        # which may itself be a virtual environment's) before any other.
        new_site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base,
                             env).stdout.strip())
        (new_site / "ppy_under_test.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        install = _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(path)], base, env)
        assert install.returncode == 0, install.stderr
        shutil.rmtree(source)  # nothing resolves to the build tree any more
        site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base,
                         env).stdout.strip())
        user_cache = base / "home-cache"
        user_cache.mkdir()
        os.chown(user_cache, USER, USER)
        env["XDG_CACHE_HOME"] = str(user_cache)
        yield python, site / "kern", env, user_cache / "ppy"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("installed", ["cold"], indirect=True)
def test_without_a_shipped_cache_kernels_build_into_the_per_user_cache(installed):
    python, package, env, user_cache = installed
    before = _snapshot(package)
    first = _run([str(python), "-c", PROBE], "/", dict(env, PPY_TRACE="1"), USER)
    assert first.stdout == "7.0 vm\n", first.stderr
    assert "is not writable; using the per-user cache" in first.stderr
    assert not [line for line in first.stderr.splitlines() if line.startswith("ppy: ")], first.stderr
    quiet = _run([str(python), "-c", PROBE], "/", env, USER)
    assert quiet.stdout == "7.0 vm\n" and quiet.stderr == "", quiet.stderr
    again = _run([str(python), "-c", PROBE], "/", dict(env, PPY_TRACE="1"), USER)
    assert again.stderr.count("cache hit") == 2, again.stderr
    assert _snapshot(package) == before  # nothing written into site-packages
    entries = sorted(p.name for p in user_cache.glob("*/*.ppyc"))
    assert entries == ["helpers.cpython-%d%d.ppyc" % sys.version_info[:2],
                       "ops.cpython-%d%d.ppyc" % sys.version_info[:2]]
    cleaned = _run([str(python), "-m", "ppy", "clean", "--user"], "/", env, USER)
    assert cleaned.returncode == 0, cleaned.stderr
    assert not list(user_cache.glob("*/*"))


@pytest.mark.parametrize("installed", [
    "warm",
    pytest.param("hook", marks=pytest.mark.skipif(not _has_bdist_wheel(),
                                                  reason="this environment's setuptools cannot build a wheel")),
], indirect=True)
def test_a_shipped_warm_cache_is_used_as_is(installed):
    python, package, env, user_cache = installed
    assert sorted(p.name for p in (package / ".ppy-cache").iterdir() if p.suffix == ".ppyc") == [
        "helpers.cpython-%d%d.ppyc" % sys.version_info[:2], "ops.cpython-%d%d.ppyc" % sys.version_info[:2]]
    before = _snapshot(package)
    result = _run([str(python), "-c", PROBE], "/", dict(env, PPY_TRACE="1"), USER)
    assert result.stdout == "7.0 jit\n", result.stderr
    assert result.stderr.count("cache hit") == 2, result.stderr
    assert result.stderr.count("jit: mapped machine code") == 2, result.stderr
    assert _snapshot(package) == before
    assert not user_cache.exists()
