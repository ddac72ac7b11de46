"""Object mode against typed code, on 100,000 prices and quantities.

    python main.py            # the three totals, which agree
    python main.py --time     # and the time of one call of each (medians)
    PPY_IMPORT=python python main.py --time
"""

import array
import statistics
import sys
import time

import ppy  # noqa: F401  (first: .ppy modules import natively)

import prices

N = 100_000
price_list = [((i * 7919) % 1000) / 100.0 for i in range(N)]
quantity_list = [1 + i % 5 for i in range(N)]
rows = [{"price": p, "quantity": q} for p, q in zip(price_list, quantity_list)]
price_array = array.array("d", price_list)
quantity_array = array.array("q", quantity_list)

calls = {
    "total_untyped(lists)": lambda: prices.total_untyped(price_list, quantity_list),
    "total_dicts(rows)": lambda: prices.total_dicts(rows),
    "total_typed(arrays)": lambda: prices.total_typed(price_array, quantity_array),
}
for name, call in calls.items():
    print(f"{name:22s} = {call()!r}")

if "--time" in sys.argv:
    for name, call in calls.items():
        runs = []
        for _ in range(15):
            start = time.perf_counter()
            call()
            runs.append(time.perf_counter() - start)
        print(f"{name:22s} {statistics.median(runs) * 1e3:8.2f} ms per call (median of 15)")
