#include <stdint.h>

int64_t prefix_sum(const int64_t* xs, int64_t n, int64_t* out) {
  int64_t running = 0;
  for (int64_t i = 0; i < n; ++i) {
    running += xs[i];
    out[i] = running;
  }
  int64_t check = 0;
  for (int64_t i = n - 1; i > 0; --i) check += out[i] - out[i - 1];
  return running + check;
}
