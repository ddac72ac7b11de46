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

// The value of an exact int `object` that fits 64 bits. A compact int (one
// digit: below 2**30 in magnitude, as nearly every count, size and index
// is) is read in place, without a call.
inline bool ExactIntValue(PyObject* object, long long* value) {
#if PY_VERSION_HEX >= 0x030C0000
  PyLongObject* integer = reinterpret_cast<PyLongObject*>(object);
  if (PyUnstable_Long_IsCompact(integer)) {
    *value = PyUnstable_Long_CompactValue(integer);
    return true;
  }
#else
  const Py_ssize_t size = Py_SIZE(object);
  if (size >= -1 && size <= 1) {
    *value = size * static_cast<long long>(reinterpret_cast<PyLongObject*>(object)->ob_digit[0]);
    return true;
  }
#endif
  int overflow = 0;
  *value = PyLong_AsLongLongAndOverflow(object, &overflow);
  return overflow == 0;
}

inline bool ExactInt64(PyObject* obj, int64_t* out) {
  if (!PyLong_CheckExact(obj)) return false;
  long long value = 0;
  if (!ExactIntValue(obj, &value)) return false;
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
