#include <stdint.h>

static void sweep(const double* src, double* dst, int64_t rows, int64_t cols) {
  for (int64_t i = 1; i < rows - 1; ++i)
    for (int64_t j = 1; j < cols - 1; ++j) {
      int64_t k = i * cols + j;
      dst[k] = 0.25 * (src[k - cols] + src[k + cols] + src[k - 1] + src[k + 1]);
    }
}

double jacobi(const double* start, double* a, double* b, int64_t rows, int64_t cols, int64_t steps) {
  for (int64_t k = 0; k < rows * cols; ++k) {
    a[k] = start[k];
    b[k] = start[k];
  }
  for (int64_t s = 0; s < steps; ++s) {
    sweep(a, b, rows, cols);
    sweep(b, a, rows, cols);
  }
  double total = 0.0;
  for (int64_t k = 0; k < rows * cols; ++k) total += a[k];
  return total;
}
