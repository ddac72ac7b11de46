// ppy._ppy.CompiledModule and ppy._ppy.Function.
//
// A Function is called through vectorcall: arguments are bound to parameters
// with Python's rules and messages (positional, keyword, defaults), converted to
// register values, buffers borrowed for exactly the duration of the call, and
// the result boxed. Everything else about it (name, qualname, doc, __dict__,
// binding as a method, pickling by reference) behaves like a Python function, so
// decorators and libraries that wrap functions keep working.

#include "vm/function_object.h"

#include <structmember.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "vm/disasm.h"
#include "vm/interpreter.h"
#include "vm/loader.h"
#include "vm/runtime.h"

namespace ppy {
namespace {

// ---- Argument binding ----------------------------------------------------------------------

std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += names.size() == 2 ? " and " : (i + 1 == names.size() ? ", and " : ", ");
    out += "'" + names[i] + "'";
  }
  return out;
}

bool RaiseMissing(const FunctionCode& fn, const std::vector<std::string>& missing, bool keyword_only) {
  PyErr_Format(PyExc_TypeError, "%s() missing %zu required %s argument%s: %s", fn.name.c_str(), missing.size(),
               keyword_only ? "keyword-only" : "positional", missing.size() == 1 ? "" : "s",
               QuotedList(missing).c_str());
  return false;
}

// Binds vectorcall arguments to `fn`'s parameters, as CPython binds a Python
// function's. `bound` receives borrowed references.
bool BindArguments(FunctionObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                   PyObject** bound) {
  const FunctionCode& fn = *self->code;
  const int num_params = fn.num_params();
  const int num_positional = num_params - fn.num_kwonly;
  const Py_ssize_t num_defaults = self->defaults ? PyTuple_GET_SIZE(self->defaults) : 0;
  for (int i = 0; i < num_params; ++i) bound[i] = nullptr;

  if (nargs > num_positional) {
    Py_ssize_t given_kwonly = 0;
    if (kwnames) {
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
        for (int i = num_positional; i < num_params; ++i) {
          if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), fn.params[i].name.c_str()) == 0) {
            ++given_kwonly;
          }
        }
      }
    }
    std::string takes = num_defaults > 0
                            ? absl::StrCat("from ", num_positional - num_defaults, " to ", num_positional)
                            : absl::StrCat(num_positional);
    std::string plural = (num_defaults == 0 && num_positional == 1) ? "" : "s";
    if (given_kwonly > 0) {
      PyErr_Format(PyExc_TypeError,
                   "%s() takes %s positional argument%s but %zd positional argument%s (and %zd keyword-only "
                   "argument%s) were given",
                   fn.name.c_str(), takes.c_str(), plural.c_str(), nargs, nargs == 1 ? "" : "s", given_kwonly,
                   given_kwonly == 1 ? "" : "s");
    } else {
      PyErr_Format(PyExc_TypeError, "%s() takes %s positional argument%s but %zd %s given", fn.name.c_str(),
                   takes.c_str(), plural.c_str(), nargs, nargs == 1 ? "was" : "were");
    }
    return false;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) bound[i] = args[i];

  if (kwnames != nullptr) {
    std::vector<std::string> posonly_as_keyword;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
      PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
      int found = -1;
      for (int i = 0; i < num_params; ++i) {
        if (PyUnicode_CompareWithASCIIString(keyword, fn.params[i].name.c_str()) == 0) {
          found = i;
          break;
        }
      }
      if (found >= 0 && found < fn.num_posonly) {
        posonly_as_keyword.push_back(fn.params[found].name);
        continue;
      }
      if (found < 0) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fn.name.c_str(), keyword);
        return false;
      }
      if (bound[found] != nullptr) {
        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fn.name.c_str(),
                     fn.params[found].name.c_str());
        return false;
      }
      bound[found] = args[nargs + k];
    }
    if (!posonly_as_keyword.empty()) {
      std::string names;
      for (size_t i = 0; i < posonly_as_keyword.size(); ++i) {
        names += (i ? ", '" : "'") + posonly_as_keyword[i] + "'";
      }
      PyErr_Format(PyExc_TypeError, "%s() got some positional-only arguments passed as keyword arguments: %s",
                   fn.name.c_str(), names.c_str());
      return false;
    }
  }

  std::vector<std::string> missing;
  for (int i = 0; i < num_positional; ++i) {
    if (bound[i] != nullptr) continue;
    Py_ssize_t default_index = i - (num_positional - num_defaults);
    if (default_index >= 0) bound[i] = PyTuple_GET_ITEM(self->defaults, default_index);
    else missing.push_back(fn.params[i].name);
  }
  if (!missing.empty()) return RaiseMissing(fn, missing, false);
  for (int i = num_positional; i < num_params; ++i) {
    if (bound[i] != nullptr) continue;
    PyObject* value = self->kwdefaults ? PyDict_GetItemString(self->kwdefaults, fn.params[i].name.c_str()) : nullptr;
    if (value != nullptr) bound[i] = value;
    else missing.push_back(fn.params[i].name);
  }
  if (!missing.empty()) return RaiseMissing(fn, missing, true);
  return true;
}

// Buffers a call borrows, released on every path out of the call.
class BorrowedBuffers {
 public:
  explicit BorrowedBuffers(int count) : raws_(count), views_(count) {}
  ~BorrowedBuffers() {
    for (int i = 0; i < acquired_; ++i) {
      if (raws_[i].obj != nullptr) PyBuffer_Release(&raws_[i]);
    }
  }
  bool Acquire(PyObject* obj, const FunctionCode& fn, const Param& param, Value* out) {
    int slot = acquired_;
    if (!AcquireBuffer(obj, fn, param, &raws_[slot], &views_[slot])) return false;
    ++acquired_;
    out->u = &views_[slot];
    return true;
  }

 private:
  std::vector<Py_buffer> raws_;
  std::vector<BufferView> views_;
  int acquired_ = 0;
};

PyObject* FunctionVectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<FunctionObject*>(callable);
  const FunctionCode& fn = *self->code;
  const int num_params = fn.num_params();
  PyObject* bound_storage[16];
  std::vector<PyObject*> bound_heap;
  PyObject** bound = bound_storage;
  if (num_params > 16) {
    bound_heap.resize(num_params);
    bound = bound_heap.data();
  }
  if (!BindArguments(self, args, PyVectorcall_NARGS(nargsf), kwnames, bound)) return nullptr;

  Value values_storage[16];
  std::vector<Value> values_heap;
  Value* values = values_storage;
  if (num_params > 16) {
    values_heap.resize(num_params);
    values = values_heap.data();
  }
  BorrowedBuffers buffers(fn.num_buffer_params);
  for (int i = 0; i < num_params; ++i) {
    const Param& param = fn.params[i];
    bool converted = param.type == ValueType::kBuffer ? buffers.Acquire(bound[i], fn, param, &values[i])
                                                      : UnboxArgument(bound[i], fn, param, &values[i]);
    if (!converted) return nullptr;
  }
  Value result;
  if (!CallTyped(fn, values, &result)) return nullptr;
  return BoxValue(fn.result, result);
}

// ---- Function type ----------------------------------------------------------------------------

int FunctionTraverse(PyObject* op, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  Py_VISIT(self->owner);
  Py_VISIT(self->defaults);
  Py_VISIT(self->kwdefaults);
  Py_VISIT(self->dict);
  Py_VISIT(self->doc);
  return 0;
}

int FunctionClear(PyObject* op) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  Py_CLEAR(self->owner);
  Py_CLEAR(self->defaults);
  Py_CLEAR(self->kwdefaults);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->doc);
  return 0;
}

void FunctionDealloc(PyObject* op) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  PyObject_GC_UnTrack(op);
  if (self->weakreflist != nullptr) PyObject_ClearWeakRefs(op);
  FunctionClear(op);
  Py_CLEAR(self->name);
  Py_CLEAR(self->qualname);
  Py_CLEAR(self->module_name);
  PyObject_GC_Del(op);
}

PyObject* FunctionRepr(PyObject* op) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  return PyUnicode_FromFormat("<ppy function %U at %p>", self->qualname, op);
}

PyObject* FunctionDescrGet(PyObject* op, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(op);
  return PyMethod_New(op, obj);
}

PyObject* FunctionReduce(PyObject* op, PyObject*) {
  return Py_NewRef(reinterpret_cast<FunctionObject*>(op)->qualname);
}

PyObject* FunctionDis(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  return PyUnicode_FromString(Disassemble(*self->owner->code, *self->code).c_str());
}

PyObject* FunctionGetTier(PyObject*, void*) { return PyUnicode_FromString("vm"); }

PyObject* FunctionGetSignature(PyObject* op, void*) {
  const FunctionCode& fn = *reinterpret_cast<FunctionObject*>(op)->code;
  std::string text = "(";
  for (int i = 0; i < fn.num_params(); ++i) {
    if (i > 0) text += ", ";
    text += fn.params[i].name + ": " + TypeName(fn.params[i].type, fn.params[i].elem);
  }
  text += ") -> " + TypeName(fn.result, ElemType::kNone);
  return PyUnicode_FromString(text.c_str());
}

PyObject* FunctionGetDefaults(PyObject* op, void*) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  return Py_NewRef(self->defaults ? self->defaults : Py_None);
}

PyObject* FunctionGetKwdefaults(PyObject* op, void*) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  return Py_NewRef(self->kwdefaults ? self->kwdefaults : Py_None);
}

PyObject* FunctionGetGlobals(PyObject* op, void*) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  return Py_NewRef(self->owner->code->globals);
}

int SetStr(PyObject** slot, PyObject* value, const char* what) {
  if (value == nullptr || !PyUnicode_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be set to a string object", what);
    return -1;
  }
  Py_XSETREF(*slot, Py_NewRef(value));
  return 0;
}

PyObject* FunctionGetName(PyObject* op, void*) { return Py_NewRef(reinterpret_cast<FunctionObject*>(op)->name); }
int FunctionSetName(PyObject* op, PyObject* value, void*) {
  return SetStr(&reinterpret_cast<FunctionObject*>(op)->name, value, "__name__");
}
PyObject* FunctionGetQualname(PyObject* op, void*) {
  return Py_NewRef(reinterpret_cast<FunctionObject*>(op)->qualname);
}
int FunctionSetQualname(PyObject* op, PyObject* value, void*) {
  return SetStr(&reinterpret_cast<FunctionObject*>(op)->qualname, value, "__qualname__");
}

PyMethodDef kFunctionMethods[] = {
    {"__reduce__", FunctionReduce, METH_NOARGS, nullptr},
    {"__ppy_dis__", FunctionDis, METH_NOARGS, "The function's bytecode, as `ppy dis` prints it."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kFunctionGetSet[] = {
    {"__name__", FunctionGetName, FunctionSetName, nullptr, nullptr},
    {"__qualname__", FunctionGetQualname, FunctionSetQualname, nullptr, nullptr},
    {"__defaults__", FunctionGetDefaults, nullptr, nullptr, nullptr},
    {"__kwdefaults__", FunctionGetKwdefaults, nullptr, nullptr, nullptr},
    {"__globals__", FunctionGetGlobals, nullptr, nullptr, nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {"__ppy_tier__", FunctionGetTier, nullptr, "Where calls run: 'vm' or 'jit'.", nullptr},
    {"__ppy_signature__", FunctionGetSignature, nullptr, "The typed signature ppy compiled.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef kFunctionMembers[] = {
    {"__doc__", T_OBJECT, offsetof(FunctionObject, doc), 0, nullptr},
    {"__module__", T_OBJECT, offsetof(FunctionObject, module_name), 0, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FunctionObject, vectorcall), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FunctionObject, weakreflist), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(FunctionObject, dict), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

// ---- CompiledModule type ----------------------------------------------------------------------

int ModuleTraverse(PyObject* op, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  if (self->code != nullptr) {
    Py_VISIT(self->code->globals);
  }
  Py_VISIT(self->extras);
  return 0;
}

int ModuleClear(PyObject* op) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  if (self->code != nullptr) ReleaseModule(*self->code);
  Py_CLEAR(self->extras);
  return 0;
}

void ModuleDealloc(PyObject* op) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject_GC_UnTrack(op);
  ModuleClear(op);
  delete self->code;
  self->code = nullptr;
  PyObject_GC_Del(op);
}

// bind(index, defaults, kwdefaults, doc) -> Function: the object a compiled
// `def` statement binds. The rewritten module code calls it where the def stood.
PyObject* ModuleBind(PyObject* op, PyObject* args) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  Py_ssize_t index;
  PyObject *defaults, *kwdefaults, *doc;
  if (!PyArg_ParseTuple(args, "nOOO:bind", &index, &defaults, &kwdefaults, &doc)) return nullptr;
  if (self->code->globals == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "ppy: bind() before attach()");
    return nullptr;
  }
  if (index < 0 || index >= static_cast<Py_ssize_t>(self->code->functions.size())) {
    PyErr_SetString(PyExc_IndexError, "no such compiled function");
    return nullptr;
  }
  if (defaults != Py_None && !PyTuple_Check(defaults)) {
    PyErr_SetString(PyExc_TypeError, "defaults must be a tuple or None");
    return nullptr;
  }
  if (kwdefaults != Py_None && !PyDict_Check(kwdefaults)) {
    PyErr_SetString(PyExc_TypeError, "kwdefaults must be a dict or None");
    return nullptr;
  }
  const FunctionCode& code = *self->code->functions[index];
  auto* fn = PyObject_GC_New(FunctionObject, &FunctionType);
  if (fn == nullptr) return nullptr;
  fn->vectorcall = FunctionVectorcall;
  fn->owner = reinterpret_cast<CompiledModuleObject*>(Py_NewRef(op));
  fn->code = &code;
  fn->defaults = defaults == Py_None ? nullptr : Py_NewRef(defaults);
  fn->kwdefaults = kwdefaults == Py_None ? nullptr : Py_NewRef(kwdefaults);
  fn->name = PyUnicode_FromString(code.name.c_str());
  fn->qualname = PyUnicode_FromString(code.qualname.c_str());
  fn->doc = Py_NewRef(doc);
  fn->module_name = PyDict_GetItemString(self->code->globals, "__name__");
  Py_XINCREF(fn->module_name);
  if (fn->module_name == nullptr) fn->module_name = Py_NewRef(Py_None);
  fn->dict = nullptr;
  fn->weakreflist = nullptr;
  PyObject_GC_Track(fn);
  if (fn->name == nullptr || fn->qualname == nullptr) {
    Py_DECREF(fn);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(fn);
}

PyObject* ModuleFunctionNames(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject* names = PyList_New(0);
  if (names == nullptr) return nullptr;
  for (const auto& fn : self->code->functions) {
    PyObject* name = PyUnicode_FromString(fn->name.c_str());
    if (name == nullptr || PyList_Append(names, name) < 0) {
      Py_XDECREF(name);
      Py_DECREF(names);
      return nullptr;
    }
    Py_DECREF(name);
  }
  return names;
}

PyObject* ModuleDis(PyObject* op, PyObject* args) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  const char* only = nullptr;
  if (!PyArg_ParseTuple(args, "|z:dis", &only)) return nullptr;
  std::string text;
  for (const auto& fn : self->code->functions) {
    if (only != nullptr && fn->name != only) continue;
    if (!text.empty()) text += "\n";
    text += Disassemble(*self->code, *fn);
  }
  return PyUnicode_FromString(text.c_str());
}

PyObject* ModuleGetExtras(PyObject* op, void*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  return Py_NewRef(self->extras ? self->extras : Py_None);
}

// attach(globals): prepares the code to run in the module namespace `globals`.
PyObject* ModuleAttach(PyObject* op, PyObject* globals) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  if (!PyDict_Check(globals)) {
    PyErr_SetString(PyExc_TypeError, "attach() takes the module's namespace dict");
    return nullptr;
  }
  if (absl::Status prepared = PrepareModule(*self->code, globals); !prepared.ok()) {
    PyErr_Format(PyExc_ValueError, "ppy: %s", std::string(prepared.message()).c_str());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef kModuleMethods[] = {
    {"attach", ModuleAttach, METH_O, "attach(globals): run the functions in this module namespace"},
    {"bind", ModuleBind, METH_VARARGS, "bind(index, defaults, kwdefaults, doc) -> the function object"},
    {"function_names", ModuleFunctionNames, METH_NOARGS, "The compiled functions, in index order."},
    {"dis", ModuleDis, METH_VARARGS, "dis([name]) -> the disassembly of every (or one) function"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kModuleGetSet[] = {
    {"extras", ModuleGetExtras, nullptr, "The entry's extra sections, tag -> bytes.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

PyTypeObject CompiledModuleType = {PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject FunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool InitFunctionTypes(PyObject* extension) {
  CompiledModuleType.tp_name = "ppy._ppy.CompiledModule";
  CompiledModuleType.tp_basicsize = sizeof(CompiledModuleObject);
  CompiledModuleType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  CompiledModuleType.tp_doc = "The compiled functions of one .ppy module, bound to its namespace.";
  CompiledModuleType.tp_traverse = ModuleTraverse;
  CompiledModuleType.tp_clear = ModuleClear;
  CompiledModuleType.tp_dealloc = ModuleDealloc;
  CompiledModuleType.tp_methods = kModuleMethods;
  CompiledModuleType.tp_getset = kModuleGetSet;

  FunctionType.tp_name = "ppy._ppy.Function";
  FunctionType.tp_basicsize = sizeof(FunctionObject);
  FunctionType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                          Py_TPFLAGS_METHOD_DESCRIPTOR;
  FunctionType.tp_doc = "A function of a .ppy module, run by the ppy VM.";
  FunctionType.tp_vectorcall_offset = offsetof(FunctionObject, vectorcall);
  FunctionType.tp_call = PyVectorcall_Call;
  FunctionType.tp_traverse = FunctionTraverse;
  FunctionType.tp_clear = FunctionClear;
  FunctionType.tp_dealloc = FunctionDealloc;
  FunctionType.tp_repr = FunctionRepr;
  FunctionType.tp_descr_get = FunctionDescrGet;
  FunctionType.tp_methods = kFunctionMethods;
  FunctionType.tp_getset = kFunctionGetSet;
  FunctionType.tp_members = kFunctionMembers;
  FunctionType.tp_dictoffset = offsetof(FunctionObject, dict);
  FunctionType.tp_weaklistoffset = offsetof(FunctionObject, weakreflist);

  if (PyType_Ready(&CompiledModuleType) < 0 || PyType_Ready(&FunctionType) < 0) return false;
  if (PyModule_AddObjectRef(extension, "CompiledModule", reinterpret_cast<PyObject*>(&CompiledModuleType)) < 0 ||
      PyModule_AddObjectRef(extension, "Function", reinterpret_cast<PyObject*>(&FunctionType)) < 0) {
    return false;
  }
  return true;
}

PyObject* NewCompiledModule(std::unique_ptr<ModuleCode> code, PyObject* extras) {
  auto* self = PyObject_GC_New(CompiledModuleObject, &CompiledModuleType);
  if (self == nullptr) return nullptr;
  self->code = code.release();
  self->extras = extras ? Py_NewRef(extras) : nullptr;
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace ppy
