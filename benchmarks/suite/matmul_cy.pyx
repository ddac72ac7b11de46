def matmul(const float[::1] a, const float[::1] b, float[::1] c, Py_ssize_t n):
    cdef Py_ssize_t i, j, k
    cdef double acc, total = 0.0
    for i in range(n):
        for j in range(n):
            acc = 0.0
            for k in range(n):
                acc += <double>a[i * n + k] * <double>b[k * n + j]
            c[i * n + j] = <float>acc
            total += c[i * n + j]
    return total
