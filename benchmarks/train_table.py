"""The results table of examples/31_torchrun: train.py under PPY_IMPORT=python and
under `import ppy`, per rank, as medians of several launches.

    python benchmarks/train_table.py [--runs N] [--launcher torchrun|python] [--nproc P]

The kernels are built once with `ppy build --warm` into a temporary cache
(PPY_CACHE_DIR), as the example's run.sh does before its launches. Then the
two systems are launched alternately, N times each, so that machine noise falls
on both alike. Before any time is reported, every launch's checksums, counts and
losses must equal the first launch's, rank by rank: the two systems compute the
same numbers, and only their timings may differ.

Prints a markdown table: per rank, the median preprocessing time (standardize +
bucketize) and the median time of the 100 training steps, with the ratio.
"""

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLE = os.path.join(ROOT, "examples", "31_torchrun")

NOTE = re.compile(r"# rank (\d+)/(\d+) device=(\w+) native=(\w+) region=(\w+) loader=(\w+)")
PREP = re.compile(r"rank (\d+): prep +([\d.]+) ms   (checksum=\S+ outside=\d+)")
TRAIN = re.compile(r"rank (\d+): train +([\d.]+) ms   (loss \S+ -> \S+)")

SYSTEMS = [("PPY_IMPORT=python", {"PPY_IMPORT": "python"}), ("import ppy", {})]


def launch_command(launcher, processes):
    if launcher == "python":
        return [sys.executable, "train.py"]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
            "train.py"]


def launch(command, env):
    """One launch: {rank: (prep ms, train ms, numbers)} and the notes' region field."""
    result = subprocess.run(command, cwd=EXAMPLE, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed:\n{result.stdout}{result.stderr}")
    ranks, regions = {}, set()
    for line in result.stdout.splitlines():
        if match := NOTE.fullmatch(line):
            regions.add(match.group(5))
        elif match := PREP.fullmatch(line):
            ranks.setdefault(int(match.group(1)), {}).update(prep=float(match.group(2)), numbers=[match.group(3)])
        elif match := TRAIN.fullmatch(line):
            ranks[int(match.group(1))].update(train=float(match.group(2)))
            ranks[int(match.group(1))]["numbers"].append(match.group(3))
    return ranks, regions


def milliseconds(value):
    return f"{value:.1f} ms" if value < 1000 else f"{value:,.0f} ms"


def main():
    with tempfile.TemporaryDirectory(prefix="ppy-train-table-") as cache:
        table(cache)


def table(cache):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="launches per system (default 5)")
    parser.add_argument("--launcher", choices=["torchrun", "python"], default="torchrun")
    parser.add_argument("--nproc", type=int, default=2, help="processes under torchrun (default 2)")
    args = parser.parse_args()

    base_env = {k: v for k, v in os.environ.items() if k not in ("PPY_IMPORT", "PPY_JIT", "PPY_QUIET", "PPY_TRACE")}
    base_env["PPY_CACHE_DIR"] = cache
    subprocess.run([sys.executable, "-m", "ppy", "build", "--warm", "."], cwd=EXAMPLE, env=base_env, check=True)

    command = launch_command(args.launcher, args.nproc)
    times = {name: {} for name, _ in SYSTEMS}  # system -> rank -> {"prep": [...], "train": [...]}
    expected, regions = None, {name: set() for name, _ in SYSTEMS}
    for run in range(args.runs):
        for name, overrides in SYSTEMS:
            ranks, region = launch(command, dict(base_env, **overrides))
            regions[name] |= region
            numbers = {rank: values["numbers"] for rank, values in ranks.items()}
            if expected is None:
                expected = numbers
            elif numbers != expected:
                raise SystemExit(f"{name}, run {run + 1}: results differ\n  expected {expected}\n  got      {numbers}")
            for rank, values in ranks.items():
                per_rank = times[name].setdefault(rank, {"prep": [], "train": []})
                per_rank["prep"].append(values["prep"])
                per_rank["train"].append(values["train"])
            print(f"# run {run + 1}/{args.runs} {name}: " + ", ".join(
                f"rank {rank} prep {values['prep']:.1f} ms train {values['train']:.1f} ms"
                for rank, values in sorted(ranks.items())), file=sys.stderr)

    world = len(expected)
    launched = "python train.py" if args.launcher == "python" else \
        f"torchrun --standalone --nproc_per_node={args.nproc} train.py"
    region = "forward_loss region" if regions["import ppy"] == {"True"} else "no region: forward_loss runs on ppy's VM"
    print(f"CPU, {world} rank{'s' if world > 1 else ''} ({launched}), each on 20,000 rows x 16 columns; "
          f"100 steps of a 32-unit MLP. Medians of {args.runs} launches per system; every launch printed "
          f"the same checksums, counts and losses.")
    print()
    print("| per rank | PPY_IMPORT=python | import ppy | ratio |")
    print("| --- | ---: | ---: | ---: |")
    rows = [("prep", "preprocessing (standardize + bucketize)"), ("train", f"100 training steps ({region})")]
    for key, label in rows:
        for rank in sorted(expected):
            plain = statistics.median(times["PPY_IMPORT=python"][rank][key])
            native = statistics.median(times["import ppy"][rank][key])
            print(f"| {label}, rank {rank} | {milliseconds(plain)} | {milliseconds(native)} | "
                  f"{plain / native:.1f}× |")
    print()
    print(f"Command: python benchmarks/train_table.py --runs {args.runs} --launcher {args.launcher}"
          + (f" --nproc {args.nproc}" if args.launcher == "torchrun" else ""))


if __name__ == "__main__":
    main()
