#include <math.h>
#include <stdint.h>

static double eval_a(int64_t i, int64_t j) { return 1.0 / (double)((i + j) * (i + j + 1) / 2 + i + 1); }

static void times(const double* u, double* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0.0;
    for (int64_t j = 0; j < n; ++j) acc += eval_a(i, j) * u[j];
    out[i] = acc;
  }
}

static void times_transposed(const double* u, double* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0.0;
    for (int64_t j = 0; j < n; ++j) acc += eval_a(j, i) * u[j];
    out[i] = acc;
  }
}

double spectral_norm(double* u, double* v, double* tmp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) u[i] = 1.0;
  for (int k = 0; k < 10; ++k) {
    times(u, tmp, n);
    times_transposed(tmp, v, n);
    times(v, tmp, n);
    times_transposed(tmp, u, n);
  }
  double vbv = 0.0, vv = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    vbv += u[i] * v[i];
    vv += v[i] * v[i];
  }
  return sqrt(vbv / vv);
}
