# The seed's features kernel with Cython typed memoryviews, loop for loop as features.ppy.
from libc.math cimport sqrt


cdef double standardize(const double[::1] raw, double[::1] out, Py_ssize_t rows, Py_ssize_t cols):
    cdef double total = 0.0, sum_, mean, spread, deviation, value, interaction
    cdef Py_ssize_t row, i, base, target
    for row in range(rows):
        base = row * cols
        target = row * cols * 2
        sum_ = 0.0
        for i in range(cols):
            sum_ += raw[base + i]
        mean = sum_ / cols
        spread = 0.0
        for i in range(cols):
            spread += (raw[base + i] - mean) * (raw[base + i] - mean)
        deviation = sqrt(spread / cols) + 1e-8
        for i in range(cols):
            value = (raw[base + i] - mean) / deviation
            out[target + i] = value
            total += value
        for i in range(cols):
            interaction = out[target + i] * out[target + (i + 1) % cols]
            out[target + cols + i] = interaction
            total += interaction
    return total


cdef Py_ssize_t bucketize(const double[::1] values, Py_ssize_t count, long long[::1] counts, Py_ssize_t bins,
                          double low, double high):
    cdef double width = (high - low) / bins, offset
    cdef Py_ssize_t outside = 0, i
    for i in range(count):
        offset = (values[i] - low) / width
        if offset < 0.0 or offset >= bins:
            outside += 1
        else:
            counts[<Py_ssize_t>offset] += 1
    return outside


def features(const double[::1] raw, double[::1] out, long long[::1] counts, Py_ssize_t rows, Py_ssize_t cols):
    cdef Py_ssize_t b
    for b in range(counts.shape[0]):
        counts[b] = 0
    cdef double total = standardize(raw, out, rows, cols)
    cdef Py_ssize_t outside = bucketize(out, rows * cols * 2, counts, counts.shape[0], -3.0, 3.0)
    return total + outside
