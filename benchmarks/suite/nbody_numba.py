import math

from numba import njit


@njit(cache=True)
def energy(s, mass, n):
    e = 0.0
    for i in range(n):
        p = 6 * i
        e += 0.5 * mass[i] * (s[p + 3] * s[p + 3] + s[p + 4] * s[p + 4] + s[p + 5] * s[p + 5])
        for j in range(i + 1, n):
            q = 6 * j
            dx = s[p] - s[q]
            dy = s[p + 1] - s[q + 1]
            dz = s[p + 2] - s[q + 2]
            e -= mass[i] * mass[j] / math.sqrt(dx * dx + dy * dy + dz * dz)
    return e


@njit(cache=True)
def nbody(start, s, mass, n, steps, dt):
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
                mag = dt / (d2 * math.sqrt(d2))
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
