def prefix_sum(const long long[::1] xs, long long[::1] out):
    cdef long long running = 0, check = 0
    cdef Py_ssize_t i, n = xs.shape[0]
    for i in range(n):
        running += xs[i]
        out[i] = running
    for i in range(n - 1, 0, -1):
        check += out[i] - out[i - 1]
    return running + check
