"""The machine-code tier as processes see it: tiering, `ppy build --warm` and the
cache rules for machine code."""

import fcntl
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import communicate, spawn, trace_counts

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "31_torchrun"
SEED_LINE = "checksum=-2083.056718 outside=134 counts=[452, 3853, 11555, 16790, 16661, 11022, 3174, 359]\n"


@pytest.fixture
def example(tmp_path):
    shutil.copy(EXAMPLE / "features.ppy", tmp_path)
    return tmp_path


def _jit_file(cache_dir):
    found = list(Path(cache_dir).glob("features.*.ppyjit"))
    return found[0] if found else None


def test_a_warm_build_is_mapped_and_nothing_compiles(runner, example):
    warm = runner.ppy("build", "--warm", example)
    assert (warm.returncode, warm.stdout, warm.stderr) == (0, "", "")
    assert _jit_file(runner.cache_dir) is not None
    run = runner.ppy("run", "--trace", "features.ppy", cwd=example)
    assert run.stdout == SEED_LINE
    assert "jit: mapped machine code for 3 functions from" in run.stderr
    assert "__main__.standardize: jit (machine code mapped)" in run.stderr
    assert "jit: compiled" not in run.stderr
    # Only the bytecode entry and the machine code were ever built.
    builds = (runner.cache_dir / "build.log").read_text().splitlines()
    assert len(builds) == 2 and "reason=warm" in builds[1]


def test_hot_loops_compile_in_process_without_a_warm_cache(runner, example):
    run = runner.ppy("run", "--trace", "features.ppy", cwd=example)
    assert run.stdout == SEED_LINE
    assert "jit: compiled standardize (trigger: loop)" in run.stderr
    assert "jit: compiled bucketize (trigger: loop)" in run.stderr
    assert _jit_file(runner.cache_dir) is None


def test_jit_off_keeps_everything_on_the_interpreter(runner, example):
    runner.ppy("build", "--warm", example)
    run = runner.ppy("run", "--trace", "features.ppy", cwd=example, PPY_JIT="0")
    assert run.stdout == SEED_LINE
    assert "jit:" not in run.stderr
    assert "__main__.standardize: vm" in run.stderr


def test_machine_code_is_never_mapped_from_a_shared_folder(runner, example):
    runner.ppy("build", "--warm", example)
    runner.cache_dir.chmod(0o777)
    try:
        run = runner.ppy("run", "--trace", "features.ppy", cwd=example)
    finally:
        runner.cache_dir.chmod(0o755)
    assert run.stdout == SEED_LINE
    assert run.stderr.count("is shared (not owned by you, or writable by others)") == 1
    assert "jit: mapped" not in run.stderr
    assert "jit: compiled standardize" in run.stderr


def test_corrupt_machine_code_is_ignored(runner, example):
    runner.ppy("build", "--warm", example)
    path = _jit_file(runner.cache_dir)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    run = runner.ppy("run", "--trace", "features.ppy", cwd=example)
    assert run.stdout == SEED_LINE
    assert "not using" in run.stderr and "checksum mismatch" in run.stderr
    assert "jit: compiled standardize" in run.stderr


def test_machine_code_whose_header_strings_are_not_text_is_ignored(runner, example):
    from ppy import _ppy

    runner.ppy("build", "--warm", example)
    path = _jit_file(runner.cache_dir)
    data = bytearray(path.read_bytes())
    at = data.find(_ppy.JIT_TARGET.encode())
    assert at > 0
    data[at] = 0xFF  # no longer UTF-8; the checksum made to match, as a forger would
    body = bytes(data[:-8])
    path.write_bytes(body + int(_ppy.digest(body)[:16], 16).to_bytes(8, "little"))
    run = runner.ppy("run", "--trace", "features.ppy", cwd=example)
    assert run.stdout == SEED_LINE, run.stderr
    assert "not using" in run.stderr and "not UTF-8 text" in run.stderr
    assert "jit: compiled standardize" in run.stderr


SPIN = """\
def spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i % 7
    return total
"""

WAITER = """
import time, ppy, kernel
print(ppy.tier(kernel.spin), flush=True)
started = time.time()
while ppy.tier(kernel.spin) != "jit" and time.time() - started < 60:
    kernel.spin(20000)
print(ppy.tier(kernel.spin), flush=True)
"""


def test_a_rank_waits_on_the_interpreter_for_code_being_built_then_switches(runner, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "kernel.ppy").write_text(SPIN)
    # The bytecode entry exists; the machine code is "being built": its lock is held.
    assert runner.python("-c", "import ppy, kernel", cwd=project).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kernel.ppy").write_text(SPIN)
    other_cache = tmp_path / "other-cache"
    assert runner.ppy("build", "--warm", elsewhere, PPY_CACHE_DIR=str(other_cache)).returncode == 0
    [built] = other_cache.glob("kernel.*.ppyjit")
    # The same code under the name this project's entry gives it.
    entry = runner.entry(project / "kernel.ppy")
    target = entry.with_name(entry.name[:-len("ppyc")] + built.name.rsplit(".", 2)[1] + ".ppyjit")
    lock = os.open(str(target) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        waiter = spawn([sys.executable, "-c", WAITER], cwd=project, env=runner.env(PPY_TRACE="1"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert waiter.stdout.readline() == "vm\n"
        time.sleep(0.5)
        shutil.copy(built, str(target) + ".tmp")
        os.replace(str(target) + ".tmp", target)
        out, err = communicate(waiter, 60)
    finally:
        os.close(lock)
    assert out == "jit\n", err
    assert "is being built; interpreting until it appears" in err
    assert "(it appeared while running)" in err
    assert "jit: compiled" not in err


COUNTED = """\
from ppy import Buffer


def enumerated(xs: Buffer[float], start: int) -> float:
    total = 0.0
    for i, v in enumerate(xs, start):
        total += i * v
    return total


def zipped(xs: Buffer[float], ys: Buffer[int]) -> float:
    total = 0.0
    for a, b, k in zip(xs, ys, range(100, 0, -3)):
        total += a * b - k
    return total


def backwards(xs: Buffer[float]) -> float:
    total = 0.0
    for v in reversed(xs):
        total = total * 0.5 + v
    for k in reversed(range(len(xs), -5, -2)):
        total += k
    return total
"""

COUNTED_CALLS = """
import array, ppy, kernel
xs = array.array("d", [0.5 * k for k in range(50)])
ys = array.array("q", range(40))
print(kernel.enumerated(xs, 3), kernel.zipped(xs, ys), kernel.backwards(xs))
print(ppy.tier(kernel.enumerated), ppy.tier(kernel.zipped), ppy.tier(kernel.backwards))
"""


def test_enumerate_zip_and_reversed_loops_count_in_machine_code(runner, tmp_path):
    (tmp_path / "kernel.ppy").write_text(COUNTED)
    # The loops count: no iterator is made, nothing is called.
    listing = runner.ppy("dis", tmp_path / "kernel.ppy")
    assert listing.returncode == 0, listing.stderr
    for op in ("GET_ITER", "FOR_ITER", "CALL", "BOX_U"):
        assert op not in listing.stdout, listing.stdout
    assert listing.stdout.count("FORLOOP_INC") == 2 and "FORLOOP " in listing.stdout
    run = runner.python("-c", COUNTED_CALLS, cwd=tmp_path, PPY_JIT="eager")
    expected = runner.python("-c", COUNTED_CALLS.replace("ppy.tier", "str"), cwd=tmp_path, PPY_IMPORT="python")
    lines = run.stdout.splitlines()
    assert lines[0] == expected.stdout.splitlines()[0], run.stderr
    assert lines[1] == "jit jit jit", run.stderr


MANDELBROT = """
def escape(c: complex, limit: int) -> int:
    z = 0j
    for i in range(limit):
        z = z * z + c
        if abs(z) > 2.0:
            return i
    return limit


def quotient_sum(n: int) -> complex:
    s = 0j
    w = complex(0.5, -1.5)
    for k in range(1, n):
        s += (w * k + 1) / (k - 2j)
    return s
"""

MANDELBROT_CALLS = """
import ppy
import kernel
counts = [kernel.escape(complex(-2.0 + 0.05 * i, -1.0 + 0.1 * j), 60) for i in range(60) for j in range(21)]
print(sum(counts), kernel.quotient_sum(500))
print(ppy.tier(kernel.escape), ppy.tier(kernel.quotient_sum))
"""


def test_complex_loops_run_in_machine_code(runner, tmp_path):
    (tmp_path / "kernel.ppy").write_text(MANDELBROT)
    # Complex values live in pairs of float registers: no boxing in the loops.
    listing = runner.ppy("dis", tmp_path / "kernel.ppy")
    assert listing.returncode == 0, listing.stderr
    for op in ("MUL_C", "ADD_C", "ABS_C", "DIV_C"):
        assert op in listing.stdout, listing.stdout
    assert "BINARY_O" not in listing.stdout and "CALL" not in listing.stdout, listing.stdout
    run = runner.python("-c", MANDELBROT_CALLS, cwd=tmp_path, PPY_JIT="eager", PPY_TRACE="1")
    expected = runner.python("-c", MANDELBROT_CALLS.replace("ppy.tier", "str"), cwd=tmp_path, PPY_IMPORT="python")
    lines = run.stdout.splitlines()
    assert lines[0] == expected.stdout.splitlines()[0], run.stderr
    assert lines[1] == "jit jit", run.stderr
    # Machine code ran: the trace counts its entries.
    for name in ("kernel.escape", "kernel.quotient_sum"):
        counts = trace_counts(run.stderr, name)
        assert counts is not None and counts[1] > 0, (name, run.stderr[-2000:])


INLINED = """
from ppy import Buffer


def weight(i: int, j: int) -> float:
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)


def times(u: Buffer[float], out: Buffer[float], n: int) -> None:
    for i in range(n):
        acc: float = 0.0
        for j in range(n):
            acc += weight(i, j) * u[j]
        out[i] = acc
"""

INLINED_CALLS = """
import array, ppy, kernel
u = array.array("d", [1.0 / (k + 1) for k in range(60)])
out = array.array("d", bytes(8 * 60))
kernel.times(u, out, 60)
print(repr(sum(out)), repr(out[7]))
"""


@pytest.mark.parametrize("warm", [False, True], ids=["compiled", "mapped"])
def test_small_callees_run_in_place_of_their_calls(runner, tmp_path, warm):
    (tmp_path / "kernel.ppy").write_text(INLINED)
    if warm:
        build = runner.ppy("build", "--warm", tmp_path)
        assert build.returncode == 0, build.stderr
    run = runner.python("-c", INLINED_CALLS, cwd=tmp_path, PPY_JIT="eager", PPY_TRACE="1")
    expected = runner.python("-c", INLINED_CALLS, cwd=tmp_path, PPY_IMPORT="python")
    assert run.stdout == expected.stdout, run.stderr
    assert ("jit: mapped machine code" in run.stderr) == warm, run.stderr
    # 3,600 calls of weight ran, all but the first in the machine code of
    # times, which says so. The first call finds the name bound to weight
    # and notes it: the loop's guard left that iteration to the interpreter,
    # which entered machine code again at its back edge.
    times_calls, times_entries = trace_counts(run.stderr, "kernel.times")
    assert times_calls == 1 and times_entries == 2, run.stderr
    assert re.search(r"kernel\.times\s+1 side exits", run.stderr), run.stderr
    weight_calls, _ = trace_counts(run.stderr, "kernel.weight")
    assert weight_calls == 1, run.stderr
    section = run.stderr.split("summary: inlined:", 1)[1].splitlines()[1:]
    inlined = [line.split()[-1] for line in section if re.match(r"ppy trace:   \S+$", line)]
    assert inlined == ["kernel.weight"], run.stderr


SPECIALIZED = """
from ppy import Buffer


def interactions(out: Buffer[float], rows: int, cols: int) -> float:
    total: float = 0.0
    for r in range(rows):
        base: int = r * cols
        for i in range(cols):
            total += out[base + i] * out[base + (i + 1) % cols]
    return total
"""

SPECIALIZED_CALLS = """
import array, ppy, kernel
out = array.array("d", [((k * 37) % 101) / 7.0 - 5.0 for k in range(1600)])
print([kernel.interactions(out, 100, 16) for _ in range(4)])
print(kernel.interactions(out, 50, 32), kernel.interactions(out, 80, 20), kernel.interactions(out, 100, 16))
"""


def test_int_arguments_that_keep_one_value_get_a_specialization(runner, tmp_path):
    (tmp_path / "kernel.ppy").write_text(SPECIALIZED)
    # General code from the cache (entered at every call), the specialization
    # compiled in the process.
    build = runner.ppy("build", "--warm", tmp_path)
    assert build.returncode == 0, build.stderr
    run = runner.python("-c", SPECIALIZED_CALLS, cwd=tmp_path, PPY_TRACE="1")
    expected = runner.python("-c", SPECIALIZED_CALLS, cwd=tmp_path, PPY_IMPORT="python")
    assert run.stdout == expected.stdout, run.stderr
    # Specialized at the second call with the same values; the calls with
    # other values entered the general code.
    assert "jit: specialized interactions for rows=100, cols=16 (other values run the general code)" in run.stderr
    calls, entries = trace_counts(run.stderr, "kernel.interactions")
    assert calls == 7, run.stderr
    special = re.search(r"^ppy trace:\s+kernel\.interactions\s+(\d+) entries for rows=100, cols=16$", run.stderr, re.M)
    assert special is not None, run.stderr
    assert 0 < int(special.group(1)) < entries, run.stderr
    # PPY_JIT_SPECIALIZE=0 keeps to the general code.
    general = runner.python("-c", SPECIALIZED_CALLS, cwd=tmp_path, PPY_TRACE="1", PPY_JIT_SPECIALIZE="0")
    assert general.stdout == expected.stdout and "specialized" not in general.stderr, general.stderr


def test_dis_shows_a_specialization_and_its_guard(runner, tmp_path):
    (tmp_path / "kernel.ppy").write_text(SPECIALIZED)
    general = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "interactions")
    special = runner.ppy("dis", "--jit", "--value", "cols=16", tmp_path / "kernel.ppy", "interactions")
    assert general.returncode == 0 and special.returncode == 0, (general.stderr, special.stderr)
    assert "; specialized for cols=16: entered only when the frame holds exactly these values" in special.stdout
    assert "specialized" not in general.stdout
    # `% cols` divides in the general code (x86-64 idiv, AArch64 sdiv), masks
    # in the specialized one.
    int_division = re.compile(r"\b(idiv|sdiv)\b")
    assert int_division.search(general.stdout) and not int_division.search(special.stdout)
    # range(cols) with cols = 16 runs unrolled: the body's one multiply
    # appears once per iteration, and no back edge counts the iterations.
    # (The general code runs it partially unrolled: five copies.)
    multiply = re.compile(r"\b(v?mulsd|fmul)\b")
    assert len(multiply.findall(general.stdout)) < 16 <= len(multiply.findall(special.stdout)), special.stdout
    bad = runner.ppy("dis", "--jit", "--value", "out=3", tmp_path / "kernel.ppy", "interactions")
    assert bad.returncode == 2 and "no int parameter out that it never assigns" in bad.stderr
    bad = runner.ppy("dis", "--value", "cols=16", tmp_path / "kernel.ppy", "interactions")
    assert bad.returncode == 2 and "--value needs --jit" in bad.stderr
    bad = runner.ppy("dis", "--jit", "--value", "cols=x", tmp_path / "kernel.ppy", "interactions")
    assert bad.returncode == 2 and "--value takes NAME=INT, not 'cols=x'" in bad.stderr
    bad = runner.ppy("dis", "--jit", "--value", "cols=16", tmp_path / "kernel.ppy")
    assert bad.returncode == 2 and "--value needs FUNC" in bad.stderr


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 machine code")
def test_known_values_the_code_folds_are_not_moved_into_registers(runner, tmp_path):
    """In the cols=16 copy, `(i + 1) % cols` is known in each unrolled copy and
    its element's address takes it as an offset: the moves of the known value
    into registers that nothing reads are dropped (jit.cpp, DropDeadMoves),
    where the allocator had kept two per copy, each overwritten by the next."""
    (tmp_path / "kernel.ppy").write_text(SPECIALIZED)
    special = runner.ppy("dis", "--jit", "--value", "cols=16", tmp_path / "kernel.ppy", "interactions")
    assert special.returncode == 0, special.stderr
    lines = [line.strip() for line in special.stdout.splitlines() if line and not line.startswith((";", "."))]
    move = re.compile(r"^mov (\w+), ")
    for line, following in zip(lines, lines[1:]):
        first, second = move.match(line), move.match(following)
        overwritten = second and first and second.group(1) == first.group(1) and first.group(1) not in following.split(",", 1)[1]
        assert not overwritten, (line, following, special.stdout)
    run = runner.python("-c", SPECIALIZED_CALLS, cwd=tmp_path, PPY_JIT="eager")
    expected = runner.python("-c", SPECIALIZED_CALLS, cwd=tmp_path, PPY_IMPORT="python")
    assert run.returncode == 0 and run.stdout == expected.stdout, run.stderr


F32_DOT = """\
from ppy import Buffer, f32


def dot(a: Buffer[f32], b: Buffer[f32]) -> float:
    acc: float = 0.0
    for k in range(len(a)):
        acc += a[k] * b[k]
    return acc
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 machine code")
def test_f32_elements_convert_without_waiting_for_their_register(runner, tmp_path):
    """cvtss2sd writes only the low lane of its register: each conversion
    would wait for the register's last value. Under AVX the upper lane comes
    from a register cleared once in the prologue (one vxorpd in all, none in
    the loop); under SSE2 each conversion clears its register first. Both
    compute what Python does."""
    (tmp_path / "kernel.ppy").write_text(F32_DOT)
    sse2 = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "dot", PPY_JIT_ISA="sse2")
    assert sse2.returncode == 0, sse2.stderr
    conversions = len(re.findall(r"\bcvtss2sd xmm\d+, dword ptr", sse2.stdout))
    assert conversions >= 2 and len(re.findall(r"\bxorpd\b", sse2.stdout)) >= conversions, sse2.stdout
    native = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "dot")
    assert native.returncode == 0, native.stderr
    if "x86_64-avx" in native.stdout:
        assert len(re.findall(r"\bvcvtss2sd xmm\d+, xmm\d+, dword ptr", native.stdout)) >= 2, native.stdout
        assert len(re.findall(r"\bv?xorpd\b", native.stdout)) == 1, native.stdout
    calls = """
import array, ppy, kernel
a = array.array("f", [((k * 37) % 101) / 7.0 - 5.0 for k in range(1001)])
b = array.array("f", [((k * 11) % 23) / 3.0 - 2.5 for k in range(1001)])
print([kernel.dot(a, b) for _ in range(3)])
print(ppy.tier(kernel.dot))
"""
    expected = runner.python("-c", calls, cwd=tmp_path, PPY_IMPORT="python")
    for isa in ("", "sse2"):
        run = runner.python("-c", calls, cwd=tmp_path, PPY_JIT="eager", PPY_JIT_ISA=isa)
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines() == [expected.stdout.splitlines()[0], "jit"], (run.stdout, expected.stdout)


COUNTERS = """\
from ppy import Buffer, u8


def spaces(text: Buffer[u8]) -> int:
    count: int = 0
    for i in range(len(text)):
        if text[i] == 32:
            count += 1
    return count


def spaces_from(text: Buffer[u8], start: int) -> int:
    count: int = start
    for i in range(len(text)):
        if text[i] == 32:
            count += 1
    return count


def spaces_near_the_top(text: Buffer[u8]) -> int:
    count: int = 9223372036854775800
    for i in range(len(text)):
        if text[i] == 32:
            count += 1
    return count


def spaces_by_two(text: Buffer[u8]) -> int:
    count: int = 0
    for i in range(len(text)):
        if text[i] == 32:
            count += 2
    return count
"""

COUNTER_CALLS = """
import ppy, kernel
text = bytearray(b"a b  c   d" * 3)
for name in ("spaces", "spaces_near_the_top", "spaces_by_two"):
    try:
        print(name, getattr(kernel, name)(text))
    except OverflowError as error:
        print(name, "OverflowError", error)
for start in (0, 2**62, 2**63 - 10):
    try:
        print(start, kernel.spaces_from(text, start))
    except OverflowError as error:
        print(start, "OverflowError", error)
print(ppy.tier(kernel.spaces), ppy.tier(kernel.spaces_from))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 machine code")
def test_counters_that_only_count_by_one_from_a_known_value_need_no_overflow_check(runner, tmp_path):
    """`count += 1` on a local that only ever counts by one from a known value
    cannot get 2**62 past it in any run (codegen.h, FindCounters): no `jo`.
    Started from a parameter, from a known value past 2**61, or counting by two, it
    keeps its check, and overflows as the interpreter does."""
    (tmp_path / "kernel.ppy").write_text(COUNTERS)
    checks = {}
    for name in ("spaces", "spaces_from", "spaces_near_the_top", "spaces_by_two"):
        dis = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", name)
        assert dis.returncode == 0, dis.stderr
        checks[name] = len(re.findall(r"\bjo\b", dis.stdout))
    assert checks["spaces"] == 0 and all(checks[name] > 0 for name in checks if name != "spaces"), checks
    interpreted = runner.python("-c", COUNTER_CALLS, cwd=tmp_path, PPY_JIT="0")
    run = runner.python("-c", COUNTER_CALLS, cwd=tmp_path, PPY_JIT="eager")
    assert interpreted.returncode == 0 and run.returncode == 0, (interpreted.stderr, run.stderr)
    assert "spaces_near_the_top OverflowError" in run.stdout and "9223372036854775798 OverflowError" in run.stdout
    assert "spaces 18" in run.stdout and "spaces_by_two 36" in run.stdout, run.stdout
    assert run.stdout.splitlines()[:-1] == interpreted.stdout.splitlines()[:-1]
    assert run.stdout.splitlines()[-1] == "jit jit", run.stdout


BINNED = """\
from ppy import Buffer


def bucketize(values: Buffer[float], counts: Buffer[int], bins: int) -> int:
    outside: int = 0
    for i in range(len(values)):
        offset: float = values[i] * 2.0
        if offset < 0.0 or offset >= bins:
            outside += 1
        else:
            counts[int(offset)] += 1
    return outside


def diverted(values: Buffer[float], flags: Buffer[int], counts: Buffer[int], bins: int) -> int:
    outside: int = 0
    for i in range(len(values)):
        offset: float = values[i] * 2.0
        if offset < 0.0 or offset >= bins:
            outside += 1
        elif flags[i] != 0:
            outside += 2
        else:
            counts[int(offset)] += 1
    return outside
"""

BINNED_CALLS = """\
from array import array
import ppy, kernel
values = array("d", [0.25, 1.0, 3.5, -1.0, 9.0] * 200)
counts = array("q", [0] * 8)
print(kernel.bucketize(values, counts, 8), list(counts))
values[700] = float("nan")
try:
    kernel.bucketize(values, counts, 8)
except ValueError as error:
    print("ValueError", error, list(counts))
print(ppy.tier(kernel.bucketize))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 machine code")
def test_a_nan_leaves_at_the_test_that_lets_it_through_to_int(runner, tmp_path):
    """`if x < 0.0 or x >= bins: ... else: counts[int(x)] += 1` lets a NaN
    through to int(), which raises: the test sends a NaN to a side exit
    instead (codegen.h, FindExactConversions), and int() truncates with no
    check (no `cmp r, 1` after cvttsd2si). Where a branch between may take the
    NaN elsewhere, int() keeps its check. A NaN halfway through the loop
    leaves at the test and raises as Python does, after the same stores."""
    (tmp_path / "kernel.ppy").write_text(BINNED)
    checked = {}
    for name in ("bucketize", "diverted"):
        dis = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", name)
        assert dis.returncode == 0, dis.stderr
        lines = dis.stdout.splitlines()
        after = [lines[k + 1] for k, line in enumerate(lines[:-1]) if "cvttsd2si" in line]
        assert after, dis.stdout
        checked[name] = any(re.search(r"\bcmp \w+, 1$", line) for line in after)
    assert checked == {"bucketize": False, "diverted": True}, checked
    expected = runner.python("-c", BINNED_CALLS, cwd=tmp_path, PPY_IMPORT="python")
    run = runner.python("-c", BINNED_CALLS, cwd=tmp_path, PPY_JIT="eager", PPY_TRACE="1")
    assert expected.returncode == 0 and run.returncode == 0, (expected.stderr, run.stderr)
    assert run.stdout.splitlines()[:-1] == expected.stdout.splitlines()[:-1], (run.stdout, expected.stdout)
    assert "ValueError cannot convert float NaN to integer" in run.stdout and run.stdout.splitlines()[-1] == "jit"
    assert re.search(r"kernel\.bucketize\s+1 side exits \(last: line 8, at JNGE_FI\)", run.stderr), run.stderr


PARTIAL = """\
from ppy import Buffer


def scale(xs: Buffer[float], out: Buffer[float], n: int, k: float) -> None:
    for i in range(n):
        out[i] = xs[i] * k


def scale_positive(xs: Buffer[float], out: Buffer[float], n: int, k: float) -> None:
    for i in range(n):
        if xs[i] > 0.0:
            out[i] = xs[i] * k
"""


def test_dis_shows_inner_loops_partially_unrolled(runner, tmp_path):
    (tmp_path / "kernel.ppy").write_text(PARTIAL)
    multiply = re.compile(r"\b(v?mulsd|fmul)\b")
    # A straight-line body runs four iterations per pass, and the iterations a
    # chunk leaves over run the body alone: the multiply five times. A body
    # with a branch keeps one copy.
    straight = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "scale")
    branchy = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "scale_positive")
    assert straight.returncode == 0 and branchy.returncode == 0, (straight.stderr, branchy.stderr)
    assert len(multiply.findall(straight.stdout)) == 5, straight.stdout
    assert len(multiply.findall(branchy.stdout)) == 1, branchy.stdout


GUARDED_LOOPS = """\
from ppy import Buffer, u8


def strike(flags: Buffer[u8], start: int, n: int, step: int) -> int:
    j: int = start
    while j < n:
        flags[j] = 0
        j += step
    return j


def fill(flags: Buffer[u8], n: int) -> int:
    for i in range(n):
        flags[i] = 1
    return n
"""


def test_while_loops_and_fills_run_without_per_iteration_checks(runner, tmp_path):
    (tmp_path / "kernel.ppy").write_text(GUARDED_LOOPS)
    strike = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "strike")
    fill = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "fill")
    assert strike.returncode == 0 and fill.returncode == 0, (strike.stderr, fill.stderr)
    # The while loop's guard checks j >= 0 and n <= len(flags) once: no
    # unsigned bounds check (x86-64 jae, AArch64 b.hs) is left in the code.
    assert not re.search(r"\b(jae|b\.hs|b\.cs)\b", strike.stdout), strike.stdout
    # The fill is one memset through the helper table: no byte store at all.
    assert not re.search(r"\b(mov byte ptr|strb)\b", fill.stdout), fill.stdout
    calls = """
import ppy, kernel
flags = bytearray(50)
print(kernel.fill(flags, 50), sum(flags), kernel.strike(flags, 4, 50, 3), sum(flags))
print(ppy.tier(kernel.fill), ppy.tier(kernel.strike))
"""
    run = runner.python("-c", calls, cwd=tmp_path, PPY_JIT="eager")
    assert run.stdout.splitlines() == ["50 50 52 34", "jit jit"], run.stderr


NESTED_WHILE = """\
from ppy import Buffer, u8


def words(text: Buffer[u8]) -> int:
    count: int = 0
    i: int = 0
    n: int = len(text)
    while i < n:
        if text[i] == 32:
            i += 1
        else:
            i += 1
            while i < n and text[i] != 32:
                i += 1
            count += 1
    return count


def skipping(text: Buffer[u8]) -> int:
    count: int = 0
    i: int = 0
    n: int = len(text)
    while i < n:
        if text[i] == 32:
            i += 1
            continue
        while i < n and text[i] != 32:
            i += 1
        count += 1
    return count
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 machine code")
def test_while_loops_with_loops_inside_run_in_chunks(runner, tmp_path):
    """A tokenizer's `while i < n:` around its words' loops adds to i on every
    way around, so it runs in chunks (FindNestedWhileChunks): no tick counted
    per iteration (`sub r, 1` then `jg`), as its inner loop. With a
    `continue` (a way around that is not the closing one) it counts them."""
    (tmp_path / "kernel.ppy").write_text(NESTED_WHILE)
    tick = re.compile(r"\bsub \w+, 1\n(short )?jg\b")
    ticks = {}
    for name in ("words", "skipping"):
        dis = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", name)
        assert dis.returncode == 0, dis.stderr
        ticks[name] = len(tick.findall(dis.stdout))
    assert ticks["words"] == 0 and ticks["skipping"] > 0, ticks
    calls = """
import array, ppy, kernel
text = array.array("B", b"ab  cde f " * 3000 + b"x" * 20000)
print(kernel.words(text), kernel.skipping(text), ppy.tier(kernel.words))
"""
    run = runner.python("-c", calls, cwd=tmp_path, PPY_JIT="eager")
    assert run.stdout.splitlines() == ["9001 9001 jit"], run.stderr


STENCIL = """\
from ppy import Buffer


def sweep(src: Buffer[float, 2], dst: Buffer[float, 2]) -> None:
    for i in range(1, src.shape[0] - 1):
        for j in range(1, src.shape[1] - 1):
            dst[i, j] = 0.25 * (src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1])
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86-64 machine code")
def test_elements_are_operands_of_the_arithmetic_that_reads_them(runner, tmp_path):
    """A stencil's sum of four elements is gcc's: one load, then three adds
    that take their element from memory (FindLoadsIntoArithmetic), under
    AVX and under SSE2, and it computes what Python does."""
    (tmp_path / "kernel.ppy").write_text(STENCIL)
    operand = re.compile(r"\bv?addsd xmm\d+, (xmm\d+, )?qword ptr \[")
    for isa in ("", "sse2"):
        dis = runner.ppy("dis", "--jit", tmp_path / "kernel.ppy", "sweep", PPY_JIT_ISA=isa)
        assert dis.returncode == 0, dis.stderr
        assert len(operand.findall(dis.stdout)) >= 3, dis.stdout
    calls = """
import ppy, kernel
from array import array
a = array("d", [float((k * 7) % 13) for k in range(48)])
b = array("d", [0.0] * 48)
grid_a = memoryview(a).cast("B").cast("d", (6, 8))
grid_b = memoryview(b).cast("B").cast("d", (6, 8))
for _ in range(3):
    kernel.sweep(grid_a, grid_b)
    kernel.sweep(grid_b, grid_a)
print(list(a), list(b))
print(ppy.tier(kernel.sweep))
"""
    expected = runner.python("-c", calls, cwd=tmp_path, PPY_IMPORT="python")
    run = runner.python("-c", calls, cwd=tmp_path, PPY_JIT="eager")
    assert run.returncode == 0 and expected.returncode == 0, (run.stderr, expected.stderr)
    assert run.stdout.splitlines()[0] == expected.stdout.splitlines()[0]
    assert run.stdout.splitlines()[1] == "jit", run.stderr


NEVER_ENTERED = """\
import math
import ppy


@ppy.native
def norm(p):
    return math.sqrt(p[0] * p[0] + p[1] * p[1])


@ppy.native
def total(points):
    s = 0.0
    for p in points:
        s = s + norm(p)
    return s


@ppy.native
def counted(n: int) -> int:
    t = 0
    for i in range(n):
        t += i * i
    return t
"""


def test_no_machine_code_for_a_function_it_could_never_enter(runner, tmp_path):
    """norm starts with an object instruction and has no loop; total's only
    loop is object code: machine code for either would never be entered, so
    none is made, and neither the trace nor ppy dis --jit pretends otherwise
    (issue 13). counted, beside them, is compiled and entered."""
    (tmp_path / "shapes.ppy").write_text(NEVER_ENTERED)
    script = "import ppy, shapes\nprint(shapes.total([(3.0, 4.0)] * 50), shapes.counted(10))\n"
    run = runner.python("-c", script, cwd=tmp_path, PPY_TRACE="1", PPY_JIT="eager")
    assert run.returncode == 0 and run.stdout == "250.0 285\n", run.stderr
    for name in ("norm", "total"):
        assert f"jit: {name} stays on the interpreter: machine code would never run" in run.stderr, run.stderr
        assert f"jit: compiled {name}" not in run.stderr
        assert trace_counts(run.stderr, f"shapes.{name}")[1] == 0
    assert "jit: compiled counted" in run.stderr and trace_counts(run.stderr, "shapes.counted")[1] > 0
    dis = runner.ppy("dis", "--jit", tmp_path / "shapes.ppy")
    assert dis.returncode == 0, dis.stderr
    assert "machine code of norm (" in dis.stdout and "  none: machine code would never run" in dis.stdout
    assert dis.stdout.count("  none: ") == 2, dis.stdout


SHORT_CALLS = """\
def labelled(o, n: int) -> int:
    name = str(o)
    t = 0
    for i in range(n):
        t += i * i % 7
    return t + len(name)


def few(n: int) -> int:
    t = 0
    for i in range(n):
        t += i ^ (i >> 3)
    return t
"""

SHORT_CALLS_SCRIPT = """\
import ppy, short
a = sum(short.labelled(k, 1000) for k in range(300))
b = sum(short.few(3000) for k in range(20))
print(a, b)
"""


def test_short_calls_enter_machine_code_at_their_loops(runner, tmp_path):
    """labelled starts with object code, so its machine code is entered at a
    loop; each call loops 1,000 times, fewer than a frame's check interval,
    yet every call after it is compiled enters machine code at its first back
    edge. few is called 20 times (never hot by its calls), 3,000 back edges
    each: hot by their sum, so compiled for its loops."""
    (tmp_path / "short.ppy").write_text(SHORT_CALLS)
    run = runner.python("-c", SHORT_CALLS_SCRIPT, cwd=tmp_path, PPY_TRACE="1")
    expected = runner.python("-c", SHORT_CALLS_SCRIPT, cwd=tmp_path, PPY_IMPORT="python")
    assert run.returncode == 0 and run.stdout == expected.stdout, run.stderr
    calls, entries = trace_counts(run.stderr, "short.labelled")
    assert calls == 300 and entries >= 150, run.stderr
    assert "jit: compiled few (trigger: loop)" in run.stderr, run.stderr
    calls, entries = trace_counts(run.stderr, "short.few")
    assert calls == 20 and 0 < entries < 20, run.stderr


LEAVING_CALLS = """\
def same(a, b):
    return a == b


def check(s: str, t: str, n: int) -> int:
    i = 1
    while i <= n:
        if same(s[i], t[i + 1]):
            return 7
        i = i + 1
    return 0


def total(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * 3
    return s
"""

LEAVING_CALLS_SCRIPT = """\
import ppy, leaving
print(sum(leaving.check("abcd", "xbbd", 1) for _ in range(3000)))
print(leaving.check("abcdef", "zzzzzzz", 0), leaving.check("abcd", "xbbd", 2))
print(sum(leaving.total(k % 7) for k in range(3000)))
"""


def test_calls_stop_entering_machine_code_that_leaves_at_once(runner, tmp_path):
    """check's machine code, entered at its start, leaves at once on every
    call (its loop calls a Python function): after 256 such entries calls
    stop entering it there, and --trace says so. total's machine code runs
    its calls to the end: it keeps being entered."""
    (tmp_path / "leaving.ppy").write_text(LEAVING_CALLS)
    run = runner.python("-c", LEAVING_CALLS_SCRIPT, cwd=tmp_path, PPY_TRACE="1")
    expected = runner.python("-c", LEAVING_CALLS_SCRIPT, cwd=tmp_path, PPY_IMPORT="python")
    assert run.returncode == 0 and run.stdout == expected.stdout, run.stderr
    calls, entries = trace_counts(run.stderr, "leaving.check")
    assert calls == 3002 and 256 <= entries < 400, run.stderr
    assert re.search(r"leaving\.check\s+\d+ side exits \(last: line 8, at LOAD_GLOBAL\); calls no longer enter it "
                     r"at the start", run.stderr), run.stderr
    calls, entries = trace_counts(run.stderr, "leaving.total")
    assert calls == 3000 and entries > 2500, run.stderr
    assert "leaving.total" not in run.stderr.split("summary: side exits")[-1].split("summary: unboxed")[0], run.stderr


SMALL_CALLS = """\
def step(x: int, y: int) -> int:
    return x * y + 1


def ratio(x: float, y: float) -> float:
    return x / y


def grow(x: int) -> int:
    return x * x


def clip(x: int) -> int:
    if x > 5:
        return 5
    return x
"""

SMALL_CALLS_SCRIPT = """\
import ppy, small
print(sum(small.step(i, 3) for i in range(500)))
print(sum(small.clip(i % 9) for i in range(500)))
print(sum(small.ratio(float(i), 4.0) for i in range(500)))
for y in (2.0, 0.0):
    try:
        print(small.ratio(1.0, y))
    except ZeroDivisionError as e:
        import traceback
        print("ZeroDivisionError", e, traceback.extract_tb(e.__traceback__)[-1].line)
print(sum(small.grow(i) for i in range(500)), small.grow(2**40), small.grow(-2**33))
"""


def test_small_functions_called_from_python_run_machine_code_directly(runner, tmp_path):
    """A compiled function with a scalar frame, called from Python, runs its
    machine code from its first instruction with no interpreter frame
    (vm/interpreter.cpp, RunMachineCodeOnFrame): every call enters machine
    code; one that raises there (a division by zero) gets its .ppy line in
    the traceback; one whose int outgrows 64 bits deoptimizes to Python and
    returns CPython's int, as on the interpreter. (Functions this small,
    whose calls from Python would otherwise run their Python function, are
    compiled as Functions: PPY_OBJECT_CODE=compile.)"""
    (tmp_path / "small.ppy").write_text(SMALL_CALLS)
    expected = runner.python("-c", SMALL_CALLS_SCRIPT, cwd=tmp_path, PPY_IMPORT="python")
    assert expected.returncode == 0, expected.stderr
    for env in ({}, {"PPY_JIT": "eager"}, {"PPY_JIT": "0"}):
        run = runner.python("-c", SMALL_CALLS_SCRIPT, cwd=tmp_path, PPY_TRACE="1", PPY_OBJECT_CODE="compile", **env)
        assert run.returncode == 0 and run.stdout == expected.stdout, (env, run.stderr)
        assert "ZeroDivisionError float division by zero return x / y" in run.stdout
        if env.get("PPY_JIT") == "0":
            continue
        # Hot after 100 calls by default: the 400 after it all enter machine code.
        calls, entries = trace_counts(run.stderr, "small.step")
        assert calls == 500 and entries >= 400, run.stderr
        calls, entries = trace_counts(run.stderr, "small.ratio")
        assert calls == 502 and entries >= 400, run.stderr


ONE_OPERATION = """\
def sq(x: float) -> float:
    return x * x


def sum_squares(n: int) -> float:
    s: float = 0.0
    for i in range(n):
        s += sq(float(i))
    return s
"""

ONE_OPERATION_SCRIPT = """\
import ppy, one
print(type(one.sq).__name__, ppy.tier(one.sq), ppy.tier(one.sum_squares) in ("vm", "jit"))
print(sum(one.sq(float(i)) for i in range(300)), one.sq(3), one.sq(True))
for round in range(300):
    total = one.sum_squares(100)
print(total)
kept = one.sq.__code__
one.sq.__code__ = (lambda x: -x).__code__
print(one.sq(2.0), one.sum_squares(100))
one.sq.__code__ = kept
print(one.sum_squares(100))
"""


def test_a_function_of_two_specialized_operations_is_python_to_python_callers(runner, tmp_path):
    """A def whose body is at most two operations CPython specializes, or one
    other (compiler/compile.cpp, SmallCallAsPython), stays a Python function for calls from Python, which
    CPython makes faster than a call into compiled code; the module's
    compiled functions still call its compiled code (counted in the trace),
    on every tier, machine code that inlined it included, and see a new
    __code__ as CPython's callers do. `ppy check -v` and the trace say so;
    @ppy.native keeps the Function."""
    (tmp_path / "one.ppy").write_text(ONE_OPERATION)
    expected = runner.python("-c", ONE_OPERATION_SCRIPT, cwd=tmp_path, PPY_IMPORT="python")
    assert expected.returncode == 0, expected.stderr
    assert expected.stdout.startswith("function python False\n"), expected.stdout
    for env in ({}, {"PPY_JIT": "eager"}, {"PPY_JIT": "0"}):
        run = runner.python("-c", ONE_OPERATION_SCRIPT, cwd=tmp_path, PPY_TRACE="1", **env)
        assert run.returncode == 0, (env, run.stderr)
        assert run.stdout == expected.stdout.replace("function python False", "function python True"), (env, run.stderr)
        assert "one.sq: vm (machine code once hot); called from Python: python (at most two operations CPython specializes" in run.stderr \
            or "one.sq: jit (machine code mapped); called from Python: python (at most two operations CPython specializes" in run.stderr, \
            run.stderr
        # sum_squares's calls of sq ran the compiled code (or inlined it, then uncounted).
        calls, _ = trace_counts(run.stderr, "one.sum_squares")
        assert calls == 302, run.stderr
        counted = trace_counts(run.stderr, "one.sq")
        assert env.get("PPY_JIT") == "eager" or (counted is not None and counted[0] > 0), run.stderr
    check = runner.ppy("check", "-v", "one.ppy", cwd=tmp_path)
    assert "sq: vm; called from Python: python (at most two operations CPython specializes" in check.stdout, check.stdout
    (tmp_path / "one.ppy").write_text("import ppy\n\n@ppy.native\n" + ONE_OPERATION)
    run = runner.python("-c", "import ppy, one; print(ppy.tier(one.sq))", cwd=tmp_path)
    assert run.stdout == "vm\n", run.stderr


def test_python_entry_binds_a_python_function_once(runner, tmp_path):
    """The decorator the build gives a small def (python_entry) takes a Python
    function, once: compiled callers and machine code rely on the function
    and the code it recorded."""
    (tmp_path / "one.ppy").write_text(ONE_OPERATION)
    script = textwrap.dedent("""\
        import ppy, one
        index = one.__ppy_module__.function_names().index("sq")
        for argument in (len, one.sq):
            try:
                one.__ppy_module__.python_entry(index)(argument)
            except (TypeError, RuntimeError) as e:
                print(type(e).__name__, e)
        print(one.sum_squares(10))
        """)
    run = runner.python("-c", script, cwd=tmp_path)
    assert run.stdout.splitlines() == ["TypeError ppy: python_entry() decorates a Python function",
                                       "RuntimeError ppy: python_entry() binds a def once", "285.0"], run.stderr
