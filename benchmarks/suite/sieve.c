#include <stdint.h>

int64_t sieve(uint8_t* flags, int64_t n) {
  flags[0] = 0;
  flags[1] = 0;
  for (int64_t i = 2; i < n; ++i) flags[i] = 1;
  for (int64_t i = 2; i * i < n; ++i)
    if (flags[i])
      for (int64_t j = i * i; j < n; j += i) flags[j] = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += flags[i];
  return count;
}
