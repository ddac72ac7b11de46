"""The kernel suite: ten kernels of different shapes, each run by CPython, ppy's
interpreter, ppy's JIT, C (gcc -O2, a shared library through ctypes), numba
@njit and Cython (typed memoryviews, bounds checks on and off), side by side in
one run.

    python benchmarks/suite.py [--size small|default|large] [--rounds R] [--repeats K]
                               [--kernels a,b] [--systems a,b] [--callgrind] [--chart PNG] [--no-install]

Every system runs in its own process (benchmarks/suite/harness.py, one process
per system and round, running every kernel), in R interleaved rounds, so that
machine noise falls on every system alike. Before any time is reported, every
system must print the same result text for every kernel (the return value, and
a digest of every buffer the kernel wrote): the suite stops at the first
disagreement. A figure is the median over rounds of each process's median of K
timed calls (after two untimed calls, for numba's cache load and ppy's value
specialization, which follows at the second call; CPython and the ppy
interpreter make a single timed call per process instead).

  CPython         the kernel's .ppy file as plain Python (PPY_IMPORT=python)
  ppy interp      PPY_JIT=0
  ppy JIT         machine code mapped from a warm cache (ppy build --warm)
  C -O2           <kernel>.c, gcc -O2 -ffp-contract=off, ctypes
  numba           <kernel>_numba.py, @njit(cache=True), cache warmed first
  Cython          <kernel>_cy.pyx, typed memoryviews, default directives
  Cython unchecked  the same with boundscheck=False, wraparound=False

numba, Cython and matplotlib are benchmark-only extras: when one is missing,
this command installs the pinned version below with pip (--no-install skips
the system, or the chart, instead). They are never dependencies of ppy.

--callgrind (where valgrind exists) also counts the instructions of one call of
each kernel in each system (the process runs under callgrind, which counts only
inside the call: see harness.py), and prints them as a second table.
"""

import argparse
import glob
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "suite")
sys.path.insert(0, SUITE)

import build  # noqa: E402
import harness  # noqa: E402

EXTRAS = {"numba": "numba==0.68.1", "Cython": "cython==3.3.1", "matplotlib": "matplotlib==3.11.2"}

# name, harness system, environment, label in the table
SYSTEMS = [
    ("c", "c", {}, "C -O2"),
    ("jit", "jit", {}, "ppy JIT"),
    ("numba", "numba", {}, "numba"),
    ("cython-unchecked", "cython-unchecked", {}, "Cython unchecked"),
    ("cython", "cython", {}, "Cython"),
    ("interp", "interp", {"PPY_JIT": "0"}, "ppy interp"),
    ("python", "python", {"PPY_IMPORT": "python"}, "CPython"),
]


def importable(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, timeout=120).returncode == 0


def ensure(module, install):
    """True when `module` imports, after installing its pinned version if allowed."""
    if importable(module):
        return True
    if not install:
        print(f"suite: {module} is not installed (--no-install): skipping it", flush=True)
        return False
    print(f"suite: installing the benchmark-only extra {EXTRAS[module]}", flush=True)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", EXTRAS[module]], timeout=900)
    if done.returncode != 0 or not importable(module):
        print(f"suite: could not install {EXTRAS[module]}: skipping {module}", flush=True)
        return False
    return True


def run_system(system, env, size, repeats, kernels, timeout, prefix=()):
    command = [*prefix, sys.executable, os.path.join(SUITE, "harness.py"), system, size, str(repeats),
               ",".join(kernels)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"suite: {system} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def callgrind_counts(system, env, size, kernels, region, scratch, timeout):
    """Instructions per kernel call, under callgrind, counted inside suite_region only
    (one numbered dump per kernel, in the order the kernels ran)."""
    out = os.path.join(scratch, f"callgrind-{system}")
    os.makedirs(out)
    prefix = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--smc-check=all-non-file",
              f"--callgrind-out-file={out}/cg.out"]
    env = dict(env, SUITE_CALLGRIND="1", SUITE_REGION=region)
    run_system(system, env, size, 1, kernels, timeout, prefix)
    dumps = []
    for path in glob.glob(os.path.join(out, "cg.out*")):
        with open(path) as f:
            text = f.read()
        part = re.search(r"^part: (\d+)", text, re.M)
        total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if part and total and int(part.group(1)) <= len(kernels):
            dumps.append((int(part.group(1)), int(total.group(1))))
    dumps.sort()
    return {kernel: count for kernel, (_, count) in zip(kernels, dumps)}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def fmt_ms(ms):
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}" if ms < 1000 else f"{ms:.0f}"


def print_table(kernels, systems, figures, c_name):
    labels = {name: label for name, _, _, label in SYSTEMS}
    width = max(len(labels[s]) for s in systems)
    print(f"  {'kernel':14s} " + " ".join(f"{labels[s]:>{max(width, 16)}s}" for s in systems))
    for kernel in kernels:
        cells = []
        for s in systems:
            ms = figures[s][kernel]
            cell = f"{fmt_ms(ms)} ms"
            if c_name in systems and s != c_name:
                cell += f" {ms / figures[c_name][kernel]:5.2f}x"
            cells.append(f"{cell:>{max(width, 16)}s}")
        print(f"  {kernel:14s} " + " ".join(cells))


def chart(path, kernels, systems, figures, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {name: label for name, _, _, label in SYSTEMS}
    fig, ax = plt.subplots(figsize=(13, 5.5))
    width = 0.8 / len(systems)
    for n, s in enumerate(systems):
        ratios = [figures[s][k] / figures["c"][k] for k in kernels]
        ax.bar([i + (n - (len(systems) - 1) / 2) * width for i in range(len(kernels))], ratios, width,
               label=labels[s])
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(kernels)))
    ax.set_xticklabels(kernels, rotation=20)
    ax.set_ylabel("time relative to C -O2 (log scale, lower is faster)")
    ax.set_title(title, fontsize=10)
    ax.legend(ncol=4, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=harness.SIZES, default="default")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of processes")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per process (compiled systems)")
    parser.add_argument("--kernels", default=",".join(harness.KERNELS))
    parser.add_argument("--systems", default=",".join(s[0] for s in SYSTEMS))
    parser.add_argument("--callgrind", action="store_true", help="also count instructions per call (valgrind)")
    parser.add_argument("--callgrind-systems", default=None,
                        help="systems to count under --callgrind (default: all; CPython takes long)")
    parser.add_argument("--chart", default="suite.png", help="where to write the bar chart (PNG)")
    parser.add_argument("--no-install", action="store_true", help="skip a missing numba/Cython/matplotlib")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds allowed per process")
    args = parser.parse_args()

    kernels = args.kernels.split(",")
    wanted = args.systems.split(",")
    for k in kernels:
        if k not in harness.SPECS:
            sys.exit(f"suite: unknown kernel {k} (known: {', '.join(harness.KERNELS)})")
    install = not args.no_install
    if "numba" in wanted and not ensure("numba", install):
        wanted.remove("numba")
    if any(s.startswith("cython") for s in wanted) and not ensure("Cython", install):
        wanted = [s for s in wanted if not s.startswith("cython")]
    can_chart = bool(args.chart) and ensure("matplotlib", install)
    systems = [s for s in SYSTEMS if s[0] in wanted]
    names = [s[0] for s in systems]

    scratch = tempfile.mkdtemp(prefix="ppy-suite-")
    try:
        base = dict(os.environ, SUITE_BUILD=scratch, PPY_CACHE_DIR=os.path.join(scratch, "ppy-cache"),
                    NUMBA_CACHE_DIR=os.path.join(scratch, "numba-cache"), PPY_QUIET="1")
        for key in ("PPY_IMPORT", "PPY_JIT", "PPY_TRACE"):
            base.pop(key, None)
        print(f"suite: building (gcc -O2{', Cython' if any(n.startswith('cython') for n in names) else ''}"
              f"{', ppy build --warm' if 'jit' in names else ''}) ...", flush=True)
        if "c" in names:
            build.build_c(kernels, scratch)
        variants = [n for n in names if n.startswith("cython")]
        if variants:
            build.build_cython(kernels, scratch, ["cython-checked" if v == "cython" else v for v in variants])
        if "jit" in names:
            subprocess.run([sys.executable, "-m", "ppy", "build", "--warm", SUITE], env=base, check=True,
                           timeout=args.timeout)
        if "numba" in names:  # compile into numba's cache, untimed
            run_system("numba", base, "small", 0, kernels, args.timeout)

        expected_tier = {"jit": "jit", "interp": "vm", "python": "python"}
        reference = {}
        samples = {n: {k: [] for k in kernels} for n in names}
        for round_ in range(args.rounds):
            for name, system, extra, label in systems:
                slow = system in harness.SLOW_SYSTEMS
                results = run_system(system, dict(base, **extra), args.size, 1 if slow else args.repeats, kernels,
                                     args.timeout)
                for result in results:
                    kernel = result["kernel"]
                    if kernel not in reference:
                        reference[kernel] = (result["output"], label)
                    elif result["output"] != reference[kernel][0]:
                        sys.exit(f"suite: {kernel}: {label} prints\n  {result['output']}\nbut {reference[kernel][1]}"
                                 f" printed\n  {reference[kernel][0]}")
                    if system in expected_tier and result["tier"] != expected_tier[system]:
                        sys.exit(f"suite: {kernel}: {label} ran on tier {result['tier']!r}, "
                                 f"not {expected_tier[system]!r}")
                    samples[name][kernel].append(result["median_ms"])
            print(f"suite: round {round_ + 1} of {args.rounds} done", flush=True)

        counts = {}
        if args.callgrind:
            if shutil.which("valgrind") is None:
                print("suite: --callgrind: valgrind is not installed; no instruction counts")
            else:
                region = build.build_region(scratch)
                chosen = args.callgrind_systems.split(",") if args.callgrind_systems else names
                if region is None:
                    print("suite: --callgrind: valgrind/callgrind.h is missing; no instruction counts")
                    chosen = []
                for name, system, extra, label in systems:
                    if name not in chosen:
                        continue
                    print(f"suite: counting {label} under callgrind ...", flush=True)
                    counts[name] = callgrind_counts(system, dict(base, **extra), args.size, kernels, region,
                                                    scratch, args.timeout * 10)

        figures = {n: {k: statistics.median(samples[n][k]) for k in kernels} for n in names}
        print()
        print(f"Kernel suite, size {args.size}: median of {args.rounds} rounds x {args.repeats} calls "
              f"(CPython and ppy interp: 1 call per round); ratio to C -O2")
        print(f"CPU: {cpu_model()}; Python {platform.python_version()}; every system printed the same results:")
        for k in kernels:
            print(f"  {k:14s} {reference[k][0]}")
        print()
        print_table(kernels, names, figures, "c")
        if "c" in names:
            for other in ("jit", "numba"):
                if other in names:
                    ratios = [figures[other][k] / figures["c"][k] for k in kernels]
                    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
                    print(f"  {dict((s[0], s[3]) for s in SYSTEMS)[other]}: geometric mean {geo:.2f}x C; "
                          f"at or below 1.1x C on {sum(r <= 1.1 for r in ratios)} of {len(kernels)}")
        if "jit" in names and "numba" in names:
            ahead = [k for k in kernels if figures["jit"][k] < figures["numba"][k]]
            print(f"  ppy JIT ahead of numba on {len(ahead)} of {len(kernels)}: {', '.join(ahead) or '-'}")
        if counts:
            print()
            print(f"Instructions per call (callgrind, millions; one call after two untimed ones for the compiled "
                  f"systems), size {args.size}")
            labels = {s[0]: s[3] for s in SYSTEMS}
            print(f"  {'kernel':14s} " + " ".join(f"{labels[n]:>16s}" for n in names if n in counts))
            for k in kernels:
                cells = []
                for n in (n for n in names if n in counts):
                    value = counts[n].get(k)
                    cell = "-" if value is None else f"{value / 1e6:.2f}M"
                    if value is not None and "c" in counts and counts["c"].get(k) and n != "c":
                        cell += f" {value / counts['c'][k]:5.2f}x"
                    cells.append(f"{cell:>16s}")
                print(f"  {k:14s} " + " ".join(cells))
        if can_chart and "c" in names:
            chart(args.chart, kernels, names, figures,
                  f"ppy kernel suite ({args.size}), time relative to C -O2; {cpu_model()}")
            print(f"\nchart: {args.chart}")
        elif args.chart:
            print("\nchart: skipped (matplotlib missing, or C not among the systems)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
