// Helpers shared by the unit tests: compiling source text and calling the
// result with typed arguments, inside the one embedded interpreter.
#pragma once

#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "vm/code.h"
#include "vm/runtime.h"

namespace ppy::testing {

// A compiled module bound to a fresh namespace.
struct Compiled {
  CompileResult result;
  PyObject* globals = nullptr;
  ~Compiled();
  const FunctionCode& function(const std::string& name) const;
};

// Compiles `source` as module "test" and prepares it to run (after verifying).
// Fails the current test on a syntax error.
std::unique_ptr<Compiled> Compile(const std::string& source);

// Calls `name` with int/float arguments; returns the result's repr, or
// "Type: message" when it raises. `nogil`: the call releases the GIL, as a
// @ppy.nogil function's call from Python does (vm/gil.h).
std::string Call(const Compiled& compiled, const std::string& name, const std::vector<Value>& args,
                 bool nogil = false);

// The repr of evaluating `expression` in CPython, or "Type: message".
std::string PythonEval(const std::string& expression);

inline Value IntValue(int64_t i) {
  Value v;
  v.i = i;
  return v;
}
inline Value FloatValue(double f) {
  Value v;
  v.f = f;
  return v;
}

}  // namespace ppy::testing
