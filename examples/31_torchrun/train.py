"""A plain PyTorch trainer whose kernels are .ppy modules.

Started by `python train.py`, `torchrun --nproc_per_node=N train.py` or
`accelerate launch ... train.py`: every launcher sets RANK, WORLD_SIZE and
LOCAL_RANK, and this program reads only those, so it never knows which one
started it. Each rank makes its own 20,000 x 16 normally distributed rows (from
its rank alone, so a rank's data is the same in any world size), preprocesses
them with `features.standardize` and `features.bucketize`, and trains 100 steps
of a 32-unit MLP whose loss is `model.forward_loss`, averaging gradients across
ranks.

Every number it prints except the timings is the same under `import ppy` and
under `PPY_IMPORT=python`, and the same under every launcher for a given rank
and world size: torch runs on one intra-op thread per rank, because a matmul's
rounding depends on how many threads split it.
"""

import ppy  # first: the import hook, serving .ppy modules from their native build
import torch

import features  # features.ppy: the preprocessing loops, native
import model  # model.ppy: the model as one ATen region, native

import array
import os
import sys
import time

ROWS = 20_000
COLUMNS = 16  # raw inputs per row; standardize appends as many interactions
FEATURES = 2 * COLUMNS  # the model's input width
HIDDEN = 32
BINS, LOW, HIGH = 8, -3.0, 3.0
STEPS = 100
LEARNING_RATE = 0.05
DATA_SEED = 31_000  # rank r's rows come from DATA_SEED + r
MODEL_SEED = 7  # the initial weights, the same on every rank


def make_rows(rank):
    """The rank's raw rows, as a flat array.array('d'), and its targets' noise.

    array.array is the buffer both paths read fastest: ppy borrows its memory,
    and plain Python indexes it without creating tensors.
    """
    generator = torch.Generator().manual_seed(DATA_SEED + rank)
    raw = array.array("d", bytes(8 * ROWS * COLUMNS))
    torch.frombuffer(raw, dtype=torch.float64).copy_(
        torch.randn(ROWS * COLUMNS, dtype=torch.float64, generator=generator))
    noise = torch.randn(ROWS, 1, generator=generator)
    return raw, noise


def preprocess(raw):
    """Standardized rows with their interactions, and the values' histogram."""
    out = array.array("d", bytes(8 * ROWS * FEATURES))
    counts = array.array("q", bytes(8 * BINS))
    started = time.perf_counter()
    total = features.standardize(raw, out, ROWS, COLUMNS)
    outside = features.bucketize(out, ROWS * FEATURES, counts, BINS, LOW, HIGH)
    seconds = time.perf_counter() - started
    return out, total, outside, seconds


def initial_parameters(device):
    """w1, b1, w2, b2: the same on every rank, so the replicas start equal."""
    generator = torch.Generator().manual_seed(MODEL_SEED)
    w1 = torch.randn(FEATURES, HIDDEN, generator=generator) * (1.0 / FEATURES**0.5)
    b1 = torch.zeros(HIDDEN)
    # Small output weights, so that the first loss is about the targets' variance.
    w2 = torch.randn(HIDDEN, 1, generator=generator) * (0.1 / HIDDEN**0.5)
    b2 = torch.zeros(1)
    return [p.to(device).requires_grad_() for p in (w1, b1, w2, b2)]


def targets(x, noise):
    """A weak signal in the features plus unit noise: the loss starts near 1
    and the model can only learn the signal's share of it."""
    signal = torch.tanh(x[:, 0:1] * x[:, COLUMNS : COLUMNS + 1] + 0.5 * x[:, 1:2])
    return 0.25 * signal + noise


def train(x, y, parameters, world_size):
    losses = []
    for _ in range(STEPS):
        loss = model.forward_loss(x, y, *parameters)
        for p in parameters:
            p.grad = None
        loss.backward()
        if world_size > 1:
            # One all-reduce per step over all gradients, as DDP's buckets do.
            flat = torch.cat([p.grad.reshape(-1) for p in parameters])
            torch.distributed.all_reduce(flat, op=torch.distributed.ReduceOp.SUM)
            flat /= world_size
            for p, grad in zip(parameters, flat.split([p.numel() for p in parameters])):
                p.grad = grad.view_as(p)
        with torch.no_grad():
            for p in parameters:
                p -= LEARNING_RATE * p.grad
        losses.append(loss.item())
    return losses


def say(line):
    """One write per line: ranks share the terminal, and with PYTHONUNBUFFERED
    print() would write a line and its newline separately, letting another
    rank's output land between them."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.set_num_threads(1)

    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world_size > 1:
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")

    if os.environ.get("PPY_QUIET") != "1":
        native = ppy.tier(features.standardize) in ("jit", "vm")
        region = bool(getattr(model.forward_loss, "__ppy_region__", False))
        loader = type(features.__loader__).__name__
        say(f"# rank {rank}/{world_size} device={device.type} native={native} region={region} loader={loader}")

    raw, noise = make_rows(rank)
    out, total, outside, seconds = preprocess(raw)
    say(f"rank {rank}: prep {seconds * 1000:9.1f} ms   checksum={total:.6f} outside={outside}")

    x = torch.frombuffer(out, dtype=torch.float64).view(ROWS, FEATURES).float()
    y = targets(x, noise)
    x, y = x.to(device), y.to(device)
    parameters = initial_parameters(device)
    started = time.perf_counter()
    losses = train(x, y, parameters, world_size)
    seconds = time.perf_counter() - started
    say(f"rank {rank}: train {seconds * 1000:8.1f} ms   loss {losses[0]:.4f} -> {losses[-1]:.4f}")

    if world_size > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
