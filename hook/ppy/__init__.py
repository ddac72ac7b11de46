"""ppy: typed Python kernels, compiled and run natively.

`import ppy` is the whole integration: it installs an import hook, and from then
on `import features` finds `features.ppy`, builds it into the project cache
`.ppy-cache/` (or finds it built there) and runs its functions on the ppy VM.
With `PPY_IMPORT=python` the same files run as plain Python instead.

This module must stay cheap to import: it defines the names kernels annotate
with and installs the finder; the compiler and VM load with the first .ppy module.

May import: `_version` and `_hook` (which imports `_entry`, `_notes` and
`_trace`); nothing below it imports from it, so that the package's modules
import one way (tests/python/test_layers.py). `cli` sits above it.
"""

import os as _os

from ppy._hook import CompileError
from ppy._hook import install as _install
from ppy._version import __version__

__all__ = [
    "Buffer",
    "CompileError",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "native",
    "nogil",
    "prange",
    "tier",
]


class _BufferAlias:
    """What `Buffer[T]` and `Buffer[T, n]` evaluate to in plain Python: a readable annotation."""

    __slots__ = ("element", "ndim")

    def __init__(self, element, ndim=1):
        self.element = element
        self.ndim = ndim

    def __repr__(self):
        name = getattr(self.element, "__name__", self.element)
        return f"ppy.Buffer[{name}]" if self.ndim == 1 else f"ppy.Buffer[{name}, {self.ndim}]"


class Buffer:
    """A borrowed view of a buffer: `Buffer[float]`, `Buffer[f32]`, `Buffer[float, 2]`, ...

    Annotating a parameter `Buffer[T]` (one dimension) or `Buffer[T, n]` (n
    dimensions, any strides) makes ppy borrow the argument's memory for the call
    (array.array, numpy arrays, memoryview, bytearray, CPU torch tensors);
    indexing, `a[i]` or `a[i, j]`, reads and writes it in place.
    """

    def __class_getitem__(cls, item):
        if isinstance(item, tuple):
            element, ndim = item
            return _BufferAlias(element, ndim)
        return _BufferAlias(item)


def _element_type(name, doc):
    return type(name, (), {"__doc__": doc, "__module__": "ppy"})


f64 = _element_type("f64", "Buffer element: 64-bit float (format 'd'); the same as float.")
f32 = _element_type("f32", "Buffer element: 32-bit float (format 'f').")
i64 = _element_type("i64", "Buffer element: 64-bit signed int (format 'q'); the same as int.")
i32 = _element_type("i32", "Buffer element: 32-bit signed int.")
i16 = _element_type("i16", "Buffer element: 16-bit signed int.")
i8 = _element_type("i8", "Buffer element: 8-bit signed int.")
u64 = _element_type("u64", "Buffer element: 64-bit unsigned int.")
u32 = _element_type("u32", "Buffer element: 32-bit unsigned int.")
u16 = _element_type("u16", "Buffer element: 16-bit unsigned int.")
u8 = _element_type("u8", "Buffer element: 8-bit unsigned int.")


def native(function):
    """Marks a function that must be compiled: if ppy cannot, importing fails.

    Without it, a function that uses something the VM does not run falls back to
    plain Python (`ppy check -v` says which and why).
    """
    return function


def nogil(function):
    """Marks a function that releases the GIL while it runs typed code.

    Other Python threads run meanwhile, and two threads calling it run at once.
    It must compile (like `native`), and `ppy check` reports a loop in it that
    would need the GIL on every iteration. Its buffers stay borrowed while it
    runs; two threads writing the same element is a data race, as in C or numpy.
    In plain Python (`PPY_IMPORT=python`) it changes nothing.
    """
    return function


def prange(*args):
    """`for i in ppy.prange(n)`: a range whose iterations run in parallel.

    In a compiled function the loop runs in chunks on a pool of threads
    (`PPY_NUM_THREADS`, default: the CPUs the process may use), without the
    GIL; `s += x`, `s *= x`, `s = min(s, x)` and `s = max(s, x)` into a local
    are reductions. See docs/language.md, "Threads". Anywhere else,
    and in plain Python, it is `range`.
    """
    return range(*args)


def tier(function):
    """Where calls to `function` run: "jit" (machine code), "vm" (the
    interpreter, until the function is hot), "region" or "python"."""
    found = getattr(function, "__ppy_tier__", None)
    return found if isinstance(found, str) else "python"


def load_ipython_extension(ipython):
    """`%load_ext ppy` in IPython or Jupyter: `%autoreload` then reloads .ppy
    modules after an edit as it does .py modules (it otherwise skips any
    module whose file is not a .py or a .pyc)."""
    from IPython.extensions import autoreload

    reloader = autoreload.ModuleReloader
    if getattr(reloader.filename_and_mtime, "__ppy__", False):
        return
    original = reloader.filename_and_mtime

    def filename_and_mtime(self, module):
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str) and filename.endswith(".ppy") and getattr(module, "__name__", None) not in (
                None, "__main__", "__mp_main__"):
            try:
                return filename, _os.stat(filename).st_mtime
            except OSError:
                return None, None
        return original(self, module)

    filename_and_mtime.__ppy__ = True
    reloader.filename_and_mtime = filename_and_mtime


if _os.environ.get("PPY_NO_HOOK") != "1":
    _install()
