cdef void sweep(const double[::1] src, double[::1] dst, Py_ssize_t rows, Py_ssize_t cols):
    cdef Py_ssize_t i, j, k
    for i in range(1, rows - 1):
        for j in range(1, cols - 1):
            k = i * cols + j
            dst[k] = 0.25 * (src[k - cols] + src[k + cols] + src[k - 1] + src[k + 1])


def jacobi(const double[::1] start, double[::1] a, double[::1] b, Py_ssize_t rows, Py_ssize_t cols,
           Py_ssize_t steps):
    cdef Py_ssize_t k, s
    cdef double total = 0.0
    for k in range(rows * cols):
        a[k] = start[k]
        b[k] = start[k]
    for s in range(steps):
        sweep(a, b, rows, cols)
        sweep(b, a, rows, cols)
    for k in range(rows * cols):
        total += a[k]
    return total
