def histogram(const int[::1] keys, long long[::1] counts, Py_ssize_t bins):
    cdef Py_ssize_t b, i, best = 0
    for b in range(bins):
        counts[b] = 0
    for i in range(keys.shape[0]):
        counts[keys[i] % bins] += 1
    for b in range(bins):
        if counts[b] > counts[best]:
            best = b
    return best
