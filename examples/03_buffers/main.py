"""The same kernels over array.array, numpy, memoryview, bytearray and torch.

    python main.py            # the kernels native (import ppy)
    PPY_IMPORT=python python main.py
    python main.py --errors   # what ppy refuses, and the message it gives
    python main.py --time     # total() over 100,000 float64 values of each kind

Every line printed without --errors is identical under both paths: the kernels
compute with Python floats and ints, and the results are converted with
float()/int() before printing (under plain Python a numpy or torch element is
a numpy scalar or a 0-d tensor).
"""

import array
import statistics
import sys
import time
import zlib

import ppy  # noqa: F401  (first: .ppy modules import natively)

import numpy as np
import torch

import kernels

N = 1000
values = [i * 0.001 for i in range(N)]

owners = {
    "array.array('d')": array.array("d", values),
    "numpy float64": np.array(values),
    "memoryview of array": memoryview(array.array("d", values)),
    "torch float64": torch.tensor(values, dtype=torch.float64),
    "torch float64 slice [10:20]": torch.tensor(values, dtype=torch.float64)[10:20],
}
for name, owner in owners.items():
    before = float(kernels.total(owner))
    kernels.scale(owner, 2.0)  # writes through to the owner's memory
    after = float(kernels.total(owner))
    print(f"{name:28s} total={before:.12g} after scale(2)={after:.12g}")

print(f"{'torch float32 (Buffer[f32])':28s} total32={float(kernels.total32(torch.ones(8))):g}")

text = bytearray(b"ppy borrows memory; nothing is copied.")
print(f"adler32 kernel={int(kernels.checksum(text))} zlib={zlib.adler32(text)}")
print(f"upper: {int(kernels.upper(text))} changed -> {text.decode()}")
print(f"adler32 of bytes (read-only) = {int(kernels.checksum(b'abc'))}")

if "--errors" in sys.argv:
    for label, bad in (
        ("a list", [1.0, 2.0]),
        ("float32 numpy", np.zeros(3, dtype=np.float32)),
        ("2-D numpy", np.zeros((2, 2))),
        ("strided numpy", np.zeros(6)[::2]),
    ):
        try:
            kernels.total(bad)
            print(f"{label}: accepted")
        except TypeError as error:
            print(f"{label}: TypeError: {error}")
    try:
        kernels.upper(b"read only")
    except TypeError as error:
        print(f"bytes into upper(): TypeError: {error}")

if "--time" in sys.argv:
    big = [i * 1e-5 for i in range(100_000)]
    for name, owner in (
        ("array.array('d')", array.array("d", big)),
        ("numpy float64", np.array(big)),
        ("torch float64", torch.tensor(big, dtype=torch.float64)),
    ):
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            kernels.total(owner)
            runs.append(time.perf_counter() - start)
        print(f"total() over {name:18s} {statistics.median(runs) * 1e3:9.3f} ms (median of 5)")
