/* The control of benchmarks/parallel.py's part (a): kernels.ppy's smooth_passes
   in C (gcc -O2 -ffp-contract=off), called through ctypes, which releases the
   GIL for the call: what two threads of this loop gain on this machine. */
#include <stdint.h>

double smooth_passes(const double* data, int64_t n, int64_t passes) {
  double total = 0.0;
  for (int64_t p = 0; p < passes; p++) {
    double scale = 1.0 + (double)p * 1e-6;
    for (int64_t i = 1; i < n - 1; i++) total += (0.25 * data[i - 1] + 0.5 * data[i] + 0.25 * data[i + 1]) * scale;
  }
  return total;
}
