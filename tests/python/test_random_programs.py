"""Randomized differential test (issue 12, acceptance item 4): a program made of
plain, unannotated Python functions that CPython runs must behave the same
under ppy. A seeded generator writes small plain Python modules (int and float
arithmetic, accumulators that mix the two, ints that grow past 64 bits,
loops with break/continue, lists, calls and bounded recursion); each
is run with CPython (`python gen.ppy`) and with `ppy run` under the interpreter
(PPY_JIT=0) and the eager JIT, and stdout and exit status must be identical.

The generator keeps to what ppy promises to run exactly, and leaves out the
documented differences (docs/language.md, "Types" and "Semantics"). Ints grow
past 64 bits anywhere: in pure functions (ppy deoptimizes and reruns them as
Python) and after effects (a print, a list append, a call: the int becomes a
Python int in place, "grown"), and are passed on to other functions and
returned. Left out:

* annotated params are never assigned, so no annotated int local overflows;
* no `-> float` returns, annotated locals, bools in arithmetic, or `x ** y`
  with a negative exponent in a variable.

A candidate that raises anything under CPython (other than the
ZeroDivisionError the `__main__` block provokes and catches on purpose) or
makes a non-finite float is discarded too.

PPY_RANDOM_SEEDS=a:b runs seeds a..b-1 instead of the default range, to hunt
for bugs over many more programs than the suite runs every time.
"""

import ast
import contextlib
import io
import math
import os
import random
import signal

import pytest

PROGRAMS_PER_SEED = 3

# Programs skipped for a known, not yet fixed bug (none now: program 66's
# wrong result was Bug C, an `if` branch falling through into its `else`).
KNOWN_BUGS = set()


def _seeds():
    spec = os.environ.get("PPY_RANDOM_SEEDS")
    if spec:
        lo, hi = spec.split(":")
        return list(range(int(lo), int(hi)))
    return list(range(40))


INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


class _Big(Exception):
    pass


class _Generator:
    def __init__(self, rng):
        self.rng = rng
        self.small = []   # (name, nparams) of effectful functions defined so far
        self.builtins = True
        self.typed = set()  # loop counters and annotated parameters
        self.lines = []

    # -- expressions -------------------------------------------------------

    def literal(self, kind):
        r = self.rng
        if kind == "i":
            return str(r.choice([0, 1, 2, 3, 5, 7, 10, 13, -1, -2, -3, -7, r.randint(-50, 50)]))
        value = r.choice([0.5, 1.5, 0.25, -0.5, 2.0, 0.1, 3.75, -1.25, round(r.uniform(-20, 20), 3)])
        return repr(value)

    def atom(self, env):
        r = self.rng
        if env and r.random() < 0.7:
            name = r.choice(sorted(env))
            return name, env[name]
        kind = r.choice("iif")
        return self.literal(kind), kind

    def expr(self, env, depth, calls):
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return self.atom(env)
        choice = r.random()
        if calls and self.small and choice < 0.08:
            name, nparams = r.choice(self.small)
            args = [self.expr(env, depth - 1, False)[0] for _ in range(nparams)]
            return f"{name}({', '.join(args)})", "n"
        if choice < 0.55:
            a, ka = self.expr(env, depth - 1, calls)
            b, kb = self.expr(env, depth - 1, calls)
            op = r.choice(["+", "-", "*", "+", "-", "*", "//", "%", "/"])
            kind = "i" if ka == kb == "i" else ("f" if "i" != ka == kb == "f" or {ka, kb} == {"i", "f"} else "n")
            if op in ("//", "%", "/"):
                if not self.builtins:
                    b = f"({b} ** 2 + 1)"
                elif r.random() < 0.5:
                    b = f"(abs({b}) + 1)"
                else:
                    b = f"({b} if {b} != 0 else {r.choice(['3', '-2', '1.5'])})"
                    kind = "n" if kind == "i" else kind
                if op == "/":
                    kind = "f"
            return f"({a} {op} {b})", kind
        if choice < 0.62 or (not self.builtins and choice < 0.87):
            a, ka = self.expr(env, depth - 1, calls)
            return f"({a} ** {r.choice([0, 1, 2, 2, 3])})", ka
        if choice < 0.68:
            a, ka = self.expr(env, depth - 1, calls)
            return f"abs({a})", ka
        if choice < 0.76:
            a, ka = self.expr(env, depth - 1, calls)
            b, kb = self.expr(env, depth - 1, calls)
            return f"{r.choice(['min', 'max'])}({a}, {b})", ka if ka == kb else "n"
        if choice < 0.82:
            a, _ = self.expr(env, depth - 1, calls)
            return f"int({a})", "i"
        if choice < 0.87:
            a, _ = self.expr(env, depth - 1, calls)
            return f"float({a})", "f"
        if choice < 0.92:
            ints = [n for n, k in env.items() if k == "i"]
            if ints:
                return f"({r.choice(ints)} << {r.randint(1, 6)})", "i"
            return self.atom(env)
        a, ka = self.expr(env, depth - 1, calls)
        b, kb = self.expr(env, depth - 1, calls)
        return f"({a} if {self.cond(env)} else {b})", ka if ka == kb else "n"

    def cond(self, env):
        if not self.builtins:
            # Bug B (see _Generator.function): pure functions branch only on
            # typed values (loop counters, annotated parameters).
            env = {n: k for n, k in env.items() if n in self.typed}
        a, _ = self.atom(env)
        b, _ = self.atom(env)
        return f"{a} {self.rng.choice(['<', '<=', '>', '>=', '==', '!='])} {b}"

    # -- statements --------------------------------------------------------

    def block(self, env, fixed, indent, depth, calls, lists, loop, counter=0):
        """Statements at `indent`; `fixed` names may be read but not assigned."""
        r = self.rng
        out = []
        for _ in range(r.randint(1, 4)):
            choice = r.random()
            pad = "    " * indent
            # loop counters stay typed ints: never assigned outside their loop
            writable = sorted(n for n in env if n not in fixed and n not in self.typed)
            if choice < 0.3 or not writable:
                e, k = self.expr(env, 2, calls)
                name = r.choice(writable) if writable and r.random() < 0.5 else f"v{len(env)}"
                out.append(f"{pad}{name} = {e}")
                env[name] = k if name not in env or env[name] == k else "n"
            elif choice < 0.45:
                name = r.choice(writable)
                e, k = self.expr(env, 1, calls)
                op = r.choice(["+=", "-=", "*=", "+="])
                out.append(f"{pad}{name} {op} {e}")
                env[name] = env[name] if env[name] == k else "n"
            elif choice < 0.52 and len(writable) >= 2:
                a, b = r.sample(writable, 2)
                ea, ka = self.expr(env, 1, calls)
                out.append(f"{pad}{a}, {b} = {b}, {ea}")
                env[a], env[b] = ("n", "n")
            elif choice < 0.62 and depth > 0:
                out.append(f"{pad}if {self.cond(env)}:")
                branch = self.block(env, fixed, indent + 1, depth - 1, calls, lists, loop, counter)
                if r.random() < 0.4:
                    out += self.avoid_bug_c(branch, pad)
                    out.append(f"{pad}elif {self.cond(env)}:")
                    branch = self.block(env, fixed, indent + 1, depth - 1, calls, lists, loop, counter)
                if r.random() < 0.5:
                    out += self.avoid_bug_c(branch, pad)
                    out.append(f"{pad}else:")
                    out += self.block(env, fixed, indent + 1, depth - 1, calls, lists, loop, counter)
                else:
                    out += branch
            elif choice < 0.72 and depth > 0:
                i = f"i{indent}_{counter}"
                counter += 1
                start, stop = r.randint(-3, 2), r.randint(0, 12)
                step = r.choice(["", "", ", 2", ", 3"])
                out.append(f"{pad}for {i} in range({start}, {stop}{step}):")
                env[i] = "i"
                self.typed.add(i)
                out += self.block(env, fixed | {i}, indent + 1, depth - 1, calls, lists, True, counter)
                if r.random() < 0.3:
                    out.append(f"{pad}    if {self.cond(env)}:")
                    out.append(f"{pad}        {r.choice(['break', 'continue'])}")
            elif choice < 0.8 and depth > 0:
                k = f"k{indent}_{counter}"
                counter += 1
                out.append(f"{pad}{k} = 0")
                out.append(f"{pad}while {k} < {r.randint(1, 10)}:")
                out.append(f"{pad}    {k} += 1")
                env[k] = "i"
                self.typed.add(k)
                body = self.block(env, fixed | {k}, indent + 1, depth - 1, calls, lists, True, counter)
                if r.random() < 0.4:
                    body.insert(0 if r.random() < 0.5 else len(body), f"{pad}    if {self.cond(env)}:\n{pad}        {r.choice(['break', 'continue'])}")
                out += body
            elif choice < 0.9 and lists:
                name = r.choice(lists)
                e, _ = self.expr(env, 1, calls)
                out.append(f"{pad}{name}.append({e})")
            elif choice < 0.95 and lists:
                name = r.choice(lists)
                target = f"v{len(env)}"
                idx, _ = self.atom({n: k for n, k in env.items() if k == "i"})
                if r.random() < 0.5:
                    out.append(f"{pad}{target} = {name}[int({idx}) % len({name})]")
                else:
                    out.append(f"{pad}{target} = {name}[-1] + len({name})")
                env[target] = "n"
            elif loop and r.random() < 0.5:
                out.append(f"{pad}if {self.cond(env)}:")
                out.append(f"{pad}    {r.choice(['break', 'continue'])}")
            else:
                e, k = self.expr(env, 2, calls)
                name = f"v{len(env)}"
                out.append(f"{pad}{name} = {e}")
                env[name] = k
        return out

    @staticmethod
    def avoid_bug_c(branch, pad):
        # Bug C, fixed: an `if` branch ending in an `if` whose body ends in
        # `break`/`continue` fell through into the outer `else` (the lowering
        # took the trailing jump for the end of the branch; see
        # Lowering::LastIsEnd). Generated as is.
        return branch

    def params(self, count):
        r = self.rng
        names, decls, kinds = [], [], {}
        for j in range(count):
            name = f"p{j}"
            kind = r.choice("iif")
            ann = ""
            if r.random() < 0.35:
                ann = ": int" if kind == "i" else ": float"
            names.append(name)
            decls.append(name + ann)
            kinds[name] = (kind, bool(ann))
        return names, decls, kinds

    def function(self, name, pure):
        r = self.rng
        nparams = r.randint(1, 3)
        names, decls, kinds = self.params(nparams)
        env = {n: k for n, (k, _) in kinds.items()}
        fixed = {n for n, (_, ann) in kinds.items() if ann}
        self.typed = set(fixed)
        lines = [f"def {name}({', '.join(decls)}):"]
        lists = []
        if pure:
            # Bugs A and B, fixed: a builtin (abs, min, max, int, float) of a
            # plain number and a truth test of one counted as effects, so an
            # int that outgrew 64 bits later in the function raised
            # OverflowError instead of deoptimizing.
            acc = "s"
            lines.append(f"    {acc} = {r.choice(['0', '1', '0.0'])}")
            env[acc] = "n"
            body = self.block(env, fixed, 1, 2, False, [], False)
            lines += body
            # something that grows past 64 bits, or mixes int and float
            grow = r.choice(["mul", "shift", "fact", "mix", "none"])
            if grow == "mul":
                lines += ["    g = 7", f"    for j in range({r.randint(30, 60)}):", "        g = g * 3 + j"]
            elif grow == "shift":
                lines += [f"    g = {r.randint(1, 99)} << {r.randint(40, 90)}", "    g = g - (g >> 3)"]
            elif grow == "fact":
                lines += ["    g = 1", f"    for j in range(2, {r.randint(15, 30)}):", "        g *= j"]
            elif grow == "mix":
                lines += ["    g = 0", f"    for j in range({r.randint(3, 20)}):", "        g += 0.5",
                          "        if j % 3 == 0:", "            continue", "        g += j"]
            else:
                lines += ["    g = 1"]
            ints = [n for n, k in env.items() if k == "i"]
            extra = r.choice(ints) if ints else "1"
            lines.append(f"    return (s, g, {extra})" if r.random() < 0.5 else f"    return g + {extra}")
            self.builtins = True
        else:
            if r.random() < 0.6:
                lists.append("xs")
                e, _ = self.expr(env, 1, False)
                lines.append(f"    xs = [{e}]")
            body = self.block(env, fixed, 1, 2, True, lists, False)
            lines += body
            if r.random() < 0.2:
                a, _ = self.atom(env)
                lines.append(f"    print('in {name}', repr({a}))")
            if r.random() < 0.5:
                # an int that outgrows 64 bits after effects: printed, kept
                # in a list, compared, and returned
                lines += ["    g = 3", f"    for j in range({r.randint(30, 70)}):", "        if j % 16 == 0:",
                          f"            print('{name}', j, g > 2 ** 63, g % 1000003)", "        g = g * 5 + j"]
                if lists:
                    lines.append("    xs.append(g)")
                lines.append(f"    g = g // {r.choice(['1', '7', '2 ** 70'])} - {r.choice(['0', '1', 'g'])}")
                env["g"] = "i"  # the return may use it
            ret, _ = self.expr(env, 1, False)
            if lists and r.random() < 0.5:
                ret = f"({ret}, len(xs), xs[-1])"
            lines.append(f"    return {ret}")
        return lines, [kinds[n][0] for n in names]

    def arg(self, kind):
        r = self.rng
        if kind == "i":
            return str(r.randint(-20, 40))
        return repr(round(r.uniform(-10, 10), 2))

    def program(self):
        r = self.rng
        out = []
        calls = []
        for index in range(r.randint(2, 5)):
            pure = r.random() < 0.4
            name = f"f{index}"
            lines, kinds = self.function(name, pure)
            out += lines + [""]
            if not pure:
                self.small.append((name, len(kinds)))
            calls.append((name, kinds))
        # bounded recursion through a small function
        if r.random() < 0.6:
            depth = r.randint(3, 15)
            helper = ""
            if self.small:
                h, n = r.choice(self.small)
                helper = f" + int({h}({', '.join(['n'] * n)})) % 7"
            out += ["def rec(n, acc):", "    if n <= 0:", "        return acc",
                    f"    return rec(n - 1, acc * {r.choice(['1', '2', '-1'])} + n % 5{helper} + {self.literal('f') if r.random() < 0.3 else '1'})",
                    ""]
            calls.append(("rec", None))
            rec_depth = depth
        out += ["def divz(a, b):", f"    return a {r.choice(['//', '%', '/'])} b", ""]
        out.append('if __name__ == "__main__":')
        for name, kinds in calls:
            for _ in range(r.randint(1, 2)):
                if kinds is None:
                    out.append(f"    print(repr(rec({rec_depth}, {self.arg(r.choice('if'))})))")
                else:
                    out.append(f"    print(repr({name}({', '.join(self.arg(k) for k in kinds)})))")
        a, b = self.arg(r.choice("if")), r.choice(["0", "0.0", "3", "-2"])
        out += ["    try:", f"        print(repr(divz({a}, {b})))", "    except ZeroDivisionError as e:",
                "        print('ZeroDivisionError', e)"]
        return "\n".join(out) + "\n"


class _Instrument(ast.NodeTransformer):
    """Wraps every arithmetic result and call result: a non-finite float
    raises _Big (ppy's floats are IEEE doubles too, but the programs keep to
    finite ones so that their printed digits are the point)."""

    def wrap(self, node):
        return ast.Call(ast.Name("_chk", ast.Load()), [node], [])

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return self.wrap(node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        return self.wrap(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        return self.wrap(node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        load = ast.Name(node.target.id, ast.Load())
        value = self.wrap(ast.BinOp(load, node.op, node.value))
        return ast.Assign([ast.Name(node.target.id, ast.Store())], value)


def _chk(value):
    if isinstance(value, float) and not math.isfinite(value):
        raise _Big("non-finite float")
    if isinstance(value, tuple):
        for item in value:
            _chk(item)
    return value


def _too_slow(signum, frame):
    raise _Big("ran for more than two seconds")


def _acceptable(source):
    """Whether CPython runs the candidate cleanly, within two seconds (a `while`
    loop whose counter the body keeps resetting would never end)."""
    tree = _Instrument().visit(ast.parse(source))
    ast.fix_missing_locations(tree)
    namespace = {"__name__": "__main__", "_chk": _chk}
    previous = signal.signal(signal.SIGALRM, _too_slow)
    # (A mask inherited from whatever started the tests must not block it.)
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(tree, "<gen>", "exec"), namespace)
    except Exception:
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGALRM, previous)
    return True


def generate(seed):
    """A program for `seed` that CPython runs cleanly within the rules above."""
    for attempt in range(1000):
        rng = random.Random(seed * 1000 + attempt)
        gen = _Generator(rng)
        source = gen.program()
        if _acceptable(source):
            return source
    raise AssertionError(f"seed {seed}: no acceptable program in 1000 attempts")


@pytest.mark.parametrize("seed", _seeds())
def test_random_program(seed, runner, tmp_path):
    for k in range(PROGRAMS_PER_SEED):
        program_seed = seed * PROGRAMS_PER_SEED + k
        if program_seed in KNOWN_BUGS:
            continue
        source = generate(program_seed)
        path = tmp_path / f"gen_{program_seed}.ppy"
        path.write_text(source)
        expected = runner.python(path, cwd=tmp_path, timeout=60)
        assert expected.returncode == 0, f"seed {program_seed}: CPython failed\n{source}\n{expected.stderr}"
        for jit in ("0", "eager"):
            got = runner.ppy("run", path, cwd=tmp_path, timeout=60, PPY_JIT=jit)
            assert (got.stdout, got.returncode) == (expected.stdout, expected.returncode), (
                f"seed {program_seed} (PPY_JIT={jit}): ppy differs from CPython\n"
                f"--- program gen_{program_seed}.ppy ---\n{source}\n"
                f"--- CPython (exit {expected.returncode}) ---\n{expected.stdout}\n"
                f"--- ppy (exit {got.returncode}) ---\n{got.stdout}\n--- ppy stderr ---\n{got.stderr}")
