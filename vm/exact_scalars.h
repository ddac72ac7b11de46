// Which Python values a typed scalar parameter takes as they are: exactly an
// int that fits 64 bits, exactly a float, a bool. Anything else (an int subclass
// such as bool for an int, numpy.float64 for a float, an int beyond 64 bits)
// makes the call run the function's own Python code, which is what CPython
// would do with it. Shared by the VM's calls (vm/runtime.cpp) and the region
// executor (regions/executor.cpp), a separate extension, hence header-only.
#pragma once

#include <Python.h>

#include <cstdint>

namespace ppy {

inline bool ExactInt64(PyObject* obj, int64_t* out) {
  if (!PyLong_CheckExact(obj)) return false;
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow != 0) return false;
  *out = value;
  return true;
}

inline bool ExactFloat(PyObject* obj, double* out) {
  if (!PyFloat_CheckExact(obj)) return false;
  *out = PyFloat_AS_DOUBLE(obj);
  return true;
}

inline bool ExactBool(PyObject* obj, bool* out) {
  if (obj != Py_True && obj != Py_False) return false;
  *out = obj == Py_True;
  return true;
}

}  // namespace ppy
