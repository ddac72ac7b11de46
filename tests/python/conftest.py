"""Shared helpers for the pytest suites: run Python or ppy in a subprocess with a
private cache folder, so that tests never share state through .ppy-cache.

Every child a test starts goes through `spawn`: it starts in a session of its
own with the signal dispositions a terminal would give it (whatever the test
run inherited: a background job of a non-interactive shell ignores SIGINT, and
an ignored signal stays ignored across exec), and its whole process group is
killed when the test ends, on every path. The test run itself is a child
subreaper, so that a grandchild whose parent died is still found: the run
fails if any process is left over at its end."""

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The signals a child relies on getting their default action for.
_RESET_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE,
                  signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGCHLD]

_children = []  # every Popen that spawn started in the current test


def _reset_signals():
    # Runs in the forked child before exec: dispositions and mask as a
    # terminal's foreground job has them.
    for number in _RESET_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def spawn(args, **kwargs):
    """subprocess.Popen in a session of its own, with default signal dispositions;
    killed (with its process group) when the test ends."""
    process = subprocess.Popen(args, start_new_session=True, preexec_fn=_reset_signals, **kwargs)
    _children.append(process)
    return process


def as_user(uid, args):
    """`args` run as `uid` (and its own group, no others) by setpriv, keeping
    only CAP_DAC_READ_SEARCH, to read ppy and Python where root installed
    them: everything it writes, owns or may write is that user's own."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search", *args]


def trace_counts(stderr, qualname):
    """(calls, machine-code entries) of one compiled function in the summary
    PPY_TRACE=1 prints at exit ("kernels.dot[f32]  3 calls  0.2 ms  2 jit
    entries"), or None if the summary does not list it."""
    match = re.search(rf"^ppy trace:\s+{re.escape(qualname)}\s+(\d+) calls\s+\S+ ms\s+(\d+) jit entries$", stderr, re.M)
    return (int(match.group(1)), int(match.group(2))) if match else None


def kill_group(process):
    """SIGKILL to the child's process group (everything it started), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.kill()
    except ProcessLookupError:
        pass
    process.wait()


def communicate(process, timeout):
    """Popen.communicate that kills the process group on timeout or any failure."""
    try:
        return process.communicate(timeout=timeout)
    except BaseException:
        kill_group(process)
        raise


@pytest.fixture(autouse=True)
def _kill_children_after_each_test():
    yield
    while _children:
        process = _children.pop()
        if process.poll() is None:
            kill_group(process)
        else:
            # The child is gone; anything left in its group is not wanted either.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _set_child_subreaper():
    if not sys.platform.startswith("linux"):
        return False
    PR_SET_CHILD_SUBREAPER = 36
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _own_children():
    """Pids whose parent is this process (Linux /proc), zombies included."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command is in parentheses and may contain spaces: split after it.
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == me:
            found.append((int(entry), fields[0], stat[stat.find("(") + 1:stat.rfind(")")]))
    return found


def _distributes_tests(config):
    """True in the controller of a pytest-xdist run (`-n N`): its children are
    the workers, each of which checks its own children."""
    workers = getattr(config.option, "numprocesses", None)
    return not hasattr(config, "workerinput") and workers not in (None, 0, "0")


def pytest_configure(config):
    # scripts/test.sh runs with pytest-xdist and `--dist loadgroup`; a plain
    # run knows the mark too.
    config.addinivalue_line("markers", "xdist_group(name): tests that run in one pytest-xdist worker")


def pytest_sessionstart(session):
    session.config._ppy_subreaper = not _distributes_tests(session.config) and _set_child_subreaper()


def pytest_sessionfinish(session, exitstatus):
    if not getattr(session.config, "_ppy_subreaper", False):
        return
    deadline = time.monotonic() + 5
    left = [child for child in _own_children() if child[1] != "Z"]
    while left and time.monotonic() < deadline:  # a child may be exiting right now
        time.sleep(0.1)
        left = [child for child in _own_children() if child[1] != "Z"]
    for pid, _, _ in _own_children():
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    if left:
        names = ", ".join(f"{pid} ({name})" for pid, _, name in left)
        session.config.get_terminal_writer().line(f"\nconftest: processes left behind by the tests: {names}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


class Runner:
    def __init__(self, cache_dir):
        self.cache_dir = cache_dir

    def env(self, **overrides):
        env = dict(os.environ)
        env["PPY_CACHE_DIR"] = str(self.cache_dir)
        # The per-user cache (where a project cache cannot be used) of the
        # test, never the real user's.
        env["XDG_CACHE_HOME"] = str(self.cache_dir.parent / "user-cache")
        env.pop("PPY_IMPORT", None)
        env.pop("PPY_JIT", None)
        env.pop("PPY_QUIET", None)
        env.pop("PPY_TRACE", None)
        env.update({k: v for k, v in overrides.items() if v is not None})
        return env

    def run(self, args, cwd=None, timeout=300, **env):
        process = spawn(args, cwd=cwd, env=self.env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stdout, stderr = communicate(process, timeout)
        return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)

    def entry(self, source):
        """The cache entry of the module at `source`, as ppy names it under this
        runner's PPY_CACHE_DIR."""
        from ppy import _entry

        saved = os.environ.get("PPY_CACHE_DIR")
        os.environ["PPY_CACHE_DIR"] = str(self.cache_dir)
        try:
            return Path(_entry.entry_path_for(str(source)))
        finally:
            if saved is None:
                del os.environ["PPY_CACHE_DIR"]
            else:
                os.environ["PPY_CACHE_DIR"] = saved

    def python(self, *args, **kwargs):
        return self.run([sys.executable, *map(str, args)], **kwargs)

    def ppy(self, *args, **kwargs):
        return self.run([sys.executable, "-m", "ppy", *map(str, args)], **kwargs)


@pytest.fixture
def runner(tmp_path):
    return Runner(tmp_path / "cache")
