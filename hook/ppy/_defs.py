"""Every `def` of a module, as `ppy check -v` and `ppy run --trace` list them.

ppy compiles the functions defined directly in a module's body; the compiler's
metadata reports each of those with its tier. Every other def (a method, a
nested function, a def inside a module-level `if` or `try`) runs as Python, and
the compiler does not see it. So that the listing does not overstate what runs
natively, this walks the module with Python's own parser and adds those defs,
in source order, under the qualified name Python gives them (`__qualname__`:
`P.norm`, `outer.<locals>.inner`) and with why they run as Python.
"""

import ast
import warnings
from collections import namedtuple

# A def ppy does not compile. `reason` names the construct (it sits at `line`,
# `column`: the def itself); `note` says what ppy compiles instead (or None);
# `inside`, if not None, is the enclosing function, itself run as Python.
Def = namedtuple("Def", "qualname line column reason note inside")

NOT_MODULE_LEVEL = "ppy compiles module-level functions only"
NOT_IN_MODULE_BODY = "ppy compiles only functions defined directly in the module body"

_BLOCKS = {
    ast.If: "an if statement", ast.For: "a for loop", ast.AsyncFor: "a for loop", ast.While: "a while loop",
    ast.Try: "a try statement", ast.With: "a with statement", ast.AsyncWith: "a with statement",
}
if hasattr(ast, "TryStar"):
    _BLOCKS[ast.TryStar] = "a try statement"
if hasattr(ast, "Match"):
    _BLOCKS[ast.Match] = "a match statement"

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Scope:
    """A module, class or function body, as Python's compiler names what is in it."""

    def __init__(self, kind, qualname="", function=None, python=True):
        self.kind = kind  # "module", "class" or "function"
        self.qualname = qualname
        self.function = function  # the nearest enclosing function scope (itself, for a function)
        self.python = python  # for a function: whether it runs as Python
        self.declared_global = set()

    def child_qualname(self, name):
        # CPython's compiler_set_qualname: a name declared `global` in the
        # enclosing scope, or one defined in the module, is not qualified.
        if self.kind == "module" or name in self.declared_global:
            return name
        return f"{self.qualname}.<locals>.{name}" if self.kind == "function" else f"{self.qualname}.{name}"


def _method_kind(node):
    for decorator in node.decorator_list:
        name = decorator.id if isinstance(decorator, ast.Name) else getattr(decorator, "attr", None)
        if name == "staticmethod":
            return "a static method"
        if name == "classmethod":
            return "a class method"
    return "a method"


def _statement_lists(node):
    """The statement lists directly inside a compound statement, in source order."""
    for field in ("body", "handlers", "orelse", "finalbody", "cases"):
        for child in getattr(node, field, None) or ():
            if isinstance(child, ast.stmt):
                yield child
            else:  # an except handler or a match case
                yield from child.body


def every_def(source, functions):
    """The module's defs in source order: each function in `functions` (the
    compiler's metadata, as is) and a `Def` for each def ppy does not compile.
    Where Python cannot parse `source`, `functions` alone."""
    try:
        with warnings.catch_warnings():  # CPython's own compile warns once, when the module runs
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return list(functions)
    compiled = {(f["name"], f["line"]): f for f in functions}
    entries = [((f["line"], 0), f) for f in functions]
    module = _Scope("module")
    # Pre-order over statements (never into expressions), so an enclosing def
    # comes before what it contains; an explicit stack, however deep the nesting.
    stack = [(statement, module, None) for statement in reversed(tree.body)]
    while stack:
        node, scope, block = stack.pop()
        if isinstance(node, ast.Global):
            scope.declared_global.update(node.names)
        elif isinstance(node, _FUNCTIONS):
            qualname = scope.child_qualname(node.name)
            if scope.kind == "module" and block is None:
                function = compiled.get((node.name, node.lineno))
                python = function is None or (not function["compiled"] and function["region"] < 0)
                if function is None:  # not expected: the compiler lists every one
                    entries.append(((node.lineno, node.col_offset),
                                    Def(qualname, node.lineno, node.col_offset, "not listed by ppy's compiler",
                                        None, None)))
            else:
                python = True
                inside = scope.function if scope.function is not None and scope.function.python else None
                if scope.kind == "class":
                    reason, note = f"{_method_kind(node)} of class {scope.qualname}", NOT_MODULE_LEVEL
                elif scope.kind == "function":
                    reason, note = f"a nested function in {scope.qualname}", NOT_MODULE_LEVEL
                else:
                    reason, note = f"a function inside {block}", NOT_IN_MODULE_BODY
                entries.append(((node.lineno, node.col_offset),
                                Def(qualname, node.lineno, node.col_offset, reason, note,
                                    inside.qualname if inside else None)))
            inner = _Scope("function", qualname, python=python)
            inner.function = inner
            stack.extend((child, inner, None) for child in reversed(node.body))
        elif isinstance(node, ast.ClassDef):
            inner = _Scope("class", scope.child_qualname(node.name), function=scope.function)
            stack.extend((child, inner, None) for child in reversed(node.body))
        else:
            if scope.kind == "module" and block is None:
                block = _BLOCKS.get(type(node), "a compound statement")
            stack.extend((child, scope, block) for child in reversed(list(_statement_lists(node))))
    entries.sort(key=lambda entry: entry[0])
    return [entry for _, entry in entries]


def _tail(definition):
    text = f"; {definition.note}" if definition.note else ""
    if definition.inside is not None:
        text += f"; {definition.inside} runs as Python too"
    return text


def check_text(definition, path):
    """`ppy check -v`'s word on a def ppy does not compile."""
    return (f"python ({definition.reason} at {path}:{definition.line}:{definition.column + 1}"
            f"{_tail(definition)})")


def trace_text(definition):
    """`ppy run --trace`'s word on a def ppy does not compile."""
    return f"python ({definition.reason}, line {definition.line}{_tail(definition)})"
