"""The project cache: where builds of .ppy modules live, and the rules that let
many processes share them.

An entry is `.ppy-cache/<stem>.<cache tag>.ppyc` beside the source (or under
PPY_CACHE_DIR). Its key hashes the source of the module and of every .ppy module
it imports (its import closure), ppy's version, the bytecode version and the
Python ABI tag; nothing rank- or device-specific, so every rank and launcher
shares it. The rules:

* publish atomically: write a temporary file in the cache folder, then rename;
* one builder per module: an flock around the build; a waiter re-reads the
  entry when the lock is released, and a killed builder releases it with its
  process;
* everything read back is untrusted: the C++ loader checks magic, versions and
  checksum and verifies the bytecode; a bad entry is rebuilt with one warning;
* a cache folder that cannot be written (or is shared) falls back to the
  per-user cache ($XDG_CACHE_HOME/ppy), traced (a shared one with a note); if
  that cannot be written either, to building in memory, with one note;
* the cache is a trust boundary (docs/cli.md, "Who ppy trusts"): nothing is read
  from or written to a folder or file that another user owns or can write;
  files are opened relative to the checked folder, never through a symlink, and
  created new (O_EXCL); waiting for a lock ends after PPY_LOCK_TIMEOUT seconds;
* a miss says why: no entry, source changed, imported module changed, version
  changed, corrupt entry.

The entry's own rules (format tags, version, paths, miss reasons, the trust
checks) are ppy._entry's; finding and checking an entry (the warm path) is
ppy._hook's `load`, which imports this module, the build path, only on a miss.

May import: `_entry`, `_notes` and `_trace`; lazily, `_build` (which loads the
compiler) and the extension `_ppy`. Never `_hook`, which imports this module.

Every build appends a line to `<cache folder>/build.log`, so that tests and
users can see who built what without timing anything.
"""

import marshal
import os
import time

from ppy import _entry, _notes, _trace
from ppy._entry import digest as _digest


def _closure(source_path, source, finder):
    """The .ppy modules `source` imports, transitively: [(name, path, digest)],
    each path relative to the folder of `source_path`, so that an entry stays
    valid where the files keep their places relative to each other (a package
    installed with the cache it shipped)."""
    base = os.path.dirname(os.path.abspath(source_path))
    seen = {os.path.abspath(source_path)}
    result = []
    pending = [source]
    while pending:
        for name in _imported_names(pending.pop()):
            path = finder(name)
            if path is None or os.path.abspath(path) in seen:
                continue
            seen.add(os.path.abspath(path))
            with open(path, "rb") as handle:
                text = handle.read()
            result.append((name, os.path.relpath(os.path.abspath(path), base), _digest(text)))
            pending.append(text)
    result.sort()
    return result


def _imported_names(source):
    """Every module name an import statement in `source` names."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # the build reports it, as CPython would
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _key(source_digest, dependencies):
    from ppy import _ppy

    parts = [_entry.version(), str(_ppy.BYTECODE_VERSION), _entry.ABI, source_digest]
    parts.extend(f"{name}={digest}" for name, _, digest in dependencies)
    return _digest("\n".join(parts).encode())


class LockTimeout(OSError):
    """Another process held a module's build lock for PPY_LOCK_TIMEOUT seconds."""


def _lock_timeout():
    try:
        return float(os.environ.get("PPY_LOCK_TIMEOUT", "60"))
    except ValueError:
        return 60.0


class _Lock:
    """An exclusive flock on `<entry>.lock` in the trusted folder `dir_fd`,
    released by close or by process death. The file is private (0600): no other
    user can open it to hold the lock. Waiting gives up after PPY_LOCK_TIMEOUT
    seconds (LockTimeout), so a stuck holder costs a build in memory, never a
    hang."""

    def __init__(self, dir_fd, name):
        import fcntl

        self._fd = _entry.open_trusted_file(name, dir_fd, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + _lock_timeout()
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self._fd)
                    raise LockTimeout(f"gave up waiting for {name} after {_lock_timeout():g} s") from None
                time.sleep(0.02)
            except BaseException:
                os.close(self._fd)
                raise

    def release(self):
        os.close(self._fd)


def _publish(dir_fd, name, data):
    """Writes `data` to `name` in the trusted folder `dir_fd` atomically: a reader
    sees all of it or none. The temporary file is created new (O_EXCL, never
    through a symlink planted under its name) and renamed over the entry."""
    temporary = f"{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                 dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _log_build(dir_fd, module_name, source_path, reason):
    line = (
        f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} rank={os.environ.get('RANK', '-')} "
        f"module={module_name} source={source_path} reason={reason.replace(' ', '-')}\n"
    )
    try:
        fd = _entry.open_trusted_file("build.log", dir_fd, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def _open_cache_folder(cache_dir, mode=0o755):
    """(descriptor of the cache folder or None, why not): creates the folder
    (0755: a folder others can write is one ppy will not use; the per-user
    cache 0700) and checks it."""
    try:
        if mode == 0o700:
            os.makedirs(os.path.dirname(cache_dir), mode=0o700, exist_ok=True)
        os.makedirs(cache_dir, mode=mode, exist_ok=True)
    except OSError:
        return None, "unwritable"
    dir_fd = _entry.open_trusted_folder(cache_dir)
    if dir_fd is None:
        return None, "shared"
    if not os.access(cache_dir, os.W_OK):
        os.close(dir_fd)
        return None, "unwritable"
    return dir_fd, None


_memory_notes = set()


def _note_memory(cache_dir, why):
    """One note per folder and process: why this build stays in memory."""
    if cache_dir in _memory_notes:
        return
    _memory_notes.add(cache_dir)
    if why == "shared":
        _notes.note(f"the cache folder {cache_dir} is shared (not owned by you, or writable by others): "
                    "nothing is loaded from it or written to it; building in memory")
    elif why == "unwritable":
        _notes.note(f"the cache folder {cache_dir} is not writable; building in memory")
    else:
        _notes.note(f"{why}; building in memory")


def _is_shared(folder):
    """Whether `folder` exists and another user owns it or can write it."""
    try:
        return not _entry.private(os.stat(folder))
    except OSError:
        return False


def _note_user_cache(project_dir, user_dir, shared):
    """One note per folder and process: which project cache the per-user cache
    stands in for. A shared folder is a note on stderr (someone pointed ppy at
    a folder others can write); a read-only one, an installed package's, is
    normal and only traced."""
    if project_dir in _memory_notes:
        return
    _memory_notes.add(project_dir)
    if shared:
        _notes.note(f"the cache folder {project_dir} is shared (not owned by you, or writable by others): "
                    f"nothing is loaded from it or written to it; using the per-user cache {user_dir}")
    else:
        _trace.event(f"the cache folder {project_dir} is not writable; using the per-user cache {user_dir}")


def build_machine_code(loaded, module_name):
    """`ppy build --warm`: compiles every function of `loaded` to machine code and
    publishes it beside the bytecode, under its own lock, unless it is there
    already. Returns (built, seconds)."""
    from ppy import _ppy

    started = time.perf_counter()
    path = _entry.machine_code_path_for(loaded.path)
    namespace = {"__name__": module_name, "__builtins__": __builtins__}
    loaded.compiled.attach(namespace)
    existing = _entry.read_trusted(path)
    if existing is not None:
        try:
            _ppy.jit_load(loaded.compiled, existing, _entry.version(), loaded.key)
            return False, time.perf_counter() - started
        except _ppy.EntryError:
            pass
    folder, name = os.path.split(path)
    dir_fd, why = _open_cache_folder(folder)
    if dir_fd is None:
        raise OSError(f"the cache folder {folder} is {'shared' if why == 'shared' else 'not writable'}: "
                      "machine code is not written to it")
    try:
        lock = _Lock(dir_fd, name + _entry.LOCK_SUFFIX)
        try:
            data = _ppy.jit_build(loaded.compiled, _entry.version(), loaded.key)
            _publish(dir_fd, name, data)
            _log_build(dir_fd, module_name, path, "warm")
        finally:
            lock.release()
    finally:
        os.close(dir_fd)
    return True, time.perf_counter() - started


def build(source_path, module_name, finder, source, source_digest, entry_path, reason, started, torch=None,
          fallback_from=None):
    """Builds the entry `_hook.load` missed, under the module's lock. With
    `fallback_from` (the project cache folder it could not use), `entry_path`
    is in the per-user cache."""
    from ppy import _ppy

    if reason == _entry.CORRUPT:
        _notes.warn(f"the cache entry {entry_path} is corrupt; rebuilding it")
    cache_dir, name = os.path.split(entry_path)
    dir_fd, why = _open_cache_folder(cache_dir, 0o700 if fallback_from else 0o755)
    if fallback_from is not None:
        shared = _is_shared(fallback_from)
        if shared:
            reason = _entry.SHARED_FOLDER
        if dir_fd is not None:
            _note_user_cache(fallback_from, cache_dir, shared)
        else:
            # Neither cache: the note names the folder the user chose.
            cache_dir, why = fallback_from, "shared" if shared else "unwritable"
    lock = None
    if dir_fd is not None:
        try:
            lock = _Lock(dir_fd, name + _entry.LOCK_SUFFIX)
        except LockTimeout as error:
            why = f"{error} (held by another process)"
        except OSError:
            why = "unwritable"
    if why == "shared":
        reason = _entry.SHARED_FOLDER
    try:
        if lock is not None:
            # Another process may have built it while this one waited.
            compiled, metadata, again = _entry.check_entry(_entry.read_trusted(entry_path), source_digest, torch,
                                                           source_path)
            if again == _entry.HIT:
                return _entry.Loaded(compiled, metadata, _entry.WAITED, reason, time.perf_counter() - started,
                                     entry_path)
        from ppy import _build

        dependencies = _closure(source_path, source, finder)
        key = _key(source_digest, dependencies)
        data = _build.build(source, source_path, module_name, _entry.ABI, key, source_digest, dependencies, torch)
        compiled = _ppy.load(data, _entry.version())
        metadata = marshal.loads(compiled.extras[_entry.METADATA])
        outcome = _entry.BUILT
        if lock is not None:
            try:
                _publish(dir_fd, name, data)
                _log_build(dir_fd, module_name, source_path, reason)
            except OSError:
                outcome, why = _entry.IN_MEMORY, "unwritable"
        else:
            outcome = _entry.IN_MEMORY
        if outcome == _entry.IN_MEMORY:
            _note_memory(cache_dir, why)
        return _entry.Loaded(compiled, metadata, outcome, reason, time.perf_counter() - started, entry_path)
    finally:
        if lock is not None:
            lock.release()
        if dir_fd is not None:
            os.close(dir_fd)
