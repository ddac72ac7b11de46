"""Parallel kernels (issue 15): `@ppy.nogil` from two Python threads, and `ppy.prange`.

    python benchmarks/parallel.py [--rounds R] [--repeats N] [--rows ROWS] [--cols COLS] [--no-numba]

(a) nogil: benchmarks/parallel/kernels.ppy's `smooth_passes` (@ppy.nogil; 40
    passes of a three-point stencil sum over a 100,000-element array('d'), a few
    ms a call) is called 8 times one after another, then the same 8 calls are
    split over two threading.Thread (4 each, the same buffer), in one process
    after warm-up. The figure is threads time / sequential time (target on 2
    cores: at most 0.55x; per process the median of each repeat's ratio).
    Two controls run interleaved with it: the same kernel without @ppy.nogil
    (it holds the GIL: about 1.0x), and the same loop in C (parallel/smooth.c,
    gcc -O2, through ctypes, which releases the GIL): what two threads of this
    loop gain on this machine at that moment, the ceiling for ppy's figure.
(b) prange: the seed's `standardize` (examples/31_torchrun/features.ppy) with
    `prange` over its rows (`standardize_rows`, `total` a reduction), ROWS x
    COLS values, in processes with PPY_NUM_THREADS=1 and =2. The figure is
    1-thread time / 2-thread time (target: at least 1.8x). The plain sequential
    `standardize` is timed in the same processes, for reference. The `out`
    buffers must be identical for both thread counts and the sequential kernel,
    and the returned totals equal within 1e-9 relative. If numba is importable,
    its @njit(parallel=True) with numba.prange over the same loops
    (parallel/kernels_numba.py) runs as a peer, with NUMBA_NUM_THREADS=1 and =2.

Every process runs benchmarks/parallel/time_parallel.py (ppy with PPY_JIT=eager;
both kernels must run as machine code). The processes run in R interleaved
rounds, the order of the thread counts alternating; each figure is the median
over rounds of the per-process medians of N repeats, and each ratio the median
over rounds of that round's ratio (its spread over rounds is printed too).

On 2 cores anything else running takes its share from the parallel figures:
before timing the command lists the processes using a CPU, and it prints how
much CPU other processes used during the run and during each round (from
/proc/stat, less this command's own processes), next to that round's ratios.
numba is a benchmark-only extra, never installed by this command: to include
it, put it on PYTHONPATH (e.g. `pip install --target DIR numba==0.68.1`).
"""

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TIMER = os.path.join(HERE, "parallel", "time_parallel.py")


def cpu_model():
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def busy_processes(seconds=1.0, threshold=10.0):
    """(CPUs busy over `seconds`, from /proc/stat; [(percent of one CPU, pid, command)] of the other
    processes above `threshold`, counting the children they reaped meanwhile: a test runner's short
    processes show up as its own)."""
    def sample():
        ticks = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                ticks[int(pid)] = sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
            except (OSError, IndexError, ValueError):
                pass
        with open("/proc/stat") as stat:
            cpu = [int(field) for field in stat.readline().split()[1:]]
        return ticks, sum(cpu), cpu[3] + cpu[4]  # idle + iowait

    before, total_before, idle_before = sample()
    time.sleep(seconds)
    after, total_after, idle_after = sample()
    cpus_busy = len(os.sched_getaffinity(0)) * (1.0 - (idle_after - idle_before) / max(1, total_after - total_before))
    hertz = os.sysconf("SC_CLK_TCK")
    busy = []
    for pid, ticks in after.items():
        if pid == os.getpid() or pid not in before:
            continue
        percent = 100.0 * (ticks - before[pid]) / hertz / seconds
        if percent >= threshold:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                command = "?"
            busy.append((percent, pid, command[:110]))
    return cpus_busy, sorted(busy, reverse=True)


def machine_seconds():
    """(CPU seconds the machine has spent busy, of them stolen by the hypervisor), from /proc/stat."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in stat.readline().split()[1:9])
    hertz = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq + steal) / hertz, steal / hertz


def children_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args, env_overrides, repeats, timeout=300):
    env = dict(os.environ, REPEATS=str(repeats), PPY_QUIET="1", PPY_JIT="eager")
    env.update(env_overrides)
    result = subprocess.run([sys.executable, TIMER] + args, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} {env_overrides} failed (exit {result.returncode}):\n"
                           f"{result.stdout}\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def have_numba():
    return subprocess.run([sys.executable, "-c", "import numba"], capture_output=True).returncode == 0


def spread(values):
    return f"{min(values):.3f}-{max(values):.3f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of processes")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per process")
    parser.add_argument("--rows", type=int, default=50000, help="rows of the prange input")
    parser.add_argument("--cols", type=int, default=64, help="columns of the prange input")
    parser.add_argument("--no-numba", action="store_true", help="skip the numba peer even if numba is importable")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="before each round, wait up to SECONDS for a second in which the other processes "
                             "use under 10%% of a CPU (on a shared machine)")
    args = parser.parse_args()

    cpus = len(os.sched_getaffinity(0))
    print(f"CPU: {cpu_model()}; {cpus} CPUs in os.sched_getaffinity; Python {platform.python_version()}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cpus_busy, busy = busy_processes()
    print(f"Before timing, {cpus_busy:.2f} of the CPUs were busy over 1 s (/proc/stat)", end="")
    if busy:
        print("; processes above 10% of a CPU (with the children they reaped):")
        for percent, pid, command in busy:
            print(f"  {percent:5.0f}%  {pid:>7d}  {command}")
        print("  (on a 2-core machine they take their share from the parallel figures)")
    else:
        print("; no process above 10% of a CPU.")
    if cpus < 2:
        print("Fewer than 2 CPUs: the parallel figures cannot show a speedup.")

    cache = tempfile.mkdtemp(prefix="ppy-parallel-")
    numba_cache = tempfile.mkdtemp(prefix="numba-parallel-")
    base = {"PPY_CACHE_DIR": cache, "ROWS": str(args.rows), "COLS": str(args.cols)}
    if shutil.which("gcc"):
        library = os.path.join(cache, "libsmooth.so")
        subprocess.run(["gcc", "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-o", library,
                        os.path.join(HERE, "parallel", "smooth.c")], check=True)
        base["SMOOTH_LIB"] = library
    else:
        print("No gcc: part (a) runs without its C control.")
    systems = [("ppy", {})]
    if not args.no_numba and have_numba():
        systems.append(("numba", {"NUMBA_CACHE_DIR": numba_cache}))
        run(["prange", "numba"], dict(base, ROWS="1000", COLS="8", NUMBA_CACHE_DIR=numba_cache), 1)  # fill the cache

    def others_seconds():
        """CPU seconds the machine has been busy with something other than this command, so far."""
        return machine_seconds()[0] - children_seconds() - sum(os.times()[:2])

    threads_rounds = []
    prange_rounds = {(system, n): [] for system, _ in systems for n in (1, 2)}
    steal = 0.0
    round_seconds, round_others = [], []  # per round: its duration, the CPU seconds other processes used in it
    for round_index in range(args.rounds):
        if args.wait_quiet > 0:
            deadline = time.perf_counter() + args.wait_quiet
            while busy_processes(threshold=101.0)[0] >= 0.1 and time.perf_counter() < deadline:
                pass
        round_started, round_others_before, round_steal_before = (time.perf_counter(), others_seconds(),
                                                                  machine_seconds()[1])
        threads_rounds.append(run(["threads"], base, args.repeats))
        order = (1, 2) if round_index % 2 == 0 else (2, 1)
        for system, env in systems:
            for threads in order:
                pool = {"PPY_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads)}
                prange_rounds[(system, threads)].append(run(["prange", system], dict(base, **env, **pool),
                                                            args.repeats))
        round_seconds.append(time.perf_counter() - round_started)
        round_others.append(max(0.0, others_seconds() - round_others_before))
        steal += machine_seconds()[1] - round_steal_before
    elapsed, others = sum(round_seconds), sum(round_others)
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(numba_cache, ignore_errors=True)

    # Correctness first: no figure is printed for a kernel that computed something else.
    problems = []
    kinds = [kind for kind in ("nogil", "gil", "c") if kind in threads_rounds[0]]
    for result in threads_rounds:
        for kind in kinds:
            if result[kind]["wrong"]:
                problems.append(f"(a) {kind}: a threaded call returned {result[kind]['wrong']} "
                                f"instead of {result[kind]['result']}")
            if kind != "c" and result[kind]["tier"] != "jit":
                problems.append(f"(a) {kind}: the kernel ran on tier {result[kind]['tier']!r}, not 'jit'")
    results = {r[kind]["result"] for r in threads_rounds for kind in kinds}
    if len(results) != 1:
        problems.append(f"(a) the kernels returned different values: {sorted(results)}")
    digests = {}
    totals = []
    for (system, threads), rounds in prange_rounds.items():
        for result in rounds:
            digests.setdefault(result["out_prange"], []).append(f"{system} prange {threads} thread(s)")
            digests.setdefault(result["out_range"], []).append(f"{system} range")
            totals += [(float(t), f"{system} prange {threads}") for t in result["totals_prange"]]
            totals += [(float(t), f"{system} range") for t in result["totals_range"]]
            if system == "ppy" and set(result["tiers"].values()) != {"jit"}:
                problems.append(f"(b) ppy ran on tiers {result['tiers']}, not machine code")
    if len(digests) != 1:
        problems.append("(b) the out buffers differ: " +
                        "; ".join(f"{digest}: {sorted(set(who))}" for digest, who in digests.items()))
    reference = totals[0][0]
    for total, who in totals:
        if abs(total - reference) > 1e-9 * abs(reference):
            problems.append(f"(b) {who} returned total {total!r}, {reference!r} elsewhere (beyond 1e-9 relative)")
    if problems:
        print("\n".join(["RESULTS DISAGREE:"] + sorted(set(problems))))
        sys.exit(1)
    distinct_totals = sorted({repr(total) for total, _ in totals})

    first = threads_rounds[0]
    print(f"\nParallel kernels: {args.rounds} rounds x {args.repeats} repeats, {elapsed:.0f} s; meanwhile other "
          f"processes used about {others:.1f} CPU-seconds ({others / elapsed:.0%} of one CPU), the hypervisor "
          f"stole {steal:.1f}")
    print(f"(a) {first['calls']} calls of a {first['n']:,}-element, {first['passes']}-pass kernel: "
          f"sequential vs split over 2 threading.Thread (every call returned {first['nogil']['result']})")
    print(f"  {'kernel':28s} {'one call':>10s} {'sequential':>11s} {'2 threads':>10s} {'threads/seq':>12s} "
          f"{'rounds':>13s}")
    ratios = {}
    labels = {"nogil": "smooth_passes (@ppy.nogil)", "gil": "smooth_passes_gil (no nogil)",
              "c": "C -O2 via ctypes (no GIL)"}
    for kind in kinds:
        label = labels[kind]
        per_round = [r[kind]["ratio"] for r in threads_rounds]
        ratios[kind] = statistics.median(per_round)
        print(f"  {label:28s} {statistics.median(r[kind]['call_ms'] for r in threads_rounds):7.2f} ms "
              f"{statistics.median(r[kind]['seq_ms'] for r in threads_rounds):8.1f} ms "
              f"{statistics.median(r[kind]['threads_ms'] for r in threads_rounds):7.1f} ms "
              f"{ratios[kind]:11.3f}x {spread(per_round):>13s}")

    print(f"(b) standardize over {args.rows:,} x {args.cols} values, pool of PPY_NUM_THREADS "
          f"(NUMBA_NUM_THREADS) threads; out identical everywhere (sha256 {next(iter(digests))}), "
          f"totals {', '.join(distinct_totals)}")
    print(f"  {'system':30s} {'1 thread':>10s} {'2 threads':>10s} {'speedup':>8s} {'rounds':>13s}   "
          f"sequential standardize in the same processes")
    speedups, round_speedups = {}, {}
    for system, _ in systems:
        one, two = prange_rounds[(system, 1)], prange_rounds[(system, 2)]
        per_round = [a["prange_ms"] / b["prange_ms"] for a, b in zip(one, two)]
        round_speedups[system] = per_round
        speedups[system] = statistics.median(per_round)
        label = {"ppy": "ppy prange (standardize_rows)", "numba": "numba prange (parallel=True)"}[system]
        print(f"  {label:30s} {statistics.median(r['prange_ms'] for r in one):7.2f} ms "
              f"{statistics.median(r['prange_ms'] for r in two):7.2f} ms {speedups[system]:7.2f}x "
              f"{spread(per_round):>13s}   {statistics.median(r['range_ms'] for r in one):.2f} / "
              f"{statistics.median(r['range_ms'] for r in two):.2f} ms")
    if "numba" in speedups:
        print(f"  numba: {prange_rounds[('numba', 2)][0]['tiers']['prange']}")
    exact = all(r["totals_prange"] == r["totals_range"] for r in prange_rounds[("ppy", 1)])
    print(f"  ppy prange with PPY_NUM_THREADS=1 returned the sequential total bit for bit: {'yes' if exact else 'no'}")

    print("  per round (the share of one CPU other processes used during it; (a) threads/seq; (b) speedup):")
    for index, share in enumerate(other / seconds for other, seconds in zip(round_others, round_seconds)):
        figures = "  ".join(f"{kind} {threads_rounds[index][kind]['ratio']:.3f}" for kind in kinds)
        speeds = "  ".join(f"{system} {round_speedups[system][index]:.2f}" for system, _ in systems)
        print(f"    round {index + 1}: others {share:4.0%};  (a) {figures};  (b) {speeds}")

    control = f"; the same loop in C {ratios['c']:.3f}x" if "c" in ratios else ""
    print(f"\nheadline (a): 2 threads / sequential, @ppy.nogil: {ratios['nogil']:.3f}x "
          f"(target <= 0.55x: {'met' if ratios['nogil'] <= 0.55 else 'NOT met'}; "
          f"without nogil {ratios['gil']:.3f}x{control})")
    print(f"headline (b): prange, 1 thread / 2 threads: {speedups['ppy']:.2f}x "
          f"(target >= 1.8x: {'met' if speedups['ppy'] >= 1.8 else 'NOT met'})")


if __name__ == "__main__":
    main()
