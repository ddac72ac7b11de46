"""The cache entry: its format tags, its version, where it lives, and when it may
be read and used.

Owns the rules both the warm path (ppy._hook: an import that finds its entry)
and the build path (ppy._cache: a miss) follow: the ABI tag, the entry's extra
sections, the miss reasons and load outcomes, `version()` and `digest()`,
`check_entry`, `Loaded`, the paths of entries and their machine code (project
cache and per-user cache), and the trust checks every cache file is read
through. The format of the bytes themselves is vm/serialize.h's.

May import: from ppy, only `_version` and, lazily, the extension `_ppy` and the
generated `_region_build` (none of which imports anything from ppy), so that
every other module of the package can import this one and none is imported by
it. It must stay cheap: `import ppy` loads it, and a warm import uses nothing
else of the cache.
"""

import marshal
import os
import stat
import sys

from ppy._version import __version__

ABI = sys.implementation.cache_tag  # e.g. "cpython-311"

# Extra sections of a cache entry (see vm/serialize.h for the format).
MODULE_CODE = "PYMC"  # marshal of the module's code object
METADATA = "META"  # marshal of a dict: functions, diagnostics, key, digests, dependencies, torch, object_code
REGIONS = "RGNS"  # the ATen regions' op sequences (regions/region_code.h)

# Miss reasons, as `ppy build -v` and `ppy run --trace` print them.
HIT = "hit"
NO_ENTRY = "no entry"
SOURCE_CHANGED = "source changed"
IMPORT_CHANGED = "imported module changed"
VERSION_CHANGED = "version changed"
CORRUPT = "corrupt entry"
TORCH_CHANGED = "torch version changed"
OBJECT_CODE_CHANGED = "PPY_OBJECT_CODE changed"
OPTIMIZE_CHANGED = "the -O level changed"
SHARED_FOLDER = "shared cache folder"

# How a load obtained a module's code (Loaded.outcome); a hit's outcome is HIT.
BUILT = "built"  # built into the cache by this process
WAITED = "waited"  # built by another process while this one waited for the lock
IN_MEMORY = "memory"  # built in memory: no cache could be written

NO_EXECUTOR = "none"  # the torch key when ppy was built without the region executor


def version():
    """The ppy that writes entries: the release and a digest of the sources the
    compiler and VM were built from, so that a rebuilt ppy never trusts an entry
    an older build wrote."""
    from ppy import _ppy

    return f"{__version__}+{_ppy.BUILD_ID}"


def object_code():
    """What becomes of a function of mostly object operations (PPY_OBJECT_CODE):
    "python", the default, runs it as Python, since CPython runs such code
    faster (compiler/compile.cpp, ObjectCodeAsPython); "compile" compiles it
    like any other, for tests and measurements of ppy's object mode. An entry
    records which it was built with."""
    return "compile" if os.environ.get("PPY_OBJECT_CODE") == "compile" else "python"


def digest(data):
    from ppy import _ppy

    return _ppy.digest(data)


def torch_key(source):
    """What the entry of a module that uses torch is also keyed by: the torch the
    region executor was built for (read without importing torch or the
    executor). None for a module that does not mention torch."""
    if b"torch" not in source:
        return None
    from ppy import _region_build

    return _region_build.TORCH_VERSION or NO_EXECUTOR


class Loaded:
    """A module's compiled code, ready to attach, and how it was obtained."""

    def __init__(self, compiled, metadata, outcome, reason, seconds, path):
        self.compiled = compiled  # ppy._ppy.CompiledModule
        self.metadata = metadata  # functions, diagnostics, dependencies
        self.outcome = outcome  # HIT, BUILT, WAITED or IN_MEMORY
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
    if metadata.get("object_code") != object_code():
        return None, metadata, OBJECT_CODE_CHANGED
    # The module's code is compiled at the builder's -O level (asserts,
    # __debug__, docstrings), as a .pyc is: an entry built under another
    # level is rebuilt, never run.
    if metadata.get("optimize", 0) != sys.flags.optimize:
        return None, metadata, OPTIMIZE_CHANGED
    return compiled, metadata, HIT


# ---- Where entries live --------------------------------------------------------------------


# A relative PPY_CACHE_DIR, resolved against the working directory the
# process had when it first used it: one folder for the whole process, even
# if it changes directory between two imports.
_resolved_cache_dirs = {}


def cache_dir_for(source_path):
    configured = os.environ.get("PPY_CACHE_DIR")
    if configured:
        if configured not in _resolved_cache_dirs:
            _resolved_cache_dirs[configured] = os.path.abspath(configured)
        return _resolved_cache_dirs[configured]
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


def machine_code_path_for(entry_path):
    """features.cpython-311.ppyc -> features.cpython-311.x86_64-sse2.ppyjit"""
    from ppy import _ppy

    return f"{entry_path[:-len('.ppyc')]}.{_ppy.JIT_TARGET}.ppyjit"


# The per-user cache: where the project cache cannot be used (an installed
# package in a read-only site-packages, a PPY_CACHE_DIR other users can write),
# entries go to a private folder of this user instead: $XDG_CACHE_HOME/ppy
# (~/.cache/ppy), one subfolder per source folder and Python environment, so
# that two virtual environments importing the same files never rebuild each
# other's entries.


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
        # Made with its missing parents (a PPY_CACHE_DIR of a few levels):
        # the nearest folder that exists must be writable.
        parent = os.path.dirname(os.path.abspath(cache_dir))
        while not os.path.exists(parent) and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)
        return os.access(parent, os.W_OK)
    except OSError:
        return False
    return private(status) and os.access(cache_dir, os.W_OK)


# ---- Trust ---------------------------------------------------------------------------------
# A cache entry is code (the module's marshalled code, machine code), so ppy
# loads one only from where no one but this user could have put it, as ssh
# treats its keys: the folder and the file owned by this user (or root) and
# writable by no one else, the file a regular file opened without following a
# symlink. Every check is made on an open descriptor and the file is opened
# relative to the checked folder's, so nothing can be swapped in between. A
# folder that fails is used for nothing: ppy builds into the per-user cache
# (above), or in memory (ppy._cache).


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


# ---- Build locks ---------------------------------------------------------------------------
# One builder per cache file: ppy._cache builds an entry or its machine code
# holding an flock on `<file>.lock` beside it; a process that finds no machine
# code asks whether it is being built.

LOCK_SUFFIX = ".lock"


def builder_running(lock_path):
    """Whether a process holds the build lock `lock_path`."""
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
