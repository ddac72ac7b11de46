#include <stdint.h>

int64_t tokenizer(const uint8_t* text, int64_t n, int64_t* counts) {
  int64_t words = 0, numbers = 0, marks = 0, i = 0;
  while (i < n) {
    int64_t c = text[i];
    if (c == 32 || c == 10 || c == 9 || c == 13) {
      i += 1;
    } else if (48 <= c && c <= 57) {
      int64_t dot = 0;
      i += 1;
      while (i < n) {
        c = text[i];
        if (48 <= c && c <= 57) {
          i += 1;
        } else if (c == 46 && dot == 0) {
          dot = 1;
          i += 1;
        } else {
          break;
        }
      }
      numbers += 1;
    } else if ((97 <= c && c <= 122) || (65 <= c && c <= 90) || c == 95) {
      i += 1;
      while (i < n) {
        c = text[i];
        if ((97 <= c && c <= 122) || (65 <= c && c <= 90) || (48 <= c && c <= 57) || c == 95 || c == 39)
          i += 1;
        else
          break;
      }
      words += 1;
    } else {
      marks += 1;
      i += 1;
    }
  }
  counts[0] = words;
  counts[1] = numbers;
  counts[2] = marks;
  return words + numbers + marks;
}
