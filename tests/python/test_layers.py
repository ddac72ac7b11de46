"""The modules of the package ppy import one way (issue 16): the cache entry's
rules (`_entry`) at the bottom, then the build path (`_cache`, `_build`), the
import hook (`_hook`), the package's `__init__`, and the command (`cli`) on top.

Three checks: no import cycle in hook/ppy, counting every import of a ppy
module at any level (inside functions too, where a cycle hides best); every
module imports alone, first, in a fresh interpreter; and a warm import loads
neither the build path nor the compiler.
"""

import ast
import textwrap
from pathlib import Path

import pytest

import ppy

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "hook" / "ppy"
PACKAGE = Path(ppy.__file__).parent  # the package under test (installed, or an overlay)
EXTENSIONS = {"_ppy", "_compiler", "_regions"}  # built by hook/ and regions/, not Python files


def _module_name(path):
    return "ppy" if path.stem == "__init__" else f"ppy.{path.stem}"


def _python_modules(folder):
    return {_module_name(path): path for path in sorted(folder.glob("*.py"))}


def _imports(path, modules):
    """The ppy modules that the file at `path` imports, at any level. `from ppy
    import x` names the module ppy.x where there is one, else the package's
    `__init__` (`from ppy import __version__`). The package's `__init__`, which
    Python runs before any submodule, is not counted for `import ppy.x`: it is
    no choice of the importing module. The extensions (EXTENSIONS) are not
    counted: they import no Python module of ppy but the leaf `_notes`."""
    own = _module_name(path)
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "ppy" or alias.name.startswith("ppy."):
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            elif node.level == 1:  # `from . import x`, `from .x import y`, inside the package
                base = "ppy" + (f".{node.module}" if node.module else "")
            else:
                continue
            if base != "ppy" and not base.startswith("ppy."):
                continue
            if base != "ppy":
                found.add(base)
                continue
            for alias in node.names:
                if alias.name not in EXTENSIONS:
                    found.add(f"ppy.{alias.name}" if f"ppy.{alias.name}" in modules else "ppy")
    found.discard(own)
    return {name for name in found if name in modules}


def _graph():
    modules = _python_modules(SOURCES)
    generated = PACKAGE / "_region_build.py"  # written by the build, not in the source tree
    if "ppy._region_build" not in modules and generated.exists():
        modules["ppy._region_build"] = generated
    return {name: _imports(path, modules) for name, path in modules.items()}


def _cycle(graph):
    """One import cycle of `graph` as a list of modules, first repeated last; or None."""
    state = {}  # name -> "open" while on the DFS path, "done" after

    def visit(name, path):
        state[name] = "open"
        path.append(name)
        for imported in sorted(graph[name]):
            if state.get(imported) == "open":
                return path[path.index(imported):] + [imported]
            if imported not in state:
                found = visit(imported, path)
                if found:
                    return found
        path.pop()
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name, [])
            if found:
                return found
    return None


def test_the_graph_reader_sees_imports_at_every_level(tmp_path):
    (tmp_path / "__init__.py").write_text("from ppy._b import x\n__version__ = '1'\n")
    (tmp_path / "_a.py").write_text(textwrap.dedent("""
        import os
        from ppy import _b, _ppy, __version__

        def f():
            from ppy import _c
            import ppy._d as d
            from ._e import y
    """))
    for name in "bcde":
        (tmp_path / f"_{name}.py").write_text("")
    modules = _python_modules(tmp_path)
    assert _imports(tmp_path / "_a.py", modules) == {"ppy", "ppy._b", "ppy._c", "ppy._d", "ppy._e"}
    assert _cycle({"ppy": {"ppy._b"}, "ppy._b": {"ppy._c"}, "ppy._c": {"ppy._b"}}) == ["ppy._b", "ppy._c", "ppy._b"]


def test_the_package_has_no_import_cycle():
    graph = _graph()
    assert {"ppy", "ppy._entry", "ppy._hook", "ppy._cache", "ppy.cli"} <= set(graph)
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cache_entry_module_is_a_leaf():
    # Everything else may use the entry's rules only if they use nothing else.
    assert _graph()["ppy._entry"] <= {"ppy._version", "ppy._region_build"}


# Every module of the source tree and of the package under test (which has the
# generated _region_build too): one missing from the package fails to import.
MODULE_FILES = sorted({path.name for folder in (SOURCES, PACKAGE) for path in folder.glob("*.py")})


@pytest.mark.parametrize("file_name", MODULE_FILES)
def test_each_module_imports_alone_first(runner, tmp_path, file_name):
    name = _module_name(Path(file_name))
    # `ppy.__main__` is the command: importing it runs it (here, --version).
    probe = (f"import sys; sys.argv[1:] = ['--version']; import {name}" if name == "ppy.__main__"
             else f"import {name}")
    result = runner.python("-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_a_warm_import_loads_neither_the_build_path_nor_the_compiler(runner, tmp_path):
    (tmp_path / "kernel.ppy").write_text("def twice(x: int) -> int:\n    return 2 * x % 1000\n")
    probe = textwrap.dedent("""
        import sys, ppy, kernel
        print(kernel.twice(21), ppy.tier(kernel.twice))
        print(sorted(m for m in ("ppy._cache", "ppy._build", "ppy._compiler", "ast") if m in sys.modules))
    """)
    cold = runner.python("-c", probe, cwd=tmp_path)
    assert cold.stdout.splitlines()[0] == "42 vm", cold.stderr
    warm = runner.python("-c", probe, cwd=tmp_path)
    assert warm.stdout.splitlines() == ["42 vm", "[]"], warm.stderr
