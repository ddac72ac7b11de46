"""Eager torch against the ATen region, on the seed's MLP (model.forward_loss).

    python benchmarks/regions.py [--rounds R]

Two sizes: (a) tiny, 8x4 -> 3 -> 1, where Python's overhead between operators
dominates, and (b) 20,000x32 -> 32 -> 1, where the tensor work does. For each,
the forward call alone and a whole training step (forward_loss, backward, SGD
update of the four parameters), eager (the same def as plain Python) and region
timed alternately in R rounds in one process; figures are medians of the
per-round medians, in microseconds. Results are checked equal before timing.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "31_torchrun")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="ppy-regions-")
    shutil.copy(os.path.join(EXAMPLE, "model.ppy"), scratch)
    os.environ["PPY_CACHE_DIR"] = os.path.join(scratch, "cache")
    sys.path.insert(0, scratch)
    import ppy  # noqa: F401
    import torch

    import model

    region = model.forward_loss
    eager = region.__ppy_python__
    assert region.__ppy_region__

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; medians of {args.rounds} rounds, us")
    print(f"{'case':34s} {'eager':>10s} {'region':>10s} {'speedup':>8s}")
    for label, rows, inputs, hidden in (("(a) 8x4 -> 3 -> 1", 8, 4, 3), ("(b) 20000x32 -> 32 -> 1", 20000, 32, 32)):
        torch.manual_seed(0)
        x, y = torch.randn(rows, inputs), torch.randn(rows, 1)
        params = [torch.randn(inputs, hidden), torch.zeros(hidden), torch.randn(hidden, 1), torch.zeros(1)]
        params = [p.requires_grad_() for p in params]
        assert torch.equal(region(x, y, *params), eager(x, y, *params))

        def forward(fn):
            return lambda: fn(x, y, *params)

        def step(fn):
            def run():
                loss = fn(x, y, *params)
                loss.backward()
                with torch.no_grad():
                    for p in params:
                        p -= 1e-6 * p.grad
                        p.grad = None
            return run

        number = 2000 if rows < 100 else 20
        for what, make in (("forward", forward), ("step", step)):
            times = {"eager": [], "region": []}
            for _ in range(args.rounds):
                for name, fn in (("eager", eager), ("region", region)):
                    runs = timeit.repeat(make(fn), number=number, repeat=5)
                    times[name].append(statistics.median(runs) / number * 1e6)
            e, r = statistics.median(times["eager"]), statistics.median(times["region"])
            print(f"{label + ' ' + what:34s} {e:10.1f} {r:10.1f} {e / r:7.2f}x")
    shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
