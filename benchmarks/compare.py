"""Side-by-side timing of the features kernel (standardize + bucketize, 20,000 x 16).

    python benchmarks/compare.py [--repeats N] [--rounds R]

Every system runs in its own process, in this one run, on the same inputs, and
their outputs must agree before any time is reported:

  CPython         the same .ppy file as plain Python (PPY_IMPORT=python)
  ppy interpreter PPY_JIT=0
  ppy JIT         machine code mapped from a warm cache (ppy build --warm)
  C               the same loops in C (kernels/features.c), gcc -O2, no bounds checks
  numba           the same loops under @njit (kernels/features_numba.py), if installed

The processes run in R interleaved rounds, so that machine noise falls on every
system alike; each figure is the median over all rounds of the per-process
medians, and "best" is the fastest per-process median (on the shared VMs of this
project a process's speed is bimodal: the native code of some processes runs at
about half speed for reasons outside the program, so both are worth reading). Also measured: ppy's JIT compile time for features.ppy, the time to map
its machine code from a warm cache, and numba's first-call compile and cache load.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLE = os.path.join(ROOT, "examples", "31_torchrun")
TIMER = os.path.join(HERE, "kernels", "time_features.py")


def run(system, env_overrides, repeats):
    env = dict(os.environ, REPEATS=str(repeats), PPY_QUIET="1")
    env.update(env_overrides)
    result = subprocess.run([sys.executable, TIMER, system], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{system} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def have_numba():
    return subprocess.run([sys.executable, "-c", "import numba"], capture_output=True).returncode == 0


def jit_costs(cache):
    """(milliseconds to compile features.ppy's functions, milliseconds to map them)."""
    env = dict(os.environ, PPY_CACHE_DIR=cache, PPY_TRACE="1", PPY_JIT="eager")
    scratch = tempfile.mkdtemp()
    shutil.copy(os.path.join(EXAMPLE, "features.ppy"), scratch)
    traced = subprocess.run([sys.executable, "-m", "ppy", "run", "features.ppy"], cwd=scratch, env=env,
                            capture_output=True, text=True, check=True)
    compiled = sum(float(ms) for ms in re.findall(r"jit: compiled .* in ([0-9.]+) ms", traced.stderr))
    env.pop("PPY_JIT")
    subprocess.run([sys.executable, "-m", "ppy", "build", "--warm", scratch], env=env, check=True)
    mapped = subprocess.run([sys.executable, "-m", "ppy", "run", "features.ppy"], cwd=scratch, env=env,
                            capture_output=True, text=True, check=True)
    load = float(re.search(r"jit: mapped .* in ([0-9.]+) ms", mapped.stderr).group(1))
    shutil.rmtree(scratch)
    return compiled, load


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=9, help="timed runs per process")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of processes")
    args = parser.parse_args()

    cache = tempfile.mkdtemp(prefix="ppy-bench-")
    numba_cache = tempfile.mkdtemp(prefix="numba-bench-")
    os.environ["PPY_CACHE_DIR"] = cache
    subprocess.run([sys.executable, "-m", "ppy", "build", "--warm", EXAMPLE], check=True)

    systems = [
        ("CPython 3.11 (PPY_IMPORT=python)", "ppy", {"PPY_IMPORT": "python"}),
        ("ppy interpreter (PPY_JIT=0)", "ppy", {"PPY_JIT": "0"}),
        ("ppy JIT (warm cache)", "ppy", {}),
        ("C, gcc -O2", "c", {}),
    ]
    numba_first = numba_load = None
    if have_numba():
        first = run("numba", {"NUMBA_CACHE_DIR": numba_cache}, 1)
        numba_first = first["import_ms"] + first["first_call_ms"]
        systems.append(("numba @njit", "numba", {"NUMBA_CACHE_DIR": numba_cache}))

    medians = {name: [] for name, _, _ in systems}
    reference = None
    for _ in range(args.rounds):
        for name, system, env in systems:
            result = run(system, env, args.repeats)
            outputs = (result["checksum"], result["outside"], result["counts"])
            if reference is None:
                reference = outputs
            elif outputs != reference:
                sys.exit(f"{name} disagrees: {outputs} vs {reference}")
            medians[name].append(result["median_ms"])
            if system == "numba":
                numba_load = result["import_ms"] + result["first_call_ms"]
    compile_ms, load_ms = jit_costs(tempfile.mkdtemp(prefix="ppy-jitcost-"))

    figures = {name: statistics.median(values) for name, values in medians.items()}
    cpython = figures["CPython 3.11 (PPY_IMPORT=python)"]
    c = figures["C, gcc -O2"]
    print(f"features kernel, 20,000 x 16: median of {args.rounds} rounds x {args.repeats} runs "
          f"(checksum {reference[0]}, outside {reference[1]})")
    best = {name: min(values) for name, values in medians.items()}
    print(f"  {'system':36s} {'median':>10s} {'vs C':>8s} {'vs CPython':>11s} {'best':>10s} {'vs C':>8s}")
    for name, _, _ in systems:
        ms = figures[name]
        print(f"  {name:36s} {ms:8.2f} ms {ms / c:7.2f}x {cpython / ms:10.1f}x "
              f"{best[name]:7.2f} ms {best[name] / best['C, gcc -O2']:7.2f}x")
    print(f"  ppy JIT compile of features.ppy: {compile_ms:.2f} ms; mapping it from a warm cache: {load_ms:.2f} ms")
    if numba_first is not None:
        print(f"  numba first call (compile): {numba_first:.0f} ms; loading its cache: {numba_load:.0f} ms")
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(numba_cache, ignore_errors=True)


if __name__ == "__main__":
    main()
