from numba import njit


@njit(cache=True)
def mandelbrot(out, width, height, max_iter):
    total = 0
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
            out[y * width + x] = it
            total += it
    return total
