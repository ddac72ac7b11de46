#include <math.h>
#include <stdint.h>

static double energy(const double* s, const double* mass, int64_t n) {
  double e = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t p = 6 * i;
    e += 0.5 * mass[i] * (s[p + 3] * s[p + 3] + s[p + 4] * s[p + 4] + s[p + 5] * s[p + 5]);
    for (int64_t j = i + 1; j < n; ++j) {
      int64_t q = 6 * j;
      double dx = s[p] - s[q], dy = s[p + 1] - s[q + 1], dz = s[p + 2] - s[q + 2];
      e -= mass[i] * mass[j] / sqrt(dx * dx + dy * dy + dz * dz);
    }
  }
  return e;
}

double nbody(const double* start, double* s, const double* mass, int64_t n, int64_t steps, double dt) {
  for (int64_t k = 0; k < 6 * n; ++k) s[k] = start[k];
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t p = 6 * i;
      for (int64_t j = i + 1; j < n; ++j) {
        int64_t q = 6 * j;
        double dx = s[p] - s[q], dy = s[p + 1] - s[q + 1], dz = s[p + 2] - s[q + 2];
        double d2 = dx * dx + dy * dy + dz * dz;
        double mag = dt / (d2 * sqrt(d2));
        double mi = mass[i] * mag, mj = mass[j] * mag;
        s[p + 3] -= dx * mj;
        s[p + 4] -= dy * mj;
        s[p + 5] -= dz * mj;
        s[q + 3] += dx * mi;
        s[q + 4] += dy * mi;
        s[q + 5] += dz * mi;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t p = 6 * i;
      s[p] += dt * s[p + 3];
      s[p + 1] += dt * s[p + 4];
      s[p + 2] += dt * s[p + 5];
    }
  }
  return energy(s, mass, n);
}
