// The interpreter: runs a verified FunctionCode on typed registers.
#pragma once

#include "vm/code.h"
#include "vm/runtime.h"

namespace ppy {

// Runs `fn` with its parameters already converted to register values (buffers as
// borrowed views). On success stores the result (an owned reference for object
// results, None included) and returns true; on error returns false with a Python
// exception set whose traceback has a frame for every ppy function it crossed.
bool Execute(const FunctionCode& fn, const Value* args, Value* result);

// A typed call from ppy code: Execute inside CPython's recursion limit.
bool CallTyped(const FunctionCode& fn, const Value* args, Value* result);

// How many back edges run between checks for Ctrl-C (and, with the JIT, for a
// switch to machine code).
inline constexpr uint32_t kBackEdgesPerCheck = 4096;

}  // namespace ppy
