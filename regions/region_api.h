// The interface between ppy._ppy, which creates region functions at import time
// without torch, and ppy._regions, the executor built against libtorch, which
// the first call of a region loads. The executor exports this table as the
// capsule `ppy._regions._api`.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>

namespace ppy::regions {

inline constexpr const char* kApiCapsule = "ppy._regions._api";
inline constexpr uint32_t kApiVersion = 1;

struct ExecutorApi {
  uint32_t version;  // kApiVersion of the executor that filled the table
  // Prepares region `index` of a serialized region section: parses and
  // verifies it, resolves its ops. Returns an opaque program, or nullptr with a
  // Python exception.
  void* (*load)(const char* section, size_t size, size_t index);
  // Runs a program on arguments bound in parameter order. Returns a new
  // reference; nullptr with an exception (whose traceback names the .ppy line of
  // the failing op); or Py_NotImplemented (a new reference) when an argument is
  // not of its annotated type, for the caller to run the Python function.
  PyObject* (*run)(void* program, PyObject* const* args);
  void (*release)(void* program);
  // The torch version the executor was built against (torch.__version__).
  const char* torch_version;
};

}  // namespace ppy::regions
