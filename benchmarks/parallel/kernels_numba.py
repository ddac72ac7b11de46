"""numba peers of kernels.ppy's standardize kernels (benchmark-only; never required).

The same loops as kernels.standardize and kernels.standardize_rows, under
@njit and @njit(parallel=True) with numba.prange; the pool size is
NUMBA_NUM_THREADS.
"""

import math

from numba import njit, prange


@njit(cache=True)
def standardize(raw, out, rows, cols):
    total = 0.0
    for row in range(rows):
        base = row * cols
        target = row * cols * 2

        sum_ = 0.0
        for i in range(cols):
            sum_ += raw[base + i]
        mean = sum_ / cols

        spread = 0.0
        for i in range(cols):
            spread += (raw[base + i] - mean) * (raw[base + i] - mean)
        deviation = math.sqrt(spread / cols) + 1e-8

        for i in range(cols):
            value = (raw[base + i] - mean) / deviation
            out[target + i] = value
            total += value
        for i in range(cols):
            interaction = out[target + i] * out[target + (i + 1) % cols]
            out[target + cols + i] = interaction
            total += interaction
    return total


@njit(parallel=True, cache=True)
def standardize_rows(raw, out, rows, cols):
    total = 0.0
    for row in prange(rows):
        base = row * cols
        target = row * cols * 2

        sum_ = 0.0
        for i in range(cols):
            sum_ += raw[base + i]
        mean = sum_ / cols

        spread = 0.0
        for i in range(cols):
            spread += (raw[base + i] - mean) * (raw[base + i] - mean)
        deviation = math.sqrt(spread / cols) + 1e-8

        for i in range(cols):
            value = (raw[base + i] - mean) / deviation
            out[target + i] = value
            total += value
        for i in range(cols):
            interaction = out[target + i] * out[target + (i + 1) % cols]
            out[target + cols + i] = interaction
            total += interaction
    return total
