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
* a cache folder that cannot be written falls back to building in memory, with
  one note;
* a miss says why: no entry, source changed, imported module changed, version
  changed, corrupt entry.

Checking an entry (the warm path) lives in ppy._hook, which `import ppy` loaded
already; this module, the build path, loads only on a miss.

Every build appends a line to `<cache folder>/build.log`, so that tests and
users can see who built what without timing anything.
"""

import marshal
import os
import time

from ppy import _hook, _notes
from ppy._hook import digest as _digest

def _closure(source_path, source, finder):
    """The .ppy modules `source` imports, transitively: [(name, path, digest)]."""
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
            result.append((name, os.path.abspath(path), _digest(text)))
            pending.append(text)
    result.sort()
    return result


def _imported_names(source):
    """Every module name an import statement in `source` names."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
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

    parts = [_hook.version(), str(_ppy.BYTECODE_VERSION), _hook.ABI, source_digest]
    parts.extend(f"{name}={digest}" for name, _, digest in dependencies)
    return _digest("\n".join(parts).encode())


class _Lock:
    """An exclusive flock on `<entry>.lock`, released by close or by process death."""

    def __init__(self, path):
        import fcntl

        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def release(self):
        os.close(self._fd)


def _publish(entry_path, data):
    """Writes `data` to `entry_path` atomically: a reader sees all of it or none."""
    temporary = f"{entry_path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)
    os.replace(temporary, entry_path)


def _log_build(cache_dir, module_name, source_path, reason):
    line = (
        f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} rank={os.environ.get('RANK', '-')} "
        f"module={module_name} source={source_path} reason={reason.replace(' ', '-')}\n"
    )
    try:
        fd = os.open(os.path.join(cache_dir, "build.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


_memory_notes = set()


def build_machine_code(loaded, module_name):
    """`ppy build --warm`: compiles every function of `loaded` to machine code and
    publishes it beside the bytecode, under its own lock, unless it is there
    already. Returns (built, seconds)."""
    from ppy import _ppy

    started = time.perf_counter()
    path = _hook.machine_code_path_for(loaded.path)
    namespace = {"__name__": module_name, "__builtins__": __builtins__}
    loaded.compiled.attach(namespace)
    existing = _hook.read_entry(path)
    if existing is not None:
        try:
            _ppy.jit_load(loaded.compiled, existing, _hook.version(), loaded.key)
            return False, time.perf_counter() - started
        except _ppy.EntryError:
            pass
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    lock = _Lock(path + ".lock")
    try:
        data = _ppy.jit_build(loaded.compiled, _hook.version(), loaded.key)
        _publish(path, data)
        _log_build(folder, module_name, path, "warm")
    finally:
        lock.release()
    return True, time.perf_counter() - started


def build(source_path, module_name, finder, source, source_digest, entry_path, reason, started, torch=None):
    """Builds the entry `_hook.load` missed, under the module's lock."""
    from ppy import _ppy

    if reason == _hook.CORRUPT:
        _notes.warn(f"the cache entry {entry_path} is corrupt; rebuilding it")
    cache_dir = os.path.dirname(entry_path)
    try:
        os.makedirs(cache_dir, exist_ok=True)
        lock = _Lock(entry_path + ".lock")
    except OSError:
        lock = None
    try:
        if lock is not None:
            # Another process may have built it while this one waited.
            compiled, metadata, again = _hook.check_entry(_hook.read_entry(entry_path), source_digest, torch)
            if again == _hook.HIT:
                return _hook.Loaded(compiled, metadata, "waited", reason, time.perf_counter() - started, entry_path)
        from ppy import _build

        dependencies = _closure(source_path, source, finder)
        key = _key(source_digest, dependencies)
        data = _build.build(source, source_path, module_name, _hook.ABI, key, source_digest, dependencies,
                            torch).data
        compiled = _ppy.load(data, _hook.version())
        metadata = marshal.loads(compiled.extras[_hook.METADATA])
        outcome = "built"
        if lock is not None:
            try:
                _publish(entry_path, data)
                _log_build(cache_dir, module_name, source_path, reason)
            except OSError:
                outcome = "memory"
        else:
            outcome = "memory"
        if outcome == "memory" and cache_dir not in _memory_notes:
            _memory_notes.add(cache_dir)
            _notes.note(f"the cache folder {cache_dir} is not writable; building in memory")
        return _hook.Loaded(compiled, metadata, outcome, reason, time.perf_counter() - started, entry_path)
    finally:
        if lock is not None:
            lock.release()
