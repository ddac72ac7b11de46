"""The seed's features kernel under numba's @njit: standardize and bucketize
are benchmarks/kernels/features_numba.py's (the ones benchmarks/compare.py
times), plus the wrapper of features.ppy."""

import importlib.util
import os

from numba import njit

# Loaded under another name: this module is features_numba too.
_spec = importlib.util.spec_from_file_location(
    "compare_features_numba", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels",
                                           "features_numba.py"))
_kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_kernels)
standardize, bucketize = _kernels.standardize, _kernels.bucketize


@njit(cache=True)
def features(raw, out, counts, rows, cols):
    for b in range(len(counts)):
        counts[b] = 0
    total = standardize(raw, out, rows, cols)
    outside = bucketize(out, rows * cols * 2, counts, len(counts), -3.0, 3.0)
    return total + outside
