from libc.math cimport sqrt


cdef inline double eval_a(Py_ssize_t i, Py_ssize_t j):
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)


cdef void times(const double[::1] u, double[::1] out, Py_ssize_t n):
    cdef Py_ssize_t i, j
    cdef double acc
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += eval_a(i, j) * u[j]
        out[i] = acc


cdef void times_transposed(const double[::1] u, double[::1] out, Py_ssize_t n):
    cdef Py_ssize_t i, j
    cdef double acc
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += eval_a(j, i) * u[j]
        out[i] = acc


def spectral_norm(double[::1] u, double[::1] v, double[::1] tmp, Py_ssize_t n):
    cdef Py_ssize_t i, k
    cdef double vbv = 0.0, vv = 0.0
    for i in range(n):
        u[i] = 1.0
    for k in range(10):
        times(u, tmp, n)
        times_transposed(tmp, v, n)
        times(v, tmp, n)
        times_transposed(tmp, u, n)
    for i in range(n):
        vbv += u[i] * v[i]
        vv += v[i] * v[i]
    return sqrt(vbv / vv)
