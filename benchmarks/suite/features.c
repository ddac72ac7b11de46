/* The seed's features kernel in C (benchmarks/kernels/features.c), plus the
 * same wrapper as features.ppy. */
#include "../kernels/features.c"

double features(const double* raw, double* out, int64_t* counts, int64_t ncounts, int64_t rows, int64_t cols) {
  for (int64_t b = 0; b < ncounts; ++b) counts[b] = 0;
  double total = standardize(raw, out, rows, cols);
  int64_t outside = bucketize(out, rows * cols * 2, counts, ncounts, -3.0, 3.0);
  return total + (double)outside;
}
