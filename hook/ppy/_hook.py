"""The import hook: a meta-path finder for .ppy modules and its two loaders.

GeneratedLoader runs a module from its build (bytecode on the ppy VM, the rest
as the module's own Python code); PPySourceLoader, chosen by PPY_IMPORT=python,
runs the same file as plain Python. The finder follows sys.path order: a
directory earlier on the path that holds a regular module of the same name wins,
as it would for any import.
"""

import importlib.machinery
import marshal
import os
import stat
import sys
import time

from ppy import _notes, _trace

_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _plain_python():
    return os.environ.get("PPY_IMPORT", "").lower() == "python"


class _Listing:
    """A directory's names, re-read when its mtime changes (as FileFinder does).

    Every import in the process passes through the finder, `import torch`'s
    thousand included, so a directory without .ppy files costs one stat.
    """

    __slots__ = ("mtime", "names", "has_ppy")

    def __init__(self, mtime, names):
        self.mtime = mtime
        self.names = names
        self.has_ppy = any(name.endswith(".ppy") for name in names)


_listings = {}


def _listing_of(directory):
    try:
        mtime = os.stat(directory).st_mtime_ns
    except OSError:
        return None
    listing = _listings.get(directory)
    if listing is None or listing.mtime != mtime:
        try:
            names = frozenset(os.listdir(directory))
        except OSError:
            return None
        listing = _listings[directory] = _Listing(mtime, names)
    return listing


def find_source(fullname, path=None):
    """The .ppy file that `import fullname` would load, or None."""
    name = fullname.rpartition(".")[2]
    file_name = name + ".ppy"
    for entry in sys.path if path is None else path:
        directory = entry or os.getcwd()
        if not isinstance(directory, str):
            continue
        listing = _listing_of(directory)
        if listing is None:
            continue
        names = listing.names
        if listing.has_ppy and file_name in names:
            return os.path.join(directory, file_name)
        # A regular module here comes first on the path.
        if name + ".py" in names or name in names or any(name + suffix in names for suffix in _EXTENSION_SUFFIXES):
            return None
    return None


class GeneratedLoader:
    """Runs a .ppy module from its build in the project cache."""

    def __init__(self, fullname, path):
        self.name = fullname
        self.path = path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        execute(module, self.path)

    def get_filename(self, fullname=None):
        return self.path

    def get_source(self, fullname=None):
        with open(self.path, encoding="utf-8") as handle:
            return handle.read()

    def is_package(self, fullname=None):
        return False


class PPySourceLoader(importlib.machinery.SourceFileLoader):
    """Runs a .ppy module as plain Python (PPY_IMPORT=python)."""


class PpyFinder:
    """Finds `name.ppy` on the module search path."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        source = find_source(fullname, path)
        if source is None:
            return None
        loader_class = PPySourceLoader if _plain_python() else GeneratedLoader
        loader = loader_class(fullname, source)
        return importlib.machinery.ModuleSpec(fullname, loader, origin=source)

    @classmethod
    def invalidate_caches(cls):
        _listings.clear()


def install():
    if not any(finder is PpyFinder for finder in sys.meta_path):
        sys.meta_path.insert(0, PpyFinder)


# ---- The cache's warm path ---------------------------------------------------------------
# Finding and checking an entry lives here, in the module `import ppy` already
# loaded, so that a warm import loads nothing but the VM extension. Building an
# entry (ppy._cache) and compiling (ppy._build, ppy._compiler) load only on a miss.

ABI = sys.implementation.cache_tag  # e.g. "cpython-311"

# Extra sections of a cache entry (see vm/serialize.h for the format).
MODULE_CODE = "PYMC"  # marshal of the module's code object
METADATA = "META"  # marshal of a dict: functions, diagnostics, digests, dependencies
REGIONS = "RGNS"  # the ATen regions' op sequences (regions/region_code.h)

# Miss reasons, as `ppy build -v` and `ppy run --trace` print them.
HIT = "hit"
NO_ENTRY = "no entry"
SOURCE_CHANGED = "source changed"
IMPORT_CHANGED = "imported module changed"
VERSION_CHANGED = "version changed"
CORRUPT = "corrupt entry"
TORCH_CHANGED = "torch version changed"
SHARED_FOLDER = "shared cache folder"

NO_EXECUTOR = "none"  # the torch key when ppy was built without the region executor


def version():
    """The ppy that writes entries: the release and a digest of the sources the
    compiler and VM were built from, so that a rebuilt ppy never trusts an entry
    an older build wrote."""
    from ppy import _ppy, __version__

    return f"{__version__}+{_ppy.BUILD_ID}"


def digest(data):
    from ppy import _ppy

    return _ppy.digest(data)


def cache_dir_for(source_path):
    configured = os.environ.get("PPY_CACHE_DIR")
    if configured:
        return os.path.abspath(configured)
    return os.path.join(os.path.dirname(os.path.abspath(source_path)), ".ppy-cache")


def entry_path_for(source_path):
    """`<stem>.<cache tag>.ppyc` in `.ppy-cache` beside the source. Under
    PPY_CACHE_DIR, which holds the entries of every folder, the name also
    carries a digest of the source's folder, so that `a/utils.ppy` and
    `b/utils.ppy` keep an entry each instead of rebuilding each other's."""
    stem = os.path.splitext(os.path.basename(source_path))[0]
    cache_dir = cache_dir_for(source_path)
    if os.environ.get("PPY_CACHE_DIR"):
        folder = os.path.dirname(os.path.realpath(source_path))
        stem = f"{stem}.{digest(os.fsencode(folder))[:8]}"
    return os.path.join(cache_dir, f"{stem}.{ABI}.ppyc")


# ---- The per-user cache -------------------------------------------------------------------
# Where the project cache cannot be used (an installed package in a read-only
# site-packages, a PPY_CACHE_DIR other users can write), entries go to a
# private folder of this user instead: $XDG_CACHE_HOME/ppy (~/.cache/ppy), one
# subfolder per source folder and Python environment, so that two virtual
# environments importing the same files never rebuild each other's entries.


def user_cache_root():
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ppy")


def user_entry_path_for(source_path):
    folder = os.path.dirname(os.path.realpath(source_path))
    key = digest(os.fsencode(folder) + b"\0" + os.fsencode(sys.prefix))[:16]
    stem = os.path.splitext(os.path.basename(source_path))[0]
    return os.path.join(user_cache_root(), key, f"{stem}.{ABI}.ppyc")


def project_cache_usable(cache_dir):
    """Whether ppy may write the project cache folder `cache_dir` (or create
    it): a folder of this user (or root) that no one else can write, and that
    this process can write."""
    try:
        status = os.stat(cache_dir)
    except FileNotFoundError:
        return os.access(os.path.dirname(cache_dir) or ".", os.W_OK)
    except OSError:
        return False
    return private(status) and os.access(cache_dir, os.W_OK)


class Loaded:
    """A module's compiled code, ready to attach, and how it was obtained."""

    def __init__(self, compiled, metadata, outcome, reason, seconds, path):
        self.compiled = compiled  # ppy._ppy.CompiledModule
        self.metadata = metadata  # functions, diagnostics, dependencies
        self.outcome = outcome  # "hit", "built", "waited" or "memory"
        self.reason = reason  # why it was not a hit
        self.seconds = seconds
        self.path = path
        self.key = metadata.get("key", "") if metadata else ""


def _current_dependencies(recorded, base):
    """The recorded closure with today's digests, or None if a file is gone.
    Paths are relative to `base`, the importing module's folder."""
    current = []
    for name, path, _ in recorded:
        try:
            with open(os.path.join(base, path), "rb") as handle:
                current.append((name, path, digest(handle.read())))
        except OSError:
            return None
    return current


def machine_code_path_for(entry_path):
    """features.cpython-311.ppyc -> features.cpython-311.x86_64-sse2.ppyjit"""
    from ppy import _ppy

    return f"{entry_path[:-len('.ppyc')]}.{_ppy.JIT_TARGET}.ppyjit"


# ---- Trust -------------------------------------------------------------------------------
# A cache entry is code (the module's marshalled code, machine code), so ppy
# loads one only from where no one but this user could have put it, as ssh
# treats its keys: the folder and the file owned by this user (or root) and
# writable by no one else, the file a regular file opened without following a
# symlink. Every check is made on an open descriptor and the file is opened
# relative to the checked folder's, so nothing can be swapped in between. A
# folder that fails is used for nothing: ppy builds into the per-user cache
# (below), or in memory (ppy._cache).


def private(status):
    """Whether a stat result is owned by this user (or root) and writable by no one else."""
    return status.st_uid in (os.geteuid(), 0) and not status.st_mode & 0o022


def open_trusted_folder(folder):
    """A descriptor of the cache folder `folder` if it may be used, else None."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if private(os.fstat(fd)):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def open_trusted_file(name, dir_fd, flags=os.O_RDONLY, mode=0o644):
    """Opens `name` in the trusted folder `dir_fd` as a private regular file,
    never through a symlink and never blocking on a FIFO; OSError otherwise."""
    fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode, dir_fd=dir_fd)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or not private(status):
            raise PermissionError(f"{name}: not a private regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_trusted(path):
    """The bytes of the cache file `path`, or None if it is missing or is not to
    be trusted (see above)."""
    folder, name = os.path.split(path)
    dir_fd = open_trusted_folder(folder)
    if dir_fd is None:
        return None
    try:
        fd = open_trusted_file(name, dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def builder_running(lock_path):
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    import fcntl  # only now: a warm start without machine code should not load it

    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def map_machine_code(loaded):
    """Maps the module's machine code from the cache, if `ppy build --warm` made
    it; if it is being made right now, the functions run on the interpreter and
    switch when it appears. Otherwise hot functions compile in this process."""
    from ppy import _ppy

    if _ppy.jit_mode() == "off" or not loaded.key or loaded.outcome == "memory":
        return
    path = machine_code_path_for(loaded.path)
    started = time.perf_counter()
    data = read_trusted(path)
    if data is not None:
        try:
            count = _ppy.jit_load(loaded.compiled, data, version(), loaded.key)
        except _ppy.EntryError as error:
            _trace.event(f"jit: not using {os.path.basename(path)}: {error.args[1]}")
            return
        _trace.event(f"jit: mapped machine code for {count} functions from {os.path.relpath(path)} "
                     f"in {(time.perf_counter() - started) * 1000:.2f} ms")
    elif builder_running(path + ".lock"):
        _ppy.jit_wait(loaded.compiled, path, path + ".lock", version(), loaded.key)
        _trace.event(f"jit: machine code for {os.path.basename(path)} is being built; interpreting until it appears")


def torch_key(source):
    """What the entry of a module that uses torch is also keyed by: the torch the
    region executor was built for (read without importing torch or the
    executor). None for a module that does not mention torch."""
    if b"torch" not in source:
        return None
    from ppy import _region_build

    return _region_build.TORCH_VERSION or NO_EXECUTOR


def check_entry(data, source_digest, torch, source_path):
    """Loads entry bytes of the module at `source_path`; returns (compiled,
    metadata, miss reason or HIT)."""
    from ppy import _ppy

    if data is None:
        return None, None, NO_ENTRY
    try:
        compiled = _ppy.load(data, version())
        metadata = marshal.loads(compiled.extras[METADATA])
    except _ppy.EntryError as error:
        return None, None, VERSION_CHANGED if error.args[0] == "version" else CORRUPT
    except (KeyError, ValueError, EOFError, TypeError):
        return None, None, CORRUPT
    if metadata.get("source_digest") != source_digest:
        return None, metadata, SOURCE_CHANGED
    base = os.path.dirname(os.path.abspath(source_path))
    dependencies = _current_dependencies(metadata.get("dependencies", []), base)
    if dependencies is None or dependencies != metadata.get("dependencies"):
        return None, metadata, IMPORT_CHANGED
    if metadata.get("torch") != torch:
        return None, metadata, TORCH_CHANGED
    return compiled, metadata, HIT


def load(source_path, module_name, finder):
    """The compiled code of the module at `source_path`: from the cache, or built.

    `finder(name)` locates another .ppy module by import name, for the closure.
    Raises SyntaxError for a source CPython cannot parse.
    """
    started = time.perf_counter()
    with open(source_path, "rb") as handle:
        source = handle.read()
    source_digest = digest(source)
    entry_path = entry_path_for(source_path)
    torch = torch_key(source)
    compiled, metadata, reason = check_entry(read_trusted(entry_path), source_digest, torch, source_path)
    if reason == HIT:
        return Loaded(compiled, metadata, "hit", HIT, time.perf_counter() - started, entry_path)
    fallback_from = None
    if not project_cache_usable(os.path.dirname(entry_path)):
        # A project cache ppy cannot write: the per-user cache takes its place.
        fallback_from = os.path.dirname(entry_path)
        entry_path = user_entry_path_for(source_path)
        compiled, metadata, user_reason = check_entry(read_trusted(entry_path), source_digest, torch, source_path)
        if user_reason == HIT:
            return Loaded(compiled, metadata, "hit", HIT, time.perf_counter() - started, entry_path)
        if reason == NO_ENTRY:
            reason = user_reason
    from ppy import _cache

    return _cache.build(source_path, module_name, finder, source, source_digest, entry_path, reason, started, torch,
                        fallback_from)


# ---- Running a module ---------------------------------------------------------------------


def _report_diagnostics(loaded, source_path):
    """Warns once per load about functions that run as Python because of type errors."""
    metadata = loaded.metadata
    errors = [d for d in metadata["diagnostics"] if d[0] == "error"]
    if not errors:
        return
    native_failures = [f for f in metadata["functions"] if f["native"] and not f["compiled"]]
    from ppy import _compiler

    with open(source_path, "rb") as handle:
        source = handle.read()
    text = "".join(_compiler.render_diagnostic(severity, loc, message, source_path, source)
                   for severity, loc, message in errors)
    if native_failures:
        from ppy import CompileError

        first = errors[0][1]
        names = ", ".join(f["name"] for f in native_failures)
        raise CompileError(f"@ppy.native function(s) {names} cannot be compiled:\n{text}",
                           (source_path, first[0], first[1] + 1, None))
    fallbacks = ", ".join(f["name"] for f in metadata["functions"] if f["reason"] == "type errors")
    _notes.block(text.replace(": error: ", ": warning: "))
    _notes.note(f"{os.path.basename(source_path)}: {fallbacks} will run as plain Python until these are fixed")


def execute(module, source_path):
    """Runs the .ppy module at `source_path` in `module`'s namespace."""
    loaded = load(source_path, module.__name__, find_source)
    _trace.module_loaded(module.__name__, source_path, loaded)
    _report_diagnostics(loaded, source_path)
    namespace = module.__dict__
    namespace["__ppy_module__"] = loaded.compiled
    namespace.setdefault("__file__", source_path)
    namespace.setdefault("__builtins__", __builtins__)
    loaded.compiled.attach(namespace)
    map_machine_code(loaded)
    _trace.functions_bound(module.__name__, loaded.metadata, loaded.compiled, source_path)
    code = marshal.loads(loaded.compiled.extras[MODULE_CODE])
    # The builder may have named the file otherwise (`ppy build .`: ./k.ppy);
    # tracebacks show the path this import found, as for a .pyc.
    import _imp

    _imp._fix_co_filename(code, namespace["__file__"])
    exec(code, namespace)


def run_main(source_path, argv):
    """Runs a .ppy file as `__main__`, natively: what `ppy run FILE` does."""
    import types

    source_path = os.path.abspath(source_path)
    main = types.ModuleType("__main__")
    main.__file__ = source_path
    main.__loader__ = GeneratedLoader("__main__", source_path)
    main.__spec__ = None
    main.__builtins__ = __builtins__
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    sys.argv[:] = [source_path] + list(argv)
    sys.path.insert(0, os.path.dirname(source_path))
    try:
        execute(main, source_path)
    finally:
        if saved_main is not None and sys.modules.get("__main__") is main:
            # Keep the module alive for atexit handlers, as CPython does.
            pass
