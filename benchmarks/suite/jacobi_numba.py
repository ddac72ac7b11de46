from numba import njit


@njit(cache=True)
def sweep(src, dst, rows, cols):
    for i in range(1, rows - 1):
        for j in range(1, cols - 1):
            k = i * cols + j
            dst[k] = 0.25 * (src[k - cols] + src[k + cols] + src[k - 1] + src[k + 1])


@njit(cache=True)
def jacobi(start, a, b, rows, cols, steps):
    for k in range(rows * cols):
        a[k] = start[k]
        b[k] = start[k]
    for _ in range(steps):
        sweep(a, b, rows, cols)
        sweep(b, a, rows, cols)
    total = 0.0
    for k in range(rows * cols):
        total += a[k]
    return total
