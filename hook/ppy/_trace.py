"""`ppy run --trace`: what ppy did, on stderr.

One line per module load (cache outcome and time), one line per def in source
order (the tier it runs on, and for a fallback the construct and line that made
it; methods and nested functions, which run as Python, under their qualified
names), and at exit a summary of calls and time per compiled function. Enabled
by PPY_TRACE=1, which `ppy run --trace` sets.

May import: `_entry` (the load outcomes it reports), `_defs` (the list of
defs) and, lazily, the extension `_ppy`.
"""

import atexit
import os
import sys

from ppy import _entry

_modules = []  # (module name, CompiledModule) in load order


def enabled():
    return os.environ.get("PPY_TRACE") == "1"


def _emit(message):
    print(f"ppy trace: {message}", file=sys.stderr)


def event(message):
    if enabled():
        _emit(message)


def module_loaded(name, path, loaded):
    if not enabled():
        return
    if not _modules:
        from ppy import _ppy

        _ppy.set_profiling(True)
        _ppy.set_jit_listener(_emit)
        atexit.register(_summary)
    _modules.append((name, loaded.compiled))
    try:
        where = os.path.relpath(path)
    except ValueError:
        where = path
    milliseconds = loaded.seconds * 1000
    if loaded.outcome == _entry.HIT:
        _emit(f"module {name} ({where}): cache hit, loaded in {milliseconds:.2f} ms")
    elif loaded.outcome == _entry.WAITED:
        _emit(f"module {name} ({where}): cache miss ({loaded.reason}), built by another process, "
              f"loaded in {milliseconds:.2f} ms")
    else:
        place = "in memory" if loaded.outcome == _entry.IN_MEMORY else "into the cache"
        _emit(f"module {name} ({where}): cache miss ({loaded.reason}), built {place} in {milliseconds:.2f} ms")


def functions_bound(name, metadata, compiled, source_path=None):
    if not enabled():
        return
    from ppy import _defs

    tiers = compiled.tiers()
    functions = metadata["functions"]
    if source_path is not None:
        try:
            with open(source_path, "rb") as handle:
                functions = _defs.every_def(handle.read(), functions)
        except OSError:
            pass  # the module-level functions alone
    for function in functions:
        if isinstance(function, _defs.Def):
            _emit(f"  {name}.{function.qualname}: {_defs.trace_text(function)}")
        elif function["region"] >= 0:
            _emit(f"  {name}.{function['name']}: region ({function['region_ops']} ATen ops)")
        elif function["compiled"]:
            tier = tiers[function["index"]]
            what = "jit (machine code mapped)" if tier == "jit" else "vm (machine code once hot)"
            if function.get("python_entry"):
                what += f"; called from Python: python ({function['python_entry']})"
            _emit(f"  {name}.{function['name']}: {what}")
        else:
            line = function["reason_loc"][0]
            where = f", line {line}" if line else ""
            _emit(f"  {name}.{function['name']}: python ({function['reason']}{where})")


def _summary():
    rows = []
    inlined = []
    specialized = []
    left = []
    guarded = []
    from ppy import _ppy

    for module_name, compiled in _modules:
        for function, calls, seconds, entries, in_place, special, exits, deopts in compiled.stats():
            if calls:
                rows.append((seconds, calls, entries, f"{module_name}.{function}"))
            if in_place:
                inlined.append(f"{module_name}.{function}")
            if special is not None:
                specialized.append((f"{module_name}.{function}", special[0], special[1]))
            if exits[0] or deopts is not None:
                left.append((f"{module_name}.{function}", exits, deopts))
            if entries:
                try:
                    general, special_guards = _ppy.jit_guards(compiled, function)
                except (KeyError, RuntimeError):  # (a module no longer attached: no guards to name)
                    general = special_guards = None
                if special_guards is not None and special is not None and special[1]:
                    guarded.append((f"{module_name}.{function} ({special[0]})", special_guards))
                if general and (special is None or entries > special[1]):
                    guarded.append((f"{module_name}.{function}", general))
    _emit("summary: calls, time (inclusive) and entries into machine code per compiled function")
    for seconds, calls, entries, name in sorted(rows, reverse=True):
        _emit(f"  {name:40s} {calls:10d} calls {seconds * 1000:12.3f} ms {entries:10d} jit entries")
    if inlined:
        _emit("summary: inlined: machine code of their callers runs these in place of calls"
              " (calls made that way are not counted above)")
        for name in inlined:
            _emit(f"  {name}")
    if specialized:
        _emit("summary: value specializations (of the jit entries above, those that entered one)")
        for name, values, entries in specialized:
            _emit(f"  {name:40s} {entries:10d} entries for {values}")
    if guarded:
        # What the machine code assumed, and checks: a failed guard is no
        # error, the interpreter goes on (counted among the side exits below).
        _emit("summary: guards (of the functions that entered machine code: what it checks it may assume)")
        for name, guards in guarded:
            for line, text in guards:
                _emit(f"  {name:40s} line {line}: {text}")
    if left:
        # Side exits: machine code handed the rest of a call to the
        # interpreter (an instruction it leaves to it, a failed guard, an
        # overflow). Deoptimizations: an int outgrew 64 bits before the call
        # had any effect, and the function's Python code ran the call instead.
        _emit("summary: side exits (of the jit entries above, those that left for the interpreter) and deoptimizations")
        for name, (exits, line, instruction, dropped), deopts in left:
            text = f"  {name:40s} {exits:10d} side exits"
            if line is not None:
                text += f" (last: line {line}, at {instruction})"
            if dropped:
                # Entries at the start that leave at once cost more than
                # they run (vm/interpreter.cpp, NoteLeftFromStart).
                text += "; calls no longer enter it at the start: those entries left at once"
            if deopts is not None:
                count, line, what = deopts
                reason = ("a module constant that no longer holds its annotated type" if what == "global"
                          else f"an int result of {what} beyond 64 bits")
                text += f" {count:10d} deoptimizations (last: line {line}, {reason})"
            _emit(text)
    unboxed = [(f"{module_name}.{row[0]}",) + tuple(row[1:])
               for module_name, compiled in _modules for row in compiled.unboxed_stats()]
    if unboxed:
        # Object code whose float and int values the interpreter keeps unboxed,
        # behind guards (docs/architecture.md, `unbox`): a failed guard runs
        # the rest of that call as object code, and the next version keeps
        # that instruction as object code.
        _emit("summary: unboxed numbers (object code run with its floats and ints unboxed: frames that entered it, "
              "the version's slots and guards, versions built, failed guards)")
        for name, slots, guards, entries, versions, failed, line, instruction in unboxed:
            text = f"  {name:40s} {entries:10d} entries {slots:3d} slots {guards:3d} guards {versions:2d} versions"
            if failed:
                text += f" {failed:6d} failed guards (last: line {line}, {instruction})"
            _emit(text)
    regions = [(f"{module_name}.{name}", calls, ops, python_calls)
               for module_name, compiled in _modules
               for name, calls, ops, python_calls in compiled.region_stats() if calls]
    if regions:
        _emit("summary: ATen regions (calls, ops per call, calls that ran the Python function instead)")
        for name, calls, ops, python_calls in regions:
            _emit(f"  {name:40s} {calls:10d} calls {ops:6d} ops {python_calls:10d} as Python")
