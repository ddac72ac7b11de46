"""The seed's features kernel under numba's @njit, loop for loop as
benchmarks/kernels/features_numba.py, plus the wrapper of features.ppy."""

import math

from numba import njit


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


@njit(cache=True)
def bucketize(values, count, counts, bins, low, high):
    width = (high - low) / bins
    outside = 0
    for i in range(count):
        offset = (values[i] - low) / width
        if offset < 0.0 or offset >= bins:
            outside += 1
        else:
            counts[int(offset)] += 1
    return outside


@njit(cache=True)
def features(raw, out, counts, rows, cols):
    for b in range(len(counts)):
        counts[b] = 0
    total = standardize(raw, out, rows, cols)
    outside = bucketize(out, rows * cols * 2, counts, len(counts), -3.0, 3.0)
    return total + outside
