#include <stdint.h>

int64_t histogram(const int32_t* keys, int64_t n, int64_t* counts, int64_t bins) {
  for (int64_t b = 0; b < bins; ++b) counts[b] = 0;
  for (int64_t i = 0; i < n; ++i) counts[keys[i] % bins] += 1;
  int64_t best = 0;
  for (int64_t b = 0; b < bins; ++b)
    if (counts[b] > counts[best]) best = b;
  return best;
}
