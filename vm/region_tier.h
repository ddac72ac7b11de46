// The VM's side of the ATen region tier: what a region's `def` becomes when a
// module binds it. The region tier (regions/region_function.cpp) installs these
// hooks when the extension loads, so that the VM does not depend on it, as
// vm/tiering.h does for machine code. Without them, binding a region raises.
#pragma once

#include <Python.h>

namespace ppy {

struct RegionTier {
  // A new callable for region `index` of the module's serialized region
  // section (bytes, or nullptr when the entry has none), wrapping the Python
  // function of the same def. Returns a new reference, or nullptr with an
  // exception.
  PyObject* (*new_function)(PyObject* section, Py_ssize_t index, PyObject* python) = nullptr;
  // (name, calls, ops, python calls) of a callable new_function returned.
  PyObject* (*stats)(PyObject* function) = nullptr;
  // The op sequence of region `index` of `section`, as `ppy dis` prints it: a
  // new str, or nullptr with an exception.
  PyObject* (*describe)(PyObject* section, Py_ssize_t index) = nullptr;
};

extern RegionTier g_region_tier;

}  // namespace ppy
