/* The loop of kernels/black_scholes.ppy in C, operation for operation (no
   fused multiply-add: built with -ffp-contract=off), for
   benchmarks/black_scholes.py. */
#include <math.h>
#include <stdint.h>

void black_scholes(const double* S, const double* K, const double* T, int64_t n, double r, double v, double* call,
                   double* put) {
  const double root2 = sqrt(2.0);
  for (int64_t i = 0; i < n; ++i) {
    double sqrt_t = sqrt(T[i]);
    double d1 = (log(S[i] / K[i]) + (r + 0.5 * v * v) * T[i]) / (v * sqrt_t);
    double d2 = d1 - v * sqrt_t;
    double cnd1 = 0.5 * (1.0 + erf(d1 / root2));
    double cnd2 = 0.5 * (1.0 + erf(d2 / root2));
    double discount = K[i] * exp(-r * T[i]);
    call[i] = S[i] * cnd1 - discount * cnd2;
    put[i] = discount * (1.0 - cnd2) - S[i] * (1.0 - cnd1);
  }
}
