"""before.smooth (falls back to Python) against after.smooth (compiled).

    python main.py            # both results, which must agree
    python main.py --time     # and the time of one call of each (medians)
"""

import array
import statistics
import sys
import time

import ppy  # noqa: F401  (first: .ppy modules import natively)

import after
import before

N = 20000
xs = array.array("d", bytes(8 * N))
after.make_input(N, xs)
results = {}
for module in (before, after):
    out = array.array("d", bytes(8 * N))
    results[module.__name__] = (module.smooth(xs, out, 8), out.tobytes())
    print(f"{module.__name__}.smooth total = {results[module.__name__][0]:.9f}")
print("bit-identical:", results["before"] == results["after"])

if "--time" in sys.argv:
    out = array.array("d", bytes(8 * N))
    for module in (before, after):
        runs = []
        for _ in range(21):
            start = time.perf_counter()
            module.smooth(xs, out, 8)
            runs.append(time.perf_counter() - start)
        print(f"{module.__name__}.smooth: {statistics.median(runs) * 1e3:.2f} ms per call (median of 21)")
