// The Python objects of the VM: a compiled module (ppy._ppy.CompiledModule) and
// its functions (ppy._ppy.Function), which Python code calls like any function.
#pragma once

#include <Python.h>

#include <memory>

#include "vm/code.h"
#include "vm/function_like.h"

namespace ppy {

struct CompiledModuleObject {
  PyObject_HEAD
  ModuleCode* code;   // owned
  PyObject* extras;   // dict: the entry's extra sections (bytes), or None
  PyObject* regions;  // list: the region functions bound so far (for stats)
};

// A compiled function. It keeps the Python function the same `def` created
// (vm/function_like.h): its defaults, annotations and code object are the
// function's own, and a call whose arguments do not have exactly the annotated
// types (an int for a float, a subclass, a value beyond 64 bits) runs that
// Python code, as CPython would.
struct FunctionObject {
  FunctionLike head;
  CompiledModuleObject* owner;  // keeps `code` alive
  const FunctionCode* code;
  // An element-generic function (one parameter annotated `Buffer` alone):
  // that parameter's position, and a tuple of kElemTypeCount entries, the
  // Function specialized for each element type or None. A call whose
  // argument there holds another element type than `code`'s goes to that
  // specialization, or, with none, to the Python function.
  int generic_param;
  PyObject* specializations;
  // The number of arguments a call of the scalar fast path passes (every
  // parameter, by position), or -1 for a function that has none: one with
  // keyword-only parameters, more than kMaxScalarCallParams, specializations,
  // or @ppy.nogil (see FunctionVectorcall).
  int scalar_call_arity;
};

extern PyTypeObject CompiledModuleType;
extern PyTypeObject FunctionType;

// Readies both types; call once from the extension's init.
bool InitFunctionTypes(PyObject* extension);

// Wraps verified `code` (taking ownership). Its functions can be bound once it
// is attached to a namespace (CompiledModule.attach). Returns a new reference,
// or nullptr with an exception.
PyObject* NewCompiledModule(std::unique_ptr<ModuleCode> code, PyObject* extras);

}  // namespace ppy
