"""Building a cache entry from a .ppy source.

The C++ compiler (ppy._compiler.compile) parses the source with CPython's parser,
checks it and lowers every function it can to bytecode. The module itself stays
ordinary Python: every compiled `def` gets one more decorator, the innermost,

    @decorator                        @decorator
    def f(x: int = 2) -> int:   ==>   @__ppy_module__.binder(INDEX)
        ...                           def f(x: int = 2) -> int: ...

so that CPython evaluates decorators, defaults and annotations in its own order
and creates the Python function, which the binder turns into the compiled
function (keeping the Python one for calls whose arguments do not fit the
annotations). The module's code object is marshalled into the entry beside the
bytecode, and a warm import runs it without parsing.
"""

import ast
import marshal

from ppy import _compiler, _hook
from ppy._hook import METADATA, MODULE_CODE


class Build:
    """The result of compiling one source: entry bytes and what the compiler said."""

    def __init__(self, data, functions, diagnostics):
        self.data = data
        self.functions = functions
        self.diagnostics = diagnostics


def rewrite(tree, functions):
    """Gives every compiled top-level def of `tree` its binder decorator."""
    for function in functions:
        if not function["compiled"]:
            continue
        node = tree.body[function["statement"]]
        binder = ast.Call(
            func=ast.Attribute(value=ast.Name("__ppy_module__", ast.Load()), attr="binder", ctx=ast.Load()),
            args=[ast.Constant(function["index"])],
            keywords=[],
        )
        node.decorator_list.append(ast.copy_location(binder, node))
    ast.fix_missing_locations(tree)
    return tree


def build(source, filename, module_name, abi, key, source_digest, dependencies):
    """Compiles `source` (bytes) into a cache entry keyed by `key`.

    The metadata records the source's digest and the closure's, so that a later
    miss can say what changed.
    """
    tree, functions, diagnostics, code = _compiler.compile(source, filename, module_name)
    module_code = compile(rewrite(tree, functions), filename, "exec", dont_inherit=True)
    metadata = {
        "functions": functions,
        "diagnostics": diagnostics,
        "key": key,
        "source_digest": source_digest,
        "dependencies": dependencies,
    }
    extras = {MODULE_CODE: marshal.dumps(module_code), METADATA: marshal.dumps(metadata)}
    return Build(_compiler.serialize(code, _hook.version(), abi, key, extras), functions, diagnostics)
