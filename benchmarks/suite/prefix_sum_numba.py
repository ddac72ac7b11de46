from numba import njit


@njit(cache=True)
def prefix_sum(xs, out):
    running = 0
    for i in range(len(xs)):
        running += xs[i]
        out[i] = running
    check = 0
    for i in range(len(xs) - 1, 0, -1):
        check += out[i] - out[i - 1]
    return running + check
