def mandelbrot(int[::1] out, Py_ssize_t width, Py_ssize_t height, Py_ssize_t max_iter):
    cdef Py_ssize_t x, y, it, total = 0
    cdef double ci, cr, zr, zi, t
    for y in range(height):
        ci = 2.5 * y / height - 1.25
        for x in range(width):
            cr = 3.0 * x / width - 2.0
            zr = 0.0
            zi = 0.0
            it = 0
            while it < max_iter and zr * zr + zi * zi <= 4.0:
                t = zr * zr - zi * zi + cr
                zi = 2.0 * zr * zi + ci
                zr = t
                it += 1
            out[y * width + x] = <int>it
            total += it
    return total
