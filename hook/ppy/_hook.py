"""The import hook: a meta-path finder for .ppy modules and its two loaders.

GeneratedLoader runs a module from its build (bytecode on the ppy VM, the rest
as the module's own Python code); PpySourceLoader, chosen by PPY_IMPORT=python,
runs the same file as plain Python. The finder follows sys.path order: a
directory earlier on the path that holds a regular module of the same name wins,
as it would for any import.

Owns finding .ppy modules, `load` (an entry from the cache, or a build on a
miss), running a module from its entry (`execute`, `run_main`) and the error an
uncompilable `@ppy.native` function raises (`ppy.CompileError`).

May import: `_entry`, `_notes` and `_trace`; lazily, the build path `_cache`
(on a miss only), `_compiler` (to print diagnostics) and the extension `_ppy`.
The package's `__init__` imports this module, so nothing here imports from the
package itself. A warm import (its entry found and valid) loads neither
`_cache`, `_build` nor `_compiler` (unless it has diagnostics to print).
"""

import importlib.machinery
import importlib.util
import marshal
import os
import sys
import time

from ppy import _entry, _notes, _trace

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

    def get_code(self, fullname=None):
        """What runpy runs for `python -m package.kernel`: code that runs the
        module natively in the namespace it is executed in (runpy's
        `__main__`), as exec_module does for an import."""
        stub = (f"__import__('ppy._hook', fromlist=['execute_namespace'])"
                f".execute_namespace(__name__, globals(), {self.path!r})")
        return compile(stub, self.path, "exec")

    def get_filename(self, fullname=None):
        return self.path

    def get_source(self, fullname=None):
        with open(self.path, encoding="utf-8") as handle:
            return handle.read()

    def is_package(self, fullname=None):
        return False


class PpySourceLoader(importlib.machinery.SourceFileLoader):
    """Runs a .ppy module as plain Python (PPY_IMPORT=python)."""


class PpyFinder:
    """Finds `name.ppy` on the module search path."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        source = find_source(fullname, path)
        if source is None:
            return None
        if _plain_python():
            # A file location, as a .py module's spec has, so that __file__
            # is set (the reference run's modules must look like ppy's, which
            # set it, down to import error messages).
            return importlib.util.spec_from_file_location(fullname, source, loader=PpySourceLoader(fullname, source))
        return importlib.machinery.ModuleSpec(fullname, GeneratedLoader(fullname, source), origin=source)

    @classmethod
    def invalidate_caches(cls):
        _listings.clear()


def install():
    if not any(finder is PpyFinder for finder in sys.meta_path):
        sys.meta_path.insert(0, PpyFinder)


# ---- The cache's warm path ---------------------------------------------------------------
# An import that finds its entry uses ppy._entry (the entry's rules) and the VM
# extension only. Building an entry (ppy._cache) and compiling (ppy._build,
# ppy._compiler) load only on a miss.


def load(source_path, module_name, finder):
    """The compiled code of the module at `source_path`: from the cache, or built.

    `finder(name)` locates another .ppy module by import name, for the closure.
    Raises SyntaxError for a source CPython cannot parse.
    """
    started = time.perf_counter()
    with open(source_path, "rb") as handle:
        source = handle.read()
    source_digest = _entry.digest(source)
    entry_path = _entry.entry_path_for(source_path)
    torch = _entry.torch_key(source)
    compiled, metadata, reason = _entry.check_entry(_entry.read_trusted(entry_path), source_digest, torch,
                                                    source_path)
    if reason == _entry.HIT:
        return _entry.Loaded(compiled, metadata, _entry.HIT, _entry.HIT, time.perf_counter() - started, entry_path)
    fallback_from = None
    if not _entry.project_cache_usable(os.path.dirname(entry_path)):
        # A project cache ppy cannot write: the per-user cache takes its place.
        fallback_from = os.path.dirname(entry_path)
        entry_path = _entry.user_entry_path_for(source_path)
        compiled, metadata, user_reason = _entry.check_entry(_entry.read_trusted(entry_path), source_digest, torch,
                                                             source_path)
        if user_reason == _entry.HIT:
            return _entry.Loaded(compiled, metadata, _entry.HIT, _entry.HIT, time.perf_counter() - started,
                                 entry_path)
        if reason == _entry.NO_ENTRY:
            reason = user_reason
    from ppy import _cache  # only now: the build path

    return _cache.build(source_path, module_name, finder, source, source_digest, entry_path, reason, started, torch,
                        fallback_from)


def map_machine_code(loaded):
    """Maps the module's machine code from the cache, if `ppy build --warm` made
    it; if it is being made right now, the functions run on the interpreter and
    switch when it appears. Otherwise hot functions compile in this process."""
    from ppy import _ppy

    if _ppy.jit_mode() == "off" or not loaded.key or loaded.outcome == _entry.IN_MEMORY:
        return
    path = _entry.machine_code_path_for(loaded.path)
    lock_path = path + _entry.LOCK_SUFFIX
    started = time.perf_counter()
    data = _entry.read_trusted(path)
    if data is not None:
        try:
            count = _ppy.jit_load(loaded.compiled, data, _entry.version(), loaded.key)
        except _ppy.EntryError as error:
            _trace.event(f"jit: not using {os.path.basename(path)}: {error.args[1]}")
            return
        _trace.event(f"jit: mapped machine code for {count} functions from {os.path.relpath(path)} "
                     f"in {(time.perf_counter() - started) * 1000:.2f} ms")
    elif _entry.builder_running(lock_path):
        _ppy.jit_wait(loaded.compiled, path, lock_path, _entry.version(), loaded.key)
        _trace.event(f"jit: machine code for {os.path.basename(path)} is being built; interpreting until it appears")


# ---- Running a module ---------------------------------------------------------------------


class CompileError(SyntaxError):
    """A `.ppy` module that ppy must compile but cannot (`@ppy.native`, `@ppy.nogil`)."""

    __module__ = "ppy"  # public as ppy.CompileError


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
        first = errors[0][1]
        names = ", ".join(f["name"] for f in native_failures)
        raise CompileError(f"@ppy.native or @ppy.nogil function(s) {names} cannot be compiled:\n{text}",
                           (source_path, first[0], first[1] + 1, None))
    fallbacks = ", ".join(f["name"] for f in metadata["functions"]
                          if f["reason"] == "type errors" or (f["reason"] or "").startswith("code that needs the GIL"))
    _notes.block(text.replace(": error: ", ": warning: "))
    _notes.note(f"{os.path.basename(source_path)}: {fallbacks} will run as plain Python until these are fixed")


def execute(module, source_path, as_main=False):
    """Runs the .ppy module at `source_path` in `module`'s namespace."""
    execute_namespace(module.__name__, module.__dict__, source_path, as_main)


def execute_namespace(name, namespace, source_path, as_main=False):
    """Runs the .ppy module at `source_path`, named `name`, in the dict
    `namespace`; `as_main`: at the top of the recursion count, as `python
    FILE` runs a file (`_ppy.exec_main`), not under the launcher's frames."""
    loaded = load(source_path, name, find_source)
    _trace.module_loaded(name, source_path, loaded)
    _report_diagnostics(loaded, source_path)
    namespace["__ppy_module__"] = loaded.compiled
    namespace.setdefault("__file__", source_path)
    namespace.setdefault("__builtins__", __builtins__)
    loaded.compiled.attach(namespace)
    map_machine_code(loaded)
    _trace.functions_bound(name, loaded.metadata, loaded.compiled, source_path)
    code = marshal.loads(loaded.compiled.extras[_entry.MODULE_CODE])
    # The builder may have named the file otherwise (`ppy build .`: ./k.ppy);
    # tracebacks show the path this import found, as for a .pyc.
    import _imp

    _imp._fix_co_filename(code, namespace["__file__"])
    if as_main:
        from ppy import _ppy

        _ppy.exec_main(code, namespace)
    else:
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
    # The file's module replaces the caller's __main__ for good, as CPython's
    # own __main__ stays in sys.modules: it is not put back when the file
    # returns or raises, so that atexit handlers and objects that outlive the
    # run still find their module's globals.
    sys.modules["__main__"] = main
    sys.argv[:] = [source_path] + list(argv)
    sys.path.insert(0, os.path.dirname(source_path))
    execute(main, source_path, as_main=True)
