import numpy as np
from numba import njit


@njit(cache=True)
def matmul(a, b, c, n):
    total = 0.0
    for i in range(n):
        for j in range(n):
            acc = 0.0
            for k in range(n):
                acc += np.float64(a[i * n + k]) * np.float64(b[k * n + j])
            c[i * n + j] = acc
            total += np.float64(c[i * n + j])
    return total
