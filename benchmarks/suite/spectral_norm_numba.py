import math

from numba import njit


@njit(cache=True)
def eval_a(i, j):
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)


@njit(cache=True)
def times(u, out, n):
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += eval_a(i, j) * u[j]
        out[i] = acc


@njit(cache=True)
def times_transposed(u, out, n):
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += eval_a(j, i) * u[j]
        out[i] = acc


@njit(cache=True)
def spectral_norm(u, v, tmp, n):
    for i in range(n):
        u[i] = 1.0
    for _ in range(10):
        times(u, tmp, n)
        times_transposed(tmp, v, n)
        times(v, tmp, n)
        times_transposed(tmp, u, n)
    vbv = 0.0
    vv = 0.0
    for i in range(n):
        vbv += u[i] * v[i]
        vv += v[i] * v[i]
    return math.sqrt(vbv / vv)
