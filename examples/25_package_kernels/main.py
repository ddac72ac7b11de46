"""A user of geokit: no `import ppy` here, the package installs the hook.

    python main.py            # geokit from ./src, as if installed
    python main.py --time     # and one path_length call, timed
    PPY_IMPORT=python python main.py

To install it for real: `pip install --no-build-isolation ./` (or build a
wheel with `pip wheel --no-build-isolation --no-deps -w build/dist .`), then run
this file from anywhere without the sys.path line's effect.
"""

import array
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

import geokit  # noqa: E402

CITIES = {
    "Paris": (48.8566, 2.3522),
    "Berlin": (52.52, 13.405),
    "Madrid": (40.4168, -3.7038),
    "Rome": (41.9028, 12.4964),
    "Vienna": (48.2082, 16.3738),
    "Warsaw": (52.2297, 21.0122),
}
print(f"Paris -> Berlin: {geokit.haversine(*CITIES['Paris'], *CITIES['Berlin']):.3f} km")

lats = array.array("d", [lat for lat, _ in CITIES.values()])
lons = array.array("d", [lon for _, lon in CITIES.values()])
print(f"tour {' -> '.join(CITIES)}: {geokit.path_length(lats, lons):.3f} km")
names = list(CITIES)
print("nearest to Munich (48.1351, 11.5820):", names[geokit.nearest(lats, lons, 48.1351, 11.5820)])

# A long track: 100,000 points along a spiral.
n = 100_000
track_lat = array.array("d", [45.0 + 0.00001 * i for i in range(n)])
track_lon = array.array("d", [5.0 + 0.00002 * (i % 5000) for i in range(n)])
print(f"track of {n} points: {geokit.path_length(track_lat, track_lon)!r} km")

if "--time" in sys.argv:
    runs = []
    for _ in range(11):
        start = time.perf_counter()
        geokit.path_length(track_lat, track_lon)
        runs.append(time.perf_counter() - start)
    print(f"path_length over {n} points: {statistics.median(runs) * 1e3:.2f} ms (median of 11)")
