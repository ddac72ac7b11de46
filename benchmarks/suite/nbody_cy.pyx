from libc.math cimport sqrt


cdef double energy(const double[::1] s, const double[::1] mass, Py_ssize_t n):
    cdef double e = 0.0, dx, dy, dz
    cdef Py_ssize_t i, j, p, q
    for i in range(n):
        p = 6 * i
        e += 0.5 * mass[i] * (s[p + 3] * s[p + 3] + s[p + 4] * s[p + 4] + s[p + 5] * s[p + 5])
        for j in range(i + 1, n):
            q = 6 * j
            dx = s[p] - s[q]
            dy = s[p + 1] - s[q + 1]
            dz = s[p + 2] - s[q + 2]
            e -= mass[i] * mass[j] / sqrt(dx * dx + dy * dy + dz * dz)
    return e


def nbody(const double[::1] start, double[::1] s, const double[::1] mass, Py_ssize_t n, Py_ssize_t steps,
          double dt):
    cdef Py_ssize_t k, step, i, j, p, q
    cdef double dx, dy, dz, d2, mag, mi, mj
    for k in range(6 * n):
        s[k] = start[k]
    for step in range(steps):
        for i in range(n):
            p = 6 * i
            for j in range(i + 1, n):
                q = 6 * j
                dx = s[p] - s[q]
                dy = s[p + 1] - s[q + 1]
                dz = s[p + 2] - s[q + 2]
                d2 = dx * dx + dy * dy + dz * dz
                mag = dt / (d2 * sqrt(d2))
                mi = mass[i] * mag
                mj = mass[j] * mag
                s[p + 3] -= dx * mj
                s[p + 4] -= dy * mj
                s[p + 5] -= dz * mj
                s[q + 3] += dx * mi
                s[q + 4] += dy * mi
                s[q + 5] += dz * mi
        for i in range(n):
            p = 6 * i
            s[p] += dt * s[p + 3]
            s[p + 1] += dt * s[p + 4]
            s[p + 2] += dt * s[p + 5]
    return energy(s, mass, n)
