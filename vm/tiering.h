// The interpreter's side of tiering: when to ask for machine code and how to
// run it. The machine-code tier itself (asmjit-backend/) installs the compile
// hook, so that the VM does not depend on it.
//
// Machine code for a function works on the interpreter's own frame (the
// register array) and is entered at pc 0 or at a loop header. It returns
//   kJitReturned        the function returned; the result is stored
//   pc >= 0             continue interpreting at pc (a side exit: the interpreter
//                       re-executes that instruction, raising if it must)
//   JitErrorAt(pc)      a Python exception is set, raised at pc
#pragma once

#include <cstdint>

#include "vm/code.h"

namespace ppy {

// What machine code receives as `context`: the helper table (a pointer to
// asmjit-backend's JitHelpers, so that machine code saved in the cache calls
// the helpers of whatever process maps it), the function it runs, and its
// module's versions (an inlined call's guard).
struct JitCallContext {
  const void* helpers;
  const FunctionCode* function;
  const ModuleVersions* versions;
};

inline constexpr int64_t kJitReturned = -1;
inline constexpr int64_t JitErrorAt(int64_t pc) { return -pc - 2; }
inline constexpr int64_t JitErrorPc(int64_t code) { return -code - 2; }

enum class JitMode : uint8_t { kOff, kHot, kEager };

struct Tiering {
  JitMode mode = JitMode::kOff;
  // Calls and back edges after which a function is compiled.
  uint64_t call_threshold = 100;
  uint64_t back_edge_threshold = 8192;
  // Compiles `fn` (sets fn.runtime->jit_entry) or marks it unavailable; `trigger` says why,
  // for `ppy run --trace`. Returns whether machine code exists now.
  bool (*compile)(const FunctionCode& fn, const char* trigger) = nullptr;
  // For a function whose machine code is pending: looks for it (at most every
  // few milliseconds) and maps it, or gives up waiting if its builder is gone.
  void (*poll)(const FunctionCode& fn) = nullptr;
  // Compiles fn's value specialization from what its calls showed (sets
  // fn.runtime->special_state), once its general code exists.
  void (*specialize)(const FunctionCode& fn) = nullptr;
  // The helper table machine code calls through.
  const void* helpers = nullptr;
  // Whether hot object code may run its unboxed version (vm/unbox.h), which
  // the interpreter builds itself: PPY_UNBOX=0 says no (mode kOff says no too:
  // PPY_JIT=0 runs the object code as compiled, the reference for both).
  bool unbox = true;
};

extern Tiering g_tiering;

}  // namespace ppy
