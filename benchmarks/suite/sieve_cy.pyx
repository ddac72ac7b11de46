def sieve(unsigned char[::1] flags, Py_ssize_t n):
    cdef Py_ssize_t i, j, count = 0
    flags[0] = 0
    flags[1] = 0
    for i in range(2, n):
        flags[i] = 1
    i = 2
    while i * i < n:
        if flags[i]:
            j = i * i
            while j < n:  # range(i * i, n, i) would iterate as Python objects: the step's sign is unknown
                flags[j] = 0
                j += i
        i += 1
    for i in range(n):
        count += flags[i]
    return count
