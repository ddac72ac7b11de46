// Helpers shared by the micro benchmarks: compiling .ppy source inside the one
// embedded CPython, finding a function's loop, and failing a benchmark so that
// the whole run exits non-zero (Google Benchmark 1.7's SkipWithError alone
// does not).
#pragma once

#include <Python.h>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>

#include "compiler/compile.h"
#include "vm/code.h"

namespace ppy::micro {

// A compiled, verified module prepared to run in a fresh namespace (as the unit
// tests' Compile does).
struct Module {
  CompileResult result;
  PyObject* globals = nullptr;
  ~Module();
  // Null when the module has no compiled function `name`.
  const FunctionCode* function(const std::string& name) const;
};

// Compiles `source`; null (with the reason in `error`) on a syntax or
// verification error, or when a function the source defines did not compile.
// Unless `prepare` is false, the module is also prepared to run in `globals`
// (a caller that attaches it to a namespace of its own prepares it then).
std::unique_ptr<Module> CompileSource(const std::string& source, std::string* error, bool prepare = true);

// How many instructions one trip of `fn`'s loop executes: those from its back
// edge's target to the back edge. The benchmarks' loops have straight-line
// bodies, so this is exact; 0 when `fn` has no loop.
int64_t LoopInstructions(const FunctionCode& fn);

// The pending Python exception as text ("" when none), clearing it.
std::string TakeException();

// Marks the benchmark failed with `why` and makes main() return 1.
void Fail(benchmark::State& state, const std::string& why);

// A rate counter shown inverted: seconds per unit (e.g. per instruction).
inline benchmark::Counter TimePer(double units) {
  return benchmark::Counter(units, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace ppy::micro
