"""Building a cache entry from a .ppy source.

The C++ compiler (ppy._ppy.compile) parses the source with CPython's parser,
checks it and lowers every function it can to bytecode. This module then turns
the rest of the file into ordinary Python: each compiled `def` is rewritten, in
place, into a binding of the native function object,

    @decorator                       f = decorator(__ppy_module__.bind(
    def f(x: int = 2) -> int:  ==>          INDEX, (2,), None, DOC))
        ...

so that module-level code, decorators and default values run exactly as they
would under CPython, in source order. The module's code object is marshalled
into the entry beside the bytecode, and a warm import runs it without parsing.
"""

import ast
import marshal

from ppy import _ppy

# What an entry records as the ppy that wrote it: the release and a digest of
# the sources the compiler and VM were built from, so that a rebuilt ppy never
# trusts an entry an older build wrote.
VERSION = f"0.1.0+{_ppy.BUILD_ID}"

# Extra sections of a cache entry (see vm/serialize.h for the format).
MODULE_CODE = "PYMC"  # marshal of the rewritten module's code object
METADATA = "META"  # marshal of a dict: functions, diagnostics, dependencies


class Build:
    """The result of compiling one source: entry bytes and what the compiler said."""

    def __init__(self, data, functions, diagnostics):
        self.data = data
        self.functions = functions
        self.diagnostics = diagnostics


def _bind_call(node, index):
    """The expression that replaces a compiled def: decorators around bind()."""
    args = node.args
    defaults = ast.Tuple(elts=list(args.defaults), ctx=ast.Load()) if args.defaults else ast.Constant(None)
    kw_keys, kw_values = [], []
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None:
            kw_keys.append(ast.Constant(arg.arg))
            kw_values.append(default)
    kwdefaults = ast.Dict(keys=kw_keys, values=kw_values) if kw_keys else ast.Constant(None)
    doc = ast.get_docstring(node, clean=False)
    call = ast.Call(
        func=ast.Attribute(value=ast.Name("__ppy_module__", ast.Load()), attr="bind", ctx=ast.Load()),
        args=[ast.Constant(index), defaults, kwdefaults, ast.Constant(doc)],
        keywords=[],
    )
    for decorator in reversed(node.decorator_list):
        call = ast.Call(func=decorator, args=[call], keywords=[])
    return call


def rewrite(tree, functions):
    """Replaces every compiled top-level def of `tree` with its binding."""
    for function in functions:
        if not function["compiled"]:
            continue
        node = tree.body[function["statement"]]
        assign = ast.Assign(targets=[ast.Name(node.name, ast.Store())], value=_bind_call(node, function["index"]))
        ast.copy_location(assign, node)
        if node.decorator_list:
            # CPython attributes a decorated def to its first decorator's line.
            assign.lineno = node.decorator_list[0].lineno
        tree.body[function["statement"]] = assign
    ast.fix_missing_locations(tree)
    return tree


def build(source, filename, module_name, abi, key, source_digest, dependencies):
    """Compiles `source` (bytes) into a cache entry keyed by `key`.

    The metadata records the source's digest and the closure's, so that a later
    miss can say what changed.
    """
    tree, functions, diagnostics, code = _ppy.compile(source, filename, module_name)
    module_code = compile(rewrite(tree, functions), filename, "exec", dont_inherit=True)
    metadata = {
        "functions": functions,
        "diagnostics": diagnostics,
        "source_digest": source_digest,
        "dependencies": dependencies,
    }
    extras = {MODULE_CODE: marshal.dumps(module_code), METADATA: marshal.dumps(metadata)}
    return Build(_ppy.serialize(code, VERSION, abi, key, extras), functions, diagnostics)
