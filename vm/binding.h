// Binding call arguments to parameters as CPython binds a Python function's.
#pragma once

#include <Python.h>

#include <string>

namespace ppy {

// Binds vectorcall arguments to the parameters of a function whose Python
// function is `python` (its defaults are used), with `num_params` parameters
// named `name_at(i)`, the first `num_posonly` positional-only and the last
// `num_kwonly` keyword-only. Returns false, with no exception, for any call
// CPython would reject: the caller then lets the Python function raise CPython's
// own error. `bound` receives borrowed references.
template <typename NameAt>
bool BindArguments(PyObject* python, int num_params, int num_posonly, int num_kwonly, NameAt name_at,
                   PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** bound) {
  const int num_positional = num_params - num_kwonly;
  if (nargs == num_params && kwnames == nullptr) {  // the usual call: every parameter, by position
    for (int i = 0; i < num_params; ++i) bound[i] = args[i];
    return num_kwonly == 0;
  }
  PyObject* defaults = PyFunction_GetDefaults(python);
  PyObject* kwdefaults = PyFunction_GetKwDefaults(python);
  const Py_ssize_t num_defaults = defaults ? PyTuple_GET_SIZE(defaults) : 0;
  if (nargs > num_positional) return false;
  for (int i = 0; i < num_params; ++i) bound[i] = i < nargs ? args[i] : nullptr;
  if (kwnames != nullptr) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
      PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
      int found = -1;
      for (int i = num_posonly; i < num_params && found < 0; ++i) {
        if (PyUnicode_CompareWithASCIIString(keyword, name_at(i).c_str()) == 0) found = i;
      }
      if (found < 0 || bound[found] != nullptr) return false;
      bound[found] = args[nargs + k];
    }
  }
  for (int i = 0; i < num_params; ++i) {
    if (bound[i] != nullptr) continue;
    if (i < num_positional) {
      Py_ssize_t default_index = i - (num_positional - num_defaults);
      if (default_index < 0) return false;
      bound[i] = PyTuple_GET_ITEM(defaults, default_index);
    } else {
      bound[i] = kwdefaults ? PyDict_GetItemString(kwdefaults, name_at(i).c_str()) : nullptr;
      if (bound[i] == nullptr) return false;
    }
  }
  return true;
}

}  // namespace ppy
