/* The features kernel in C, loop for loop as examples/31_torchrun/features.ppy,
 * for benchmarks/compare.py. Built with gcc -O2 into a shared library loaded
 * through ctypes; no bounds checks, as C has none. */
#include <math.h>
#include <stdint.h>

double standardize(const double* raw, double* out, int64_t rows, int64_t cols) {
  double total = 0.0;
  for (int64_t row = 0; row < rows; ++row) {
    int64_t base = row * cols;
    int64_t target = row * cols * 2;
    double sum = 0.0;
    for (int64_t i = 0; i < cols; ++i) sum += raw[base + i];
    double mean = sum / (double)cols;
    double spread = 0.0;
    for (int64_t i = 0; i < cols; ++i) spread += (raw[base + i] - mean) * (raw[base + i] - mean);
    double deviation = sqrt(spread / (double)cols) + 1e-8;
    for (int64_t i = 0; i < cols; ++i) {
      double value = (raw[base + i] - mean) / deviation;
      out[target + i] = value;
      total += value;
    }
    for (int64_t i = 0; i < cols; ++i) {
      double interaction = out[target + i] * out[target + (i + 1) % cols];
      out[target + cols + i] = interaction;
      total += interaction;
    }
  }
  return total;
}

int64_t bucketize(const double* values, int64_t count, int64_t* counts, int64_t bins, double low, double high) {
  double width = (high - low) / (double)bins;
  int64_t outside = 0;
  for (int64_t i = 0; i < count; ++i) {
    double offset = (values[i] - low) / width;
    if (offset < 0.0 || offset >= (double)bins) {
      outside += 1;
    } else {
      counts[(int64_t)offset] += 1;
    }
  }
  return outside;
}
