"""The cache is a trust boundary (docs/cli.md, "Who ppy trusts"): a cache entry
is code, so ppy loads nothing from a folder or file that another user owns or
can write, writes nothing there, follows no symlink in a cache, and never waits
for a lock for ever.

The forged entry below is a real exploit: in the user's own cache it runs its
code (the control case), so each refusal is shown to matter.
"""

import fcntl
import marshal
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import Runner, as_user, communicate, kill_group, spawn
from test_cache import KERNEL, PROBE, _sections

TAG = sys.implementation.cache_tag
NOBODY = 65534  # another user: the attacker, where the test runs as root


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "kernel.ppy").write_text(KERNEL)
    return folder


def _name(project):
    """The entry's file name under any PPY_CACHE_DIR (it depends on the source's folder only)."""
    return Runner(Path("/")).entry(project / "kernel.ppy").name


def _forge(entry, marker):
    """`entry` with its module code replaced by code that writes `marker`, and
    the checksum fixed: what anyone can make from the public source."""
    from ppy import _ppy

    evil = marshal.dumps(compile(f"open({str(marker)!r}, 'w').write('ran')", "kernel.ppy", "exec"))
    for tag, start, end in _sections(entry):
        if tag == "PYMC":
            entry = entry[:start] + b"PYMC" + len(evil).to_bytes(8, "little") + evil + entry[end:]
            break
    else:
        raise AssertionError("no PYMC section")
    body = entry[:-8]
    return body + int(_ppy.digest(body)[:16], 16).to_bytes(8, "little")


def _good_entry(runner, project):
    assert runner.python("-c", PROBE, cwd=project).returncode == 0
    return (runner.entry(project / "kernel.ppy")).read_bytes()


def _snapshot(folder):
    return {p.name: (p.is_symlink(), p.lstat().st_mtime_ns, p.lstat().st_size) for p in folder.iterdir()}


def test_a_forged_entry_runs_from_a_private_folder_so_the_rules_matter(runner, project, tmp_path):
    marker = tmp_path / "marker"
    forged = _forge(_good_entry(runner, project), marker)
    (runner.entry(project / "kernel.ppy")).write_bytes(forged)
    runner.python("-c", PROBE, cwd=project)
    assert marker.exists()


def test_a_shared_folder_is_neither_read_nor_written(runner, project, tmp_path):
    marker = tmp_path / "marker"
    forged = _forge(_good_entry(runner, project), marker)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp
    (shared / _name(project)).write_bytes(forged)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (shared / "build.log").symlink_to(victim)
    (shared / f"{_name(project)}.lock").symlink_to(victim)
    before = _snapshot(shared)
    result = runner.python("-c", PROBE + "; import kernel as again", cwd=project, PPY_CACHE_DIR=str(shared),
                           PPY_TRACE="1")
    assert result.stdout == "3.5 vm\n", result.stderr
    assert not marker.exists()
    assert victim.read_text() == "mine\n"
    assert _snapshot(shared) == before
    assert result.stderr.count("is shared (not owned by you, or writable by others)") == 1
    assert "shared cache folder" in result.stderr


def test_an_entry_others_can_write_is_not_loaded(runner, project, tmp_path):
    marker = tmp_path / "marker"
    entry = runner.entry(project / "kernel.ppy")
    forged = _forge(_good_entry(runner, project), marker)
    entry.write_bytes(forged)
    entry.chmod(0o666)
    result = runner.python("-c", PROBE, cwd=project)
    assert result.stdout == "3.5 vm\n", result.stderr
    assert not marker.exists()
    # Rebuilt and published over it, private again.
    assert entry.stat().st_mode & 0o022 == 0
    assert entry.read_bytes() != forged


def test_a_symlinked_entry_is_not_followed(runner, project, tmp_path):
    marker = tmp_path / "marker"
    elsewhere = tmp_path / "elsewhere.ppyc"
    elsewhere.write_bytes(_forge(_good_entry(runner, project), marker))
    entry = runner.entry(project / "kernel.ppy")
    entry.unlink()
    entry.symlink_to(elsewhere)
    result = runner.python("-c", PROBE, cwd=project)
    assert result.stdout == "3.5 vm\n", result.stderr
    assert not marker.exists()
    assert not entry.is_symlink()  # replaced by the rebuilt entry, not written through


def test_a_fifo_in_place_of_an_entry_does_not_hang_the_import(runner, project):
    runner.cache_dir.mkdir()
    os.mkfifo(runner.entry(project / "kernel.ppy"))
    result = runner.python("-c", PROBE, cwd=project, timeout=60)
    assert result.stdout == "3.5 vm\n", result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another user can only be made by root")
def test_files_and_folders_of_another_user_are_never_loaded(runner, project, tmp_path):
    marker = tmp_path / "marker"
    entry = runner.entry(project / "kernel.ppy")
    forged = _forge(_good_entry(runner, project), marker)
    entry.write_bytes(forged)
    os.chown(entry, NOBODY, NOBODY)
    result = runner.python("-c", PROBE, cwd=project)
    assert result.stdout == "3.5 vm\n", result.stderr
    assert not marker.exists()
    # A folder another user owns, though no one else can write it.
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    (theirs / _name(project)).write_bytes(forged)
    for path in (theirs, theirs / _name(project)):
        os.chown(path, NOBODY, NOBODY)
    result = runner.python("-c", PROBE, cwd=project, PPY_CACHE_DIR=str(theirs))
    assert result.stdout == "3.5 vm\n", result.stderr
    assert not marker.exists()
    assert sorted(p.name for p in theirs.iterdir()) == [_name(project)]


@pytest.mark.skipif(os.geteuid() != 0, reason="two users on one machine need root to make the second")
def test_two_users_sharing_a_sticky_folder(runner, project, tmp_path):
    """The other user (uid 65534) plants a forged entry, a lock they hold open,
    and symlinks to this user's files under every name ppy might write; this
    user's import runs none of it and writes nothing there."""
    marker = tmp_path / "marker"
    forged = _forge(_good_entry(runner, project), marker)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    mine = tmp_path / "bashrc"
    mine.write_text("# mine\n")
    planted = {
        _name(project): forged,
        f"{_name(project)}.lock": b"",
    }
    for name, data in planted.items():
        (shared / name).write_bytes(data)
        os.chown(shared / name, NOBODY, NOBODY)
    for name in ("build.log", f"{_name(project)}.{os.getpid()}.tmp"):
        (shared / name).symlink_to(mine)
        os.lchown(shared / name, NOBODY, NOBODY)
    holder = os.open(shared / f"{_name(project)}.lock", os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        before = _snapshot(shared)
        result = runner.python("-c", PROBE, cwd=project, PPY_CACHE_DIR=str(shared), timeout=60)
    finally:
        os.close(holder)
    assert result.stdout == "3.5 vm\n", result.stderr
    assert not marker.exists()
    assert mine.read_text() == "# mine\n"
    assert _snapshot(shared) == before
    assert all(p.lstat().st_uid == NOBODY for p in shared.iterdir())


ATTACKER, VICTIM = 61001, 61002  # two ordinary users, made by root for the test below


def _as_user(uid, code, cwd, env):
    """`python -c code` as `uid` (conftest.as_user)."""
    return spawn(as_user(uid, [sys.executable, "-c", code]), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run_as(uid, code, cwd, env):
    process = _as_user(uid, code, cwd, env)
    stdout, stderr = communicate(process, 120)
    return subprocess.CompletedProcess(code, process.returncode, stdout, stderr)


@pytest.mark.skipif(os.geteuid() != 0, reason="two users on one machine need root to make them")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux) to run as another user")
def test_two_real_users_sharing_a_sticky_folder(runner, tmp_path):
    """Two processes with two uids (neither root) and one sticky cache folder,
    as PPY_CACHE_DIR=/tmp would give them. The attacker plants, in their own
    name, a forged entry, a lock they hold, and symlinks to the victim's file
    under every name ppy writes; the victim's import runs none of it, writes
    nothing there, and gets the right answer. The other way round, the
    attacker's import neither loads nor writes the victim's private cache."""
    base = Path(tempfile.mkdtemp(prefix="ppy-two-users-", dir="/tmp"))
    holder = None
    try:
        base.chmod(0o755)
        project = base / "project"
        project.mkdir()
        (project / "kernel.ppy").write_text(KERNEL)
        shared = base / "shared"
        shared.mkdir()
        shared.chmod(0o1777)
        drop = base / "drop"  # where forged code would leave its mark
        drop.mkdir()
        drop.chmod(0o1777)
        marker = drop / "marker"
        home = base / "victim-home"
        home.mkdir()
        (home / "bashrc").write_text("# mine\n")
        os.chown(home, VICTIM, VICTIM)
        os.chown(home / "bashrc", VICTIM, VICTIM)
        name = _name(project)
        forged = base / "forged.ppyc"
        forged.write_bytes(_forge(_good_entry(runner, project), marker))
        forged.chmod(0o644)
        env = runner.env(PPY_CACHE_DIR=str(shared), PPY_LOCK_TIMEOUT="2", HOME=str(home))

        # The attacker's own files, made by the attacker's process.
        plant = (f"import os, shutil; os.chdir({str(shared)!r}); shutil.copyfile({str(forged)!r}, {name!r}); "
                 f"os.symlink({str(home / 'bashrc')!r}, 'build.log'); "
                 f"os.symlink({str(home / 'bashrc')!r}, {name + '.tmp'!r})")
        planted = _run_as(ATTACKER, plant, base, env)
        if planted.returncode != 0 and "setpriv" in planted.stderr:
            pytest.skip(f"cannot run as another user here: {planted.stderr.strip()}")
        assert planted.returncode == 0, planted.stderr
        holder = _as_user(ATTACKER, (f"import fcntl, os, time; fd = os.open({str(shared / (name + '.lock'))!r}, "
                                     "os.O_RDWR | os.O_CREAT, 0o644); fcntl.flock(fd, fcntl.LOCK_EX); "
                                     "print('held', flush=True); time.sleep(120)"), base, env)
        assert holder.stdout.readline() == "held\n"
        assert all(p.lstat().st_uid == ATTACKER for p in shared.iterdir())
        before = _snapshot(shared)

        victim = _run_as(VICTIM, PROBE, project, env)
        assert victim.stdout == "3.5 vm\n", victim.stderr
        assert "is shared (not owned by you, or writable by others)" in victim.stderr
        assert not marker.exists()
        assert (home / "bashrc").read_text() == "# mine\n"
        assert _snapshot(shared) == before
        assert all(p.lstat().st_uid == ATTACKER for p in shared.iterdir())

        # The victim's private cache, then the attacker pointed at it.
        private = home / "cache"
        own = _run_as(VICTIM, PROBE, project, dict(env, PPY_CACHE_DIR=str(private)))
        assert own.stdout == "3.5 vm\n", own.stderr
        entry = private / name
        assert entry.stat().st_uid == VICTIM and entry.stat().st_mode & 0o022 == 0
        entry.write_bytes(_forge(entry.read_bytes(), marker))  # as if the victim's own entry were a trap
        before = _snapshot(private)
        theirs = _run_as(ATTACKER, PROBE, project, dict(env, PPY_CACHE_DIR=str(private)))
        assert theirs.stdout == "3.5 vm\n", theirs.stderr
        assert not marker.exists()
        assert _snapshot(private) == before
    finally:
        if holder is not None:
            kill_group(holder)
            holder.wait()
            for stream in (holder.stdout, holder.stderr):
                stream.close()
        shutil.rmtree(base, ignore_errors=True)


def test_a_held_lock_gives_up_after_the_timeout_and_builds_in_memory(runner, project):
    runner.cache_dir.mkdir()
    lock = os.open(runner.cache_dir / f"{_name(project)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        result = runner.python("-c", PROBE, cwd=project, PPY_LOCK_TIMEOUT="0.5", timeout=60)
    finally:
        os.close(lock)
    assert result.stdout == "3.5 vm\n", result.stderr
    assert result.stderr.count("gave up waiting for") == 1
    assert "building in memory" in result.stderr
    assert not (runner.entry(project / "kernel.ppy")).exists()


def test_machine_code_others_can_write_is_not_mapped(runner, project):
    assert runner.ppy("build", "--warm", project).returncode == 0
    [code] = runner.cache_dir.glob("kernel.*.ppyjit")
    code.chmod(0o666)
    result = runner.python("-c", PROBE, cwd=project, PPY_TRACE="1")
    assert result.stdout == "3.5 vm\n", result.stderr
    assert "jit: mapped" not in result.stderr
    code.chmod(0o644)
    result = runner.python("-c", PROBE, cwd=project, PPY_TRACE="1")
    assert "jit: mapped" in result.stderr


def test_clean_removes_a_symlinked_cache_folders_link_only(runner, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    target = tmp_path / "scratch"
    target.mkdir()
    (target / "kernel.cpython-311.ppyc").write_bytes(b"x")
    (project / ".ppy-cache").symlink_to(target)
    result = runner.ppy("clean", project)
    assert result.returncode == 0, result.stderr
    assert not (project / ".ppy-cache").exists() and not (project / ".ppy-cache").is_symlink()
    assert (target / "kernel.cpython-311.ppyc").exists()


def test_clean_of_ppy_cache_dir_removes_only_ppys_files(runner, tmp_path):
    folder = tmp_path / "scratch"
    folder.mkdir()
    for name in ("notes.txt", "notes.tmp", "x.lock"):
        (folder / name).write_text("keep")
    for name in (f"kernel.{TAG}.ppyc", f"kernel.{TAG}.ppyc.lock", f"kernel.{TAG}.ppyc.123.ab12cd34.tmp", "build.log"):
        (folder / name).write_bytes(b"x")
    result = runner.ppy("clean", tmp_path / "nothing-here", PPY_CACHE_DIR=str(folder))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["notes.tmp", "notes.txt", "x.lock"]
