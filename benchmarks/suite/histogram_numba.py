from numba import njit


@njit(cache=True)
def histogram(keys, counts, bins):
    for b in range(bins):
        counts[b] = 0
    for k in keys:
        counts[k % bins] += 1
    best = 0
    for b in range(bins):
        if counts[b] > counts[best]:
            best = b
    return best
