"""A torch DataLoader whose two worker processes call ppy kernels.

    python main.py                      # workers started by fork (Linux's default)
    python main.py --context spawn      # or spawn, or forkserver
    python main.py --time               # and how long the epoch took
    PPY_IMPORT=python python main.py

Each worker is a separate process that imports `augment` itself (spawn and
forkserver) or inherits it from the parent (fork). Either way it finds the
parent's build in the cache: no worker builds the module again, which
.ppy-cache/build.log shows (one line, the parent's).
"""

import array
import sys
import time

import ppy  # noqa: F401  (first: .ppy modules import natively)

import torch
from torch.utils.data import DataLoader, Dataset

import augment

FEATURES = 64


class Samples(Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, index):
        raw = array.array("d", [((index * 31 + k * 17) % 101) / 10.0 for k in range(FEATURES)])
        out = torch.empty(FEATURES, dtype=torch.float64)
        augment.normalize_into(raw, out)  # writes straight into the tensor's memory
        augment.jitter(out, index, 0.01)
        return out, index % 4


def main():
    context = sys.argv[sys.argv.index("--context") + 1] if "--context" in sys.argv else None
    torch.manual_seed(0)
    loader = DataLoader(Samples(), batch_size=64, num_workers=2, multiprocessing_context=context)
    start = time.perf_counter()
    total = 0.0
    labels = 0
    for batch, (x, y) in enumerate(loader):
        # The sum of a batch is reduced by torch in a fixed order; round it for printing.
        total += x.abs().sum().item()
        labels += int(y.sum())
        if batch < 2:
            print(f"batch {batch}: {tuple(x.shape)} first row[:3] = {[round(v, 9) for v in x[0, :3].tolist()]}")
    elapsed = time.perf_counter() - start
    print(f"8 batches, sum |x| = {total:.6f}, sum of labels = {labels}")
    if "--time" in sys.argv:
        print(f"epoch with 2 workers ({context or 'fork'}): {elapsed * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
