from numba import njit


@njit(cache=True)
def sieve(flags, n):
    flags[0] = 0
    flags[1] = 0
    for i in range(2, n):
        flags[i] = 1
    i = 2
    while i * i < n:
        if flags[i]:
            for j in range(i * i, n, i):
                flags[j] = 0
        i += 1
    count = 0
    for i in range(n):
        count += flags[i]
    return count
