// The table of runtime helpers machine code calls through.
//
// Code never embeds a helper's address: it reads it from this table, whose
// address arrives in JitCallContext::helpers. So code saved in the cache by one
// process runs in another, wherever libm and ppy are mapped there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vm/code.h"
#include "vm/math_table.h"

namespace ppy::jit {

struct JitHelpers {
  // PyErr_CheckSignals, every kBackEdgesPerCheck back edges: 1 with an
  // exception set (KeyboardInterrupt) when the loop must stop; 2 (only where
  // `may_leave`) when the machine code must leave for the interpreter, at the
  // loop's head, for the GIL to go to another thread (this thread borrows a
  // torch tensor, whose views only the interpreter refreshes after a
  // switch); else 0.
  int64_t (*check_signals)(int64_t may_leave);
  // A typed call: `index` in the caller's module; 1 on success, 0 with an
  // exception set.
  int64_t (*call_typed)(int64_t caller, int64_t index, int64_t args, int64_t result);
  // Python's float // and % (vm/runtime.h), for a nonzero divisor.
  double (*floor_div)(double, double);
  double (*mod)(double, double);
  // CPython's complex quotient (for a nonzero divisor), one part each, and
  // its modulus (an overflow returns infinity, which the code re-checks).
  double (*complex_quot_real)(double, double, double, double);
  double (*complex_quot_imag)(double, double, double, double);
  double (*complex_abs)(double, double);
  // memset(data, value, bytes), for a loop that fills a buffer; returns 0.
  int64_t (*fill)(int64_t data, int64_t value, int64_t bytes);
  // The sum of `count` elements of type `elem` (an int type narrower than 64
  // bits) from `data`, for a loop that sums a buffer's elements.
  int64_t (*sum)(int64_t data, int64_t count, int64_t elem);
  // The math table's fast paths (nullptr where CPython computes it itself).
  double (*math1[kMathCount])(double);
  double (*math2[kMathCount])(double, double);
  // An attribute read in place for LOAD_ATTR_GF/GI (vm/interpreter.h,
  // AttributeInPlace): the instruction's function (an unboxed version's
  // machine-code function) and pc, and the object; the value, borrowed, or 0.
  int64_t (*attribute_in_place)(int64_t function, int64_t pc, int64_t object);
};

inline int32_t HelperOffset(size_t offset) { return static_cast<int32_t>(offset); }

// The one table of this process.
const JitHelpers& Helpers();

}  // namespace ppy::jit
