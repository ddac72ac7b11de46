#include "vm/function_like.h"

namespace ppy {
namespace {

FunctionLike* Of(PyObject* op) { return reinterpret_cast<FunctionLike*>(op); }

PyObject* DescrGet(PyObject* op, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(op);
  return PyMethod_New(op, obj);
}

PyObject* GetAttr(PyObject* op, PyObject* name) {
  PyObject* value = PyObject_GenericGetAttr(op, name);
  if (value != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return value;
  PyErr_Clear();
  return PyObject_GetAttr(Of(op)->python, name);
}

// Setting an attribute: into the instance dict, as on a Python function,
// except what a call of the Python function reads (its defaults, its code):
// compiled calls bind the defaults and run the code they were compiled with,
// so a change there would be ignored; it raises instead.
int SetAttr(PyObject* op, PyObject* name, PyObject* value) {
  static const char* const kBoundAtCompile[] = {"__defaults__", "__kwdefaults__", "__code__"};
  if (PyUnicode_Check(name)) {
    for (const char* bound : kBoundAtCompile) {
      if (PyUnicode_CompareWithASCIIString(name, bound) == 0) {
        PyErr_Format(PyExc_AttributeError,
                     "cannot change %U of the compiled function %U: its calls use what it was compiled with "
                     "(rebind the name to a new function instead)", name, Of(op)->qualname);
        return -1;
      }
    }
  }
  return PyObject_GenericSetAttr(op, name, value);
}

int SetString(PyObject** slot, PyObject* value, const char* what) {
  if (value == nullptr || !PyUnicode_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be set to a string object", what);
    return -1;
  }
  Py_XSETREF(*slot, Py_NewRef(value));
  return 0;
}

PyMemberDef kMembers[] = {
    {"__module__", T_OBJECT, offsetof(FunctionLike, module_name), 0, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FunctionLike, vectorcall), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FunctionLike, weakreflist), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(FunctionLike, dict), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

bool InitFunctionLike(FunctionLike* self, vectorcallfunc vectorcall, PyObject* python) {
  self->vectorcall = vectorcall;
  self->python = Py_NewRef(python);
  self->name = PyObject_GetAttrString(python, "__name__");
  self->qualname = PyObject_GetAttrString(python, "__qualname__");
  self->module_name = PyObject_GetAttrString(python, "__module__");
  self->dict = nullptr;
  self->weakreflist = nullptr;
  return self->name != nullptr && self->qualname != nullptr && self->module_name != nullptr;
}

int TraverseFunctionLike(FunctionLike* self, visitproc visit, void* arg) {
  Py_VISIT(self->python);
  Py_VISIT(self->dict);
  return 0;
}

void ClearFunctionLike(FunctionLike* self) {
  Py_CLEAR(self->python);
  Py_CLEAR(self->dict);
}

void DeallocFunctionLike(FunctionLike* self) {
  if (self->weakreflist != nullptr) PyObject_ClearWeakRefs(reinterpret_cast<PyObject*>(self));
  ClearFunctionLike(self);
  Py_CLEAR(self->name);
  Py_CLEAR(self->qualname);
  Py_CLEAR(self->module_name);
  PyObject_GC_Del(self);
}

void SetFunctionLikeSlots(PyTypeObject* type) {
  type->tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
  type->tp_vectorcall_offset = offsetof(FunctionLike, vectorcall);
  type->tp_call = PyVectorcall_Call;
  type->tp_descr_get = DescrGet;
  type->tp_getattro = GetAttr;
  type->tp_setattro = SetAttr;
  type->tp_members = kMembers;
  type->tp_dictoffset = offsetof(FunctionLike, dict);
  type->tp_weaklistoffset = offsetof(FunctionLike, weakreflist);
}

PyObject* FunctionLikeReduce(PyObject* op, PyObject*) { return Py_NewRef(Of(op)->qualname); }

PyObject* FunctionLikeGetName(PyObject* op, void*) { return Py_NewRef(Of(op)->name); }
int FunctionLikeSetName(PyObject* op, PyObject* value, void*) { return SetString(&Of(op)->name, value, "__name__"); }
PyObject* FunctionLikeGetQualname(PyObject* op, void*) { return Py_NewRef(Of(op)->qualname); }
int FunctionLikeSetQualname(PyObject* op, PyObject* value, void*) {
  return SetString(&Of(op)->qualname, value, "__qualname__");
}
PyObject* FunctionLikeGetDoc(PyObject* op, void*) { return PyObject_GetAttrString(Of(op)->python, "__doc__"); }
int FunctionLikeSetDoc(PyObject* op, PyObject* value, void*) {
  return PyObject_SetAttrString(Of(op)->python, "__doc__", value);
}
PyObject* FunctionLikeGetPython(PyObject* op, void*) { return Py_NewRef(Of(op)->python); }

}  // namespace ppy
