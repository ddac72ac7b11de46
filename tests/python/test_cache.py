"""The project cache under concurrency, crashes, corruption and permissions."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import communicate, spawn

KERNEL = """\
from ppy import Buffer

def total(xs: Buffer[float]) -> float:
    s = 0.0
    for x in xs:
        s += x
    return s

def scale(x: float, k: float) -> float:
    return x * k
"""

PROBE = "import ppy, array, kernel; print(kernel.total(array.array('d', [1.0, 2.5])), ppy.tier(kernel.total))"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "kernel.ppy").write_text(KERNEL)
    return tmp_path


def _builds(runner):
    log = runner.cache_dir / "build.log"
    return log.read_text().splitlines() if log.exists() else []


def _entry(runner, project):
    return runner.entry(project / "kernel.ppy")


def test_eight_processes_on_a_cold_cache_build_once(runner, project):
    processes = [
        spawn([sys.executable, "-c", PROBE], cwd=project, env=runner.env(), stdout=subprocess.PIPE,
              stderr=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    outputs = [communicate(process, 120) for process in processes]
    assert [process.returncode for process in processes] == [0] * 8, outputs
    assert {out for out, _ in outputs} == {"3.5 vm\n"}
    assert len(_builds(runner)) == 1


def test_a_builder_killed_mid_build_leaves_no_partial_entry(runner, project):
    # Hold the build inside the lock: the builder sleeps in the compiler's
    # place, then is killed with SIGKILL.
    slow_build = textwrap.dedent("""
        import time, ppy, ppy._build as b
        original = b.build
        def slow(*args, **kwargs):
            data = original(*args, **kwargs)
            open('building', 'w').close()
            time.sleep(60)
            return data
        b.build = slow
        import kernel
    """)
    builder = spawn([sys.executable, "-c", slow_build], cwd=project, env=runner.env())
    deadline = time.time() + 60
    while not (project / "building").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert (project / "building").exists()
    os.kill(builder.pid, signal.SIGKILL)
    builder.wait()
    assert not _entry(runner, project).exists()
    assert not [p for p in runner.cache_dir.iterdir() if p.suffix == ".ppyc"]
    result = runner.python("-c", PROBE, cwd=project)
    assert result.stdout == "3.5 vm\n", result.stderr
    assert len(_builds(runner)) == 1


def _sections(data):
    """(tag, start, end) of every section of an entry, per vm/serialize.h."""
    position = 8 + 4
    for _ in range(3):  # ppy version, abi, key
        length, shift = 0, 0
        while True:
            byte = data[position]
            position += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        position += length
    sections = [("header", 0, position)]
    while data[position:position + 4] != b"END!":
        tag = data[position:position + 4].decode()
        size = int.from_bytes(data[position + 4:position + 12], "little")
        sections.append((tag, position, position + 12 + size))
        position += 12 + size
    sections.append(("trailer", position, len(data)))
    return sections


def test_every_truncation_and_flipped_section_is_rebuilt_with_one_warning(runner, project):
    assert runner.python("-c", PROBE, cwd=project).returncode == 0
    good = _entry(runner, project).read_bytes()
    sections = _sections(good)
    assert [name for name, _, _ in sections][:5] == ["header", "FUNC", "CODE", "KONS", "LINE"]
    damaged = []
    for name, start, end in sections:
        damaged.append((f"truncated before {name}", good[:start]))
        middle = (start + end) // 2
        flipped = bytearray(good)
        flipped[middle] ^= 0x10
        damaged.append((f"bit flipped in {name}", bytes(flipped)))
    for what, data in damaged:
        _entry(runner, project).write_bytes(data)
        result = runner.python("-c", PROBE, cwd=project)
        assert result.stdout == "3.5 vm\n", (what, result.stderr)
        assert result.stderr.count("warning") == 1 or "version" in result.stderr or data[:8] != good[:8], (
            what, result.stderr)
        assert _entry(runner, project).read_bytes() == good, what
    assert len(_builds(runner)) == 1 + len(damaged)


def test_a_read_only_cache_folder_builds_into_the_per_user_cache(runner, project, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes through read-only permissions (tests/python/test_installed.py runs as another user)")
    runner.cache_dir.mkdir()
    runner.cache_dir.chmod(0o555)
    try:
        result = runner.python("-c", PROBE + "; import kernel as again", cwd=project, PPY_TRACE="1")
        assert result.stdout.startswith("3.5 vm\n")
        assert result.stderr.count("is not writable; using the per-user cache") == 1
        assert not [line for line in result.stderr.splitlines() if line.startswith("ppy: ")]
        assert list(runner.cache_dir.iterdir()) == []
        assert list((tmp_path / "user-cache" / "ppy").glob("*/kernel.*.ppyc"))
    finally:
        runner.cache_dir.chmod(0o755)


def test_an_unwritable_cache_location_builds_into_the_per_user_cache(runner, project, tmp_path):
    # A cache folder under a regular file can never be created, even by root.
    blocker = project / "blocker"
    blocker.write_text("")
    env = {"PPY_CACHE_DIR": str(blocker / "cache")}
    first = runner.python("-c", PROBE, cwd=project, PPY_TRACE="1", **env)
    assert first.stdout.startswith("3.5 vm\n"), first.stderr
    assert "is not writable; using the per-user cache" in first.stderr
    assert "cache miss (no entry), built into the cache" in first.stderr
    again = runner.python("-c", PROBE, cwd=project, PPY_TRACE="1", **env)
    assert "cache hit" in again.stderr, again.stderr
    entries = list((tmp_path / "user-cache" / "ppy").glob("*/kernel.*.ppyc"))
    assert len(entries) == 1 and entries[0].parent.stat().st_mode & 0o777 == 0o700
    # ppy clean --user empties it.
    assert runner.ppy("clean", "--user", cwd=project).returncode == 0
    assert not list((tmp_path / "user-cache" / "ppy").glob("*/*"))


def test_with_no_cache_ppy_builds_in_memory_with_one_note(runner, project):
    blocker = project / "blocker"
    blocker.write_text("")
    result = runner.python("-c", PROBE + "; import kernel as again", cwd=project, PPY_CACHE_DIR=str(blocker / "cache"),
                           XDG_CACHE_HOME=str(blocker / "user"))
    assert result.stdout == "3.5 vm\n", result.stderr
    assert result.stderr.count("not writable; building in memory") == 1


def test_editing_an_imported_module_rebuilds_its_importer(runner, tmp_path):
    (tmp_path / "helpers.ppy").write_text("def one() -> int:\n    return 1\n")
    (tmp_path / "user.ppy").write_text("import helpers\n\ndef two() -> int:\n    return helpers.one() + 1\n")
    probe = "import ppy, user; print(user.two())"
    assert runner.python("-c", probe, cwd=tmp_path).stdout == "2\n"
    (tmp_path / "helpers.ppy").write_text("def one() -> int:\n    return 10\n")
    result = runner.python("-c", probe, cwd=tmp_path, PPY_TRACE="1")
    assert result.stdout == "11\n"
    assert "module user (" in result.stderr and "cache miss (imported module changed)" in result.stderr
    assert "module helpers (" in result.stderr and "cache miss (source changed)" in result.stderr


def test_a_stale_entry_is_never_mistaken_for_fresh(runner, project):
    assert runner.python("-c", PROBE, cwd=project).stdout == "3.5 vm\n"
    (project / "kernel.ppy").write_text(KERNEL.replace("s += x", "s += 2 * x"))
    assert runner.python("-c", PROBE, cwd=project).stdout == "7.0 vm\n"
