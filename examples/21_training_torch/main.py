"""One training step, region against eager, in isolation.

    python main.py            # 20 SGD steps each way: the losses agree bit for bit
    python main.py --time     # and one step's time, eager and region (medians, us)
    PPY_IMPORT=python python main.py

The region is `model.forward_loss` as ppy runs it; eager is the same `def` as
plain Python (`forward_loss.__ppy_python__`; under PPY_IMPORT=python both are
the plain function). A step is forward_loss, backward and an SGD update of the
four parameters, nothing else: no data loading, no logging, one thread.
"""

import statistics
import sys
import timeit

import ppy  # noqa: F401  (first: .ppy modules import natively)

import torch

import model

torch.set_num_threads(1)  # one thread: a matmul's rounding depends on the split

region = model.forward_loss
eager = getattr(region, "__ppy_python__", region)

SIZES = {"tiny 8x4 -> 3 -> 1": (8, 4, 3), "seed 20000x32 -> 32 -> 1": (20000, 32, 32)}


def make(rows, inputs, hidden):
    generator = torch.Generator().manual_seed(21)
    x = torch.randn(rows, inputs, generator=generator)
    y = torch.randn(rows, 1, generator=generator)
    params = [torch.randn(inputs, hidden, generator=generator) * 0.5, torch.zeros(hidden),
              torch.randn(hidden, 1, generator=generator) * 0.5, torch.zeros(1)]
    return x, y, [p.requires_grad_() for p in params]


def step(fn, x, y, params, lr=0.05):
    loss = fn(x, y, *params)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return loss.item()


for label, shape in SIZES.items():
    runs = {}
    for name, fn in (("eager", eager), ("region", region)):
        x, y, params = make(*shape)
        losses = [step(fn, x, y, params) for _ in range(20)]
        runs[name] = (losses, [p.detach().clone() for p in params])
    (le, pe), (lr_, pr) = runs["eager"], runs["region"]
    same = le == lr_ and all(torch.equal(a, b) for a, b in zip(pe, pr))
    print(f"{label}: loss {le[0]:.6f} -> {le[-1]:.6f} after 20 steps; region == eager bit for bit: {same}")

if "--time" in sys.argv:
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread; one step, medians of 7 rounds, us")
    for label, shape in SIZES.items():
        x, y, params = make(*shape)
        number = 200 if shape[0] < 100 else 10
        times = {"eager": [], "region": []}
        for _ in range(7):
            for name, fn in (("eager", eager), ("region", region)):
                runs = timeit.repeat(lambda: step(fn, x, y, params, lr=1e-6), number=number, repeat=3)
                times[name].append(min(runs) / number * 1e6)
        e, r = statistics.median(times["eager"]), statistics.median(times["region"])
        print(f"{label:26s} eager {e:9.1f}  region {r:9.1f}  speedup {e / r:.2f}x")
