// ppy._ppy.RegionFunction: what a region's def becomes at import time.
//
// It binds arguments like the Python function of the same def, and runs the
// op sequence through the executor (ppy._regions), which it loads on the first
// call: importing a module with regions neither loads the executor nor needs
// the compiler. Calls the executor cannot take (arguments of other types, a
// tensor subclass, a torch function mode) and every call when the executor
// cannot load run the Python function, as they would under PPY_IMPORT=python.
//
// The VM creates these through the hooks of vm/region_tier.h, which Install
// sets: the VM does not depend on the region tier.
#pragma once

#include <Python.h>

#include <functional>
#include <memory>
#include <string>

#include "regions/region_code.h"

namespace ppy::regions {

extern PyTypeObject RegionFunctionType;

// Readies the type, adds it to `extension` as RegionFunction and installs the
// VM's hooks (vm/region_tier.h); call once from the extension's init.
bool InstallRegionTier(PyObject* extension);

// Region `index` of the serialized region `section` (bytes), parsed and
// verified; nullptr with a Python exception when the section is bad.
std::unique_ptr<RegionCode> ParseRegionFromSection(PyObject* section, Py_ssize_t index);

// A new RegionFunction for region `index` of the serialized `section` (bytes),
// wrapping `python`. Returns a new reference, or nullptr with an exception.
PyObject* NewRegionFunction(PyObject* section, Py_ssize_t index, PyObject* python);

// The op sequence of region `index` of `section`, as `ppy dis` prints it: a
// new str, or nullptr with a Python exception.
PyObject* DescribeRegionOfSection(PyObject* section, Py_ssize_t index);

// (name, calls, ops, python calls) of a region function.
PyObject* RegionFunctionStats(PyObject* function);

// Receives trace events (the executor loading, a region's first call).
void SetRegionListener(std::function<void(const std::string&)> listener);

}  // namespace ppy::regions
