"""numpy arrays into ppy kernels, and numpy arrays back out.

    python main.py            # results (identical under PPY_IMPORT=python)
    python main.py --time     # and kernel against the numpy one-liner

Every number printed comes from a ppy kernel (bit-exact with CPython), or is
an exact count; numpy's own vectorized results are only compared, since
numpy may sum in a different order.
"""

import statistics
import sys
import time

import ppy  # noqa: F401  (first: .ppy modules import natively)

import numpy as np

import waves

xs = waves.linspace(0.0, 1.0, 11)
print(type(xs).__name__, xs.dtype, xs.shape, [float(v) for v in xs[:4]], float(xs[-1]))

wave = waves.linspace(0.0, 100.0, 200_001)
wave = np.sin(wave)  # a numpy array the kernels only read
means = waves.running_mean(wave, 50)
reference = np.convolve(wave, np.ones(50) / 50, mode="valid")
print(f"running_mean: {len(means)} values, means[123] = {float(means[123])!r}, "
      f"max |kernel - np.convolve| < 1e-12: {bool(np.abs(means - reference).max() < 1e-12)}")

image = np.arange(-500.0, 700.0).reshape(30, 40) / 100.0
flat = image.reshape(-1)  # a view: the kernel writes into `image`
changed = waves.clip_count(flat, 40, 0.0, 5.0)
print(f"clip_count: changed {changed}, image now in [{float(image.min())}, {float(image.max())}], "
      f"same as np.clip: {bool((image == np.clip(np.arange(-500.0, 700.0).reshape(30, 40) / 100.0, 0.0, 5.0)).all())}")

if "--time" in sys.argv:
    def median_ms(call, repeat=21):
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            call()
            runs.append(time.perf_counter() - start)
        return statistics.median(runs) * 1e3

    ones = np.ones(50) / 50
    print(f"running_mean kernel     {median_ms(lambda: waves.running_mean(wave, 50)):7.3f} ms")
    print(f"np.convolve(valid)      {median_ms(lambda: np.convolve(wave, ones, mode='valid')):7.3f} ms")
    print(f"linspace kernel         {median_ms(lambda: waves.linspace(0.0, 100.0, 200_001)):7.3f} ms")
    print(f"np.linspace             {median_ms(lambda: np.linspace(0.0, 100.0, 200_001)):7.3f} ms")
