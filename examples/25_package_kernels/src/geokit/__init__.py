"""geokit: a small library whose hot code ships as .ppy kernels.

The package installs ppy's import hook itself, so its users never write
`import ppy`: `import geokit` is enough, and `geokit.distance` (the file
distance.ppy) imports natively. With PPY_IMPORT=python the same files run as
plain Python.
"""

import ppy  # noqa: F401  (before the submodule imports below)

from . import distance
from .distance import haversine, path_length

__all__ = ["distance", "haversine", "path_length", "nearest"]


def nearest(lats, lons, lat, lon):
    """Index of the point nearest to (lat, lon): Python glue around a kernel."""
    return distance.nearest_index(lats, lons, lat, lon)
