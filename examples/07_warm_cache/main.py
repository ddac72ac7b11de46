"""One request: import the kernels and call each once, as a fresh process would.

    ppy build --warm .        # once, before deploying
    python main.py            # the results (identical under PPY_IMPORT=python)
    python main.py --time     # and how long the import and the first calls took
"""

import array
import sys
import time

start = time.perf_counter()
import ppy  # noqa: E402,F401  (first: .ppy modules import natively)

import stats  # noqa: E402

imported = time.perf_counter()

seed = 2026
xs = array.array("d")
for _ in range(50_000):
    seed = (seed * 1103515245 + 12345) % 2147483648
    xs.append(seed / 2147483648.0 * 6.0 - 3.0)
counts = array.array("q", [0] * 6)

ready = time.perf_counter()
m = stats.mean(xs)
s = stats.stddev(xs)
outside = stats.histogram(xs, counts, -2.0, 2.0)
done = time.perf_counter()

print(f"mean={m!r} stddev={s!r}")
print(f"histogram={list(counts)} outside={outside}")
if "--time" in sys.argv:
    print(f"import ppy + import stats: {(imported - start) * 1e3:.2f} ms")
    print(f"first calls (mean, stddev, histogram): {(done - ready) * 1e3:.2f} ms")
