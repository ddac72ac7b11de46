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
annotations). A def whose body costs less than a call into compiled code gets
`python_entry(INDEX)` instead, which leaves the Python function bound for
calls from Python and lets the module's compiled callers call its code. The
module's code object is marshalled into the entry beside the bytecode, and a
warm import runs it without parsing.

May import: the extension `_compiler` and `_entry` (the entry's sections,
version and torch key). Only the build path, `_cache`, imports this module.
"""

import ast
import marshal
import sys

from ppy import _compiler, _entry
from ppy._entry import METADATA, MODULE_CODE, REGIONS


def rewrite(tree, functions):
    """Gives every compiled top-level def of `tree` its binder decorator, and
    every region's def its region decorator."""
    for function in functions:
        if function["compiled"] and function.get("python_entry"):
            # Calls from Python run the Python function (compile.cpp,
            # SmallCallAsPython); compiled callers call the code directly.
            method, index = "python_entry", function["index"]
        elif function["compiled"]:
            method, index = "binder", function["index"]
        elif function["region"] >= 0:
            method, index = "region", function["region"]
        else:
            continue
        node = tree.body[function["statement"]]
        module = ast.Name("__ppy_module__", ast.Load())
        attribute = ast.Attribute(value=module, attr=method, ctx=ast.Load())
        arguments = [ast.Constant(index)]
        if method == "binder" and function.get("specializations"):
            # An element-generic def: its generic parameter and the
            # (element type, index) of each other element type's code.
            arguments += [ast.Constant(function["generic_param"]),
                          ast.Constant(tuple(tuple(pair) for pair in function["specializations"]))]
        binder = ast.Call(func=attribute, args=arguments, keywords=[])
        # Each new node at the def's location; not ast.fix_missing_locations,
        # whose recursion fails on expressions CPython compiles (thousands deep).
        for new in (module, attribute, *arguments, binder):
            ast.copy_location(new, node)
        node.decorator_list.append(binder)
    return tree


def build(source, filename, module_name, abi, key, source_digest, dependencies, torch=None):
    """Compiles `source` (bytes) into a cache entry keyed by `key`; returns its bytes.

    The metadata records the source's digest and the closure's, so that a later
    miss can say what changed, and for a module that uses torch the version the
    region executor was built for (`_entry.torch_key`): regions are compiled only
    when there is an executor to run them.
    """
    regions_on = torch not in (None, _entry.NO_EXECUTOR)
    object_code = _entry.object_code()
    tree, functions, diagnostics, code, regions = _compiler.compile(source, filename, module_name, regions_on,
                                                                    object_code == "python")
    try:
        module_code = compile(rewrite(tree, functions), filename, "exec", dont_inherit=True)
    except RecursionError:
        # CPython compiles deeper expressions from source text than from an
        # AST object (generated code thousands deep): then the module runs as
        # plain Python, exactly as CPython would run it.
        module_code = compile(source, filename, "exec", dont_inherit=True)
        for function in functions:
            if function["compiled"] or function["region"] >= 0:
                function.update(compiled=False, region=-1, reason="a module nested too deeply to rewrite",
                                reason_loc=(function["line"], 0, function["line"], 0))
    metadata = {
        "functions": functions,
        "diagnostics": diagnostics,
        "key": key,
        "source_digest": source_digest,
        "dependencies": dependencies,
        "torch": torch,
        "object_code": object_code,
        "optimize": sys.flags.optimize,
    }
    extras = {MODULE_CODE: marshal.dumps(module_code), METADATA: marshal.dumps(metadata)}
    if regions is not None:
        extras[REGIONS] = regions
    return _compiler.serialize(code, _entry.version(), abi, key, extras)
