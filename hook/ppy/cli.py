"""The `ppy` command (also `python -m ppy`).

    ppy build [--warm] [-v] PATH...   build every .ppy module under PATH into its cache
    ppy check [-v] PATH...            report errors as file:line:col: error: message
    ppy run [--trace] FILE [ARGS...]  run a .ppy file as __main__, natively
    ppy dis [--jit [--value NAME=INT]...] FILE [FUNC]
                                      print the bytecode (or machine code, general or specialized)
    ppy clean [--user] [PATH...]      remove .ppy-cache folders under PATH (--user: the per-user cache)

build, check and clean are silent and exit 0 on success.

The top of the package: may import the package itself (its version and folder)
and, lazily where a command needs them, any of its modules: the import hook
`_hook` to load and run, the build path `_cache` for --warm, `_entry` for the
cache's rules, the extensions. Only `__main__` imports this module.
"""

import argparse
import os
import re
import sys
import traceback

import ppy


def _ppy_files(paths):
    """Every .ppy file named by or under `paths`, in a stable order."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for directory, subdirectories, files in os.walk(path):
                subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d != "__pycache__")
                found.extend(os.path.join(directory, f) for f in sorted(files) if f.endswith(".ppy"))
        elif os.path.exists(path):
            found.append(path)
        else:
            raise FileNotFoundError(path)
    return found


def _finder_near(source_path):
    """Locates .ppy modules as an import from `source_path`'s folder would."""
    from ppy import _hook

    directory = os.path.dirname(os.path.abspath(source_path))
    return lambda name: _hook.find_source(name, [directory] + sys.path)


def _module_name(source_path):
    return os.path.splitext(os.path.basename(source_path))[0]


def _syntax_error_text(error, source):
    """A SyntaxError in the diagnostics' format (file:line:col: error: ...)."""
    from ppy import _compiler

    line = error.lineno or 1
    lines = source.decode("utf-8", "replace").splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    column = max((error.offset or 1) - 1, 0)
    end_column = (error.end_offset or 0) - 1 if error.end_lineno in (None, line) else len(text)
    byte_column = len(text[:column].encode())
    byte_end = len(text[: max(end_column, column + 1)].encode())
    return _compiler.render_diagnostic("error", (line, byte_column, line, byte_end), error.msg,
                                       error.filename or "?", source)


def _command_check(args):
    from ppy import _compiler, _defs, _entry

    failed = False
    for path in _ppy_files(args.paths):
        with open(path, "rb") as handle:
            source = handle.read()
        regions = _entry.torch_key(source) not in (None, _entry.NO_EXECUTOR)
        try:
            _, functions, diagnostics, _, _ = _compiler.compile(source, path, _module_name(path), regions,
                                                                _entry.object_code() == "python")
        except SyntaxError as error:
            error.filename = path
            sys.stdout.write(_syntax_error_text(error, source))
            failed = True
            continue
        except (RecursionError, MemoryError) as error:
            # What CPython's own compile raises for a source nested too deeply.
            sys.stdout.write(_compiler.render_diagnostic("error", (1, 0, 1, 1), f"{type(error).__name__}: {error}",
                                                         path, source))
            failed = True
            continue
        for severity, loc, message in diagnostics:
            sys.stdout.write(_compiler.render_diagnostic(severity, loc, message, path, source))
            failed = failed or severity == "error"
        if args.verbose:
            # Every def: the functions ppy compiled (or tried to) and, among
            # them in source order, the methods and nested functions it leaves to Python.
            for entry in _defs.every_def(source, functions):
                if isinstance(entry, _defs.Def):
                    print(f"{path}:{entry.line}: {entry.qualname}: {_defs.check_text(entry, path)}")
                else:
                    print(f"{path}:{entry['line']}: {entry['name']}: {_tier_text(entry, path)}")
    return 1 if failed else 0


def _tier_text(function, path):
    """`ppy check -v`'s word on one module-level function: its tier, and for a
    fallback (or a torch function that is not a region) what kept it off and where."""
    def at(loc):
        return f"{path}:{loc[0]}:{loc[1] + 1}"

    if function["region"] >= 0:
        return f"region ({function['region_ops']} ATen ops)"
    where = f" at {at(function['reason_loc'])}" if function["reason_loc"][0] else ""
    text = "vm" if function["compiled"] else f"python ({function['reason']}{where})"
    if function["compiled"] and function.get("python_entry"):
        text += f"; called from Python: python ({function['python_entry']})"
    if function["region_reason"]:
        text += f"; not a region: {function['region_reason']} at {at(function['region_reason_loc'])}"
    if function.get("dynamic"):
        text += f"; dynamic locals: {', '.join(function['dynamic'])}"
    if function.get("generic_types") and function["compiled"]:
        # An element-generic def: every element type it compiled for.
        text += f"; element-generic: {' '.join(function['generic_types'])} (other element types run as Python)"
    return text


def _native_failures(loaded, path):
    """Prints the errors of @ppy.native functions that cannot be compiled (their
    module would raise CompileError at import); True if there are any."""
    metadata = loaded.metadata
    if not any(f["native"] and not f["compiled"] for f in metadata["functions"]):
        return False
    from ppy import _compiler

    with open(path, "rb") as handle:
        source = handle.read()
    for severity, loc, message in metadata["diagnostics"]:
        if severity == "error":
            sys.stdout.write(_compiler.render_diagnostic(severity, loc, message, path, source))
    return True


def _command_build(args):
    from ppy import _entry, _hook

    failed = False
    for path in _ppy_files(args.paths):
        try:
            loaded = _hook.load(path, _module_name(path), _finder_near(path))
        except SyntaxError as error:
            with open(path, "rb") as handle:
                sys.stdout.write(_syntax_error_text(error, handle.read()))
            failed = True
            continue
        except (RecursionError, MemoryError) as error:
            print(f"{path}:1:1: error: {type(error).__name__}: {error}")
            failed = True
            continue
        if _native_failures(loaded, path):
            failed = True
            continue
        if args.verbose:
            if loaded.outcome == _entry.HIT:
                print(f"{path}: up to date")
            else:
                print(f"{path}: built ({loaded.reason}) in {loaded.seconds * 1000:.1f} ms")
        if args.warm:
            from ppy import _cache

            try:
                built, seconds = _cache.build_machine_code(loaded, _module_name(path))
            except OSError as error:
                print(f"ppy build: {path}: {error}", file=sys.stderr)
                failed = True
                continue
            if args.verbose:
                state = f"compiled in {seconds * 1000:.1f} ms" if built else "up to date"
                print(f"{path}: machine code {state}")
    return 1 if failed else 0


def _command_run(args):
    from ppy import _hook

    if args.file is None:
        print("usage: ppy run [--trace] FILE [ARGS...]\nppy run: error: FILE is required", file=sys.stderr)
        return 2
    if not os.path.isfile(args.file):
        raise FileNotFoundError(2, "No such file", args.file)
    if args.trace:
        os.environ["PPY_TRACE"] = "1"
    try:
        _hook.run_main(args.file, args.args)
    except SystemExit:
        raise
    except BaseException as error:
        # Print the traceback as `python FILE` would, without ppy's own frames.
        tb = error.__traceback__
        package = os.path.dirname(os.path.abspath(ppy.__file__))
        while tb is not None and os.path.dirname(os.path.abspath(tb.tb_frame.f_code.co_filename)) == package:
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb)
        return 130 if isinstance(error, KeyboardInterrupt) else 1
    return 0


def _command_dis(args):
    from ppy import _hook, _ppy

    if args.value and not args.jit:
        print("--value needs --jit: a value specialization is machine code", file=sys.stderr)
        return 2
    loaded = _hook.load(args.file, _module_name(args.file), _finder_near(args.file))
    names = loaded.compiled.function_names()
    regions = {f["name"]: f["region"] for f in loaded.metadata["functions"] if f["region"] >= 0}
    if not args.jit and (args.function in regions or (args.function is None and regions)):
        if args.function is None:
            sys.stdout.write(loaded.compiled.dis(None))
        for name, index in regions.items():
            if args.function in (None, name):
                sys.stdout.write(("\n" if args.function is None and names else "") + loaded.compiled.region_dis(index))
        return 0
    if args.function and args.function not in names:
        reasons = {f["name"]: f["reason"] for f in loaded.metadata["functions"] if not f["compiled"]}
        if args.function in reasons:
            print(f"{args.function} runs as Python ({reasons[args.function]})", file=sys.stderr)
        else:
            print(f"no function {args.function} in {args.file}", file=sys.stderr)
        return 1
    if not args.jit:
        sys.stdout.write(loaded.compiled.dis(args.function))
        return 0
    values = {}
    for setting in args.value or []:
        param, _, number = setting.partition("=")
        try:
            values[param] = int(number)
        except ValueError:
            print(f"--value takes NAME=INT, not {setting!r}", file=sys.stderr)
            return 2
    if values and args.function is None:
        print("--value needs FUNC: the function to specialize", file=sys.stderr)
        return 2
    loaded.compiled.attach({"__name__": _module_name(args.file), "__builtins__": __builtins__})
    for name in names if args.function is None else [args.function]:
        print(f"machine code of {name} ({_ppy.JIT_TARGET}):")
        try:
            sys.stdout.write(_ppy.jit_listing(loaded.compiled, name, values or None))
        except ValueError as error:
            print(f"ppy dis: {error}", file=sys.stderr)
            return 2
        except RuntimeError as error:  # a function the JIT makes no code for, and why
            print(f"  none: {error}")
    return 0


# What ppy writes into a cache folder: entries and machine code, their locks
# and temporary files (named after them), and the build log.
_CACHE_FILE = re.compile(r".*\.(ppyc|ppyjit)(\.lock|\.[0-9a-f.]+\.tmp)?|build\.log")


def _clean_folder(folder):
    """Removes ppy's files from `folder`, then the folder if that left it empty.
    A symlinked folder loses the link only; other files are kept."""
    if os.path.islink(folder):
        os.unlink(folder)
        return
    for name in os.listdir(folder):
        if _CACHE_FILE.fullmatch(name):
            os.unlink(os.path.join(folder, name))
    try:
        os.rmdir(folder)
    except OSError:
        pass  # not empty: someone else's files, or PPY_CACHE_DIR's own


def _command_clean(args):
    failed = False
    folders = []
    for path in args.paths or ([] if args.user else ["."]):
        for directory, subdirectories, _ in os.walk(path):
            if ".ppy-cache" in subdirectories:
                folders.append(os.path.join(directory, ".ppy-cache"))
            subdirectories[:] = [d for d in subdirectories if d != ".ppy-cache" and not d.startswith(".")]
    configured = os.environ.get("PPY_CACHE_DIR")
    if configured and os.path.isdir(configured):
        folders.append(configured)
    if args.user:
        from ppy import _entry

        root = _entry.user_cache_root()
        if os.path.isdir(root) and not os.path.islink(root):
            folders.extend(os.path.join(root, name) for name in sorted(os.listdir(root)))
    for folder in folders:
        try:
            _clean_folder(folder)
        except OSError as error:
            print(f"ppy clean: {folder}: {error.strerror or error}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


def _parser():
    parser = argparse.ArgumentParser(
        prog="ppy", description="Compile and run typed Python kernels (.ppy files).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Environment: PPY_IMPORT=python (run .ppy files as plain Python), PPY_QUIET=1, "
               "PPY_JIT=0, PPY_CACHE_DIR.")
    parser.add_argument("--version", action="version", version=f"ppy {ppy.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    build = commands.add_parser("build", help="build .ppy modules into the project cache")
    build.add_argument("--warm", action="store_true", help="also compile machine code ahead of time")
    build.add_argument("-v", "--verbose", action="store_true", help="say per module whether it was built and why")
    build.add_argument("paths", nargs="+", metavar="PATH")
    build.set_defaults(run=_command_build)

    check = commands.add_parser("check", help="type-check .ppy modules")
    check.add_argument("-v", "--verbose", action="store_true", help="list every function and where it runs")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.set_defaults(run=_command_check)

    run = commands.add_parser("run", help="run a .ppy file as __main__")
    run.add_argument("--trace", action="store_true", help="report cache outcomes and tiers on stderr")
    run.add_argument("file", nargs="?", metavar="FILE")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS...")
    run.set_defaults(run=_command_run)

    dis = commands.add_parser("dis", help="print the bytecode (or machine code) of compiled functions")
    dis.add_argument("--jit", action="store_true", help="print the machine code instead")
    dis.add_argument("--value", action="append", metavar="NAME=INT",
                     help="with --jit: the value specialization for these int arguments (repeatable)")
    dis.add_argument("file", metavar="FILE")
    dis.add_argument("function", nargs="?", metavar="FUNC")
    dis.set_defaults(run=_command_dis)

    clean = commands.add_parser("clean", help="remove .ppy-cache folders")
    clean.add_argument("--user", action="store_true",
                       help="also empty the per-user cache ($XDG_CACHE_HOME/ppy, where a project cache is read-only)")
    clean.add_argument("paths", nargs="*", metavar="PATH")
    clean.set_defaults(run=_command_clean)
    return parser


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except FileNotFoundError as error:
        print(f"ppy: no such file or folder: {error.filename or error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader of ppy's own output went away (`ppy check -v | head`):
        # stdout is pointed at devnull, as Python's documentation of SIGPIPE
        # advises, so that the flush at exit does not raise again, and the
        # command ends quietly. (`ppy run` reports its program's exceptions
        # itself, as CPython would, before they reach here.)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
