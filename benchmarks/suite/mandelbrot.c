#include <stdint.h>

int64_t mandelbrot(int32_t* out, int64_t width, int64_t height, int64_t max_iter) {
  int64_t total = 0;
  for (int64_t y = 0; y < height; ++y) {
    double ci = 2.5 * (double)y / (double)height - 1.25;
    for (int64_t x = 0; x < width; ++x) {
      double cr = 3.0 * (double)x / (double)width - 2.0;
      double zr = 0.0, zi = 0.0;
      int64_t it = 0;
      while (it < max_iter && zr * zr + zi * zi <= 4.0) {
        double t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        it += 1;
      }
      out[y * width + x] = (int32_t)it;
      total += it;
    }
  }
  return total;
}
