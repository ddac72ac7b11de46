// The loops of jacobi.ppy in C: row-major doubles, the row length a run-time
// value, no bounds checks (what a C extension would do).
#include <stdint.h>

static void sweep(const double* a, double* b, int64_t rows, int64_t cols) {
  for (int64_t i = 1; i < rows - 1; ++i) {
    for (int64_t j = 1; j < cols - 1; ++j) {
      b[i * cols + j] = 0.25 * (a[(i - 1) * cols + j] + a[(i + 1) * cols + j] + a[i * cols + j - 1] +
                                a[i * cols + j + 1]);
    }
  }
}

void jacobi(double* a, double* b, int64_t rows, int64_t cols, int64_t sweeps) {
  for (int64_t s = 0; s < sweeps / 2; ++s) {
    sweep(a, b, rows, cols);
    sweep(b, a, rows, cols);
  }
}
