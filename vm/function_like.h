// What ppy's function objects (ppy._ppy.Function, RegionFunction) share with a
// Python function: the `def`'s own Python function, which they keep, and
// everything a caller may expect of a function, taken from it or kept beside
// it: names, __doc__, __dict__, weak references, binding as a method, pickling
// by reference, and any other attribute (__code__, __defaults__, ...) read from
// the Python function.
#pragma once

#include <Python.h>
#include <structmember.h>

namespace ppy {

// The first member of every function object (so that its PyObject* casts).
struct FunctionLike {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* python;  // the Python function of the same def
  PyObject* name;
  PyObject* qualname;
  PyObject* module_name;
  PyObject* dict;
  PyObject* weakreflist;
};

// Fills the shared fields from `python`. Call right after allocation; on
// failure (an exception set) the object is safe to deallocate.
bool InitFunctionLike(FunctionLike* self, vectorcallfunc vectorcall, PyObject* python);
// For tp_traverse, tp_clear and tp_dealloc.
int TraverseFunctionLike(FunctionLike* self, visitproc visit, void* arg);
void ClearFunctionLike(FunctionLike* self);
void DeallocFunctionLike(FunctionLike* self);  // after the type's own fields

// Sets the slots every function type shares (flags, vectorcall, descriptor,
// attribute lookup, dict and weak references, tp_members) on `type`, whose
// objects start with a FunctionLike.
void SetFunctionLikeSlots(PyTypeObject* type);

PyObject* FunctionLikeReduce(PyObject* op, PyObject*);

// The shared attributes, for the type's tp_getset (followed by its own).
#define PPY_FUNCTION_LIKE_GETSET                                                                   \
  {"__name__", ppy::FunctionLikeGetName, ppy::FunctionLikeSetName, nullptr, nullptr},              \
      {"__qualname__", ppy::FunctionLikeGetQualname, ppy::FunctionLikeSetQualname, nullptr, nullptr}, \
      {"__doc__", ppy::FunctionLikeGetDoc, ppy::FunctionLikeSetDoc, nullptr, nullptr},              \
      {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},             \
      {"__ppy_python__", ppy::FunctionLikeGetPython, nullptr, "The Python function of the same def.", nullptr}, \
      {"__wrapped__", ppy::FunctionLikeGetPython, nullptr, "The Python function of the same def.", nullptr}

PyObject* FunctionLikeGetName(PyObject* op, void*);
int FunctionLikeSetName(PyObject* op, PyObject* value, void*);
PyObject* FunctionLikeGetQualname(PyObject* op, void*);
int FunctionLikeSetQualname(PyObject* op, PyObject* value, void*);
PyObject* FunctionLikeGetDoc(PyObject* op, void*);
int FunctionLikeSetDoc(PyObject* op, PyObject* value, void*);
PyObject* FunctionLikeGetPython(PyObject* op, void*);

}  // namespace ppy
