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
import sys

from ppy import _notes, _trace

_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _plain_python():
    return os.environ.get("PPY_IMPORT", "").lower() == "python"


class _Listing:
    """A directory's names, re-read when its mtime changes (as FileFinder does)."""

    __slots__ = ("mtime", "names")

    def __init__(self, mtime, names):
        self.mtime = mtime
        self.names = names


_listings = {}


def _names_in(directory):
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
    return listing.names


def find_source(fullname, path=None):
    """The .ppy file that `import fullname` would load, or None."""
    name = fullname.rpartition(".")[2]
    file_name = name + ".ppy"
    for entry in sys.path if path is None else path:
        directory = entry or os.getcwd()
        if not isinstance(directory, str):
            continue
        names = _names_in(directory)
        if names is None:
            continue
        if file_name in names:
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


def _report_diagnostics(loaded, source_path):
    """Warns once per load about functions that run as Python because of type errors."""
    from ppy import _ppy

    metadata = loaded.metadata
    errors = [d for d in metadata["diagnostics"] if d[0] == "error"]
    if not errors:
        return
    native_failures = [f for f in metadata["functions"] if f["native"] and not f["compiled"]]
    with open(source_path, "rb") as handle:
        source = handle.read()
    text = "".join(_ppy.render_diagnostic(severity, loc, message, source_path, source)
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
    from ppy import _cache, _build

    loaded = _cache.load(source_path, module.__name__, lambda name: find_source(name))
    _trace.module_loaded(module.__name__, source_path, loaded)
    _report_diagnostics(loaded, source_path)
    namespace = module.__dict__
    namespace["__ppy_module__"] = loaded.compiled
    namespace.setdefault("__file__", source_path)
    namespace.setdefault("__builtins__", __builtins__)
    loaded.compiled.attach(namespace)
    _trace.functions_bound(module.__name__, loaded.metadata)
    code = marshal.loads(loaded.compiled.extras[_build.MODULE_CODE])
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
