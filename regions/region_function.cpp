#include "regions/region_function.h"

#include <structmember.h>

#include <string>
#include <vector>

#include "regions/region_api.h"
#include "regions/region_code.h"
#include "vm/binding.h"
#include "vm/status.h"

namespace ppy::regions {
namespace {

enum class ExecutorState : uint8_t { kNotLoaded, kReady, kUnavailable };

struct RegionFunctionObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* python;   // the Python function of the same def
  PyObject* section;  // bytes: the module's region section
  Py_ssize_t index;
  RegionCode* code;   // owned: the parsed region (parameters, ops for `ppy dis`)
  PyObject* name;
  PyObject* qualname;
  PyObject* module_name;
  PyObject* dict;
  PyObject* weakreflist;
  ExecutorState state;
  const ExecutorApi* api;
  void* program;
  unsigned long long calls;
  unsigned long long python_calls;
};

std::function<void(const std::string&)>& Listener() {
  static auto* listener = new std::function<void(const std::string&)>();
  return *listener;
}

void Report(const std::string& event) {
  if (Listener()) Listener()(event);
}

// One note per process and reason, through ppy's own notes (rank prefix, PPY_QUIET).
void Note(const std::string& message) {
  PyObject* notes = PyImport_ImportModule("ppy._notes");
  if (notes != nullptr) {
    PyObject* result = PyObject_CallMethod(notes, "note", "s", message.c_str());
    Py_XDECREF(result);
    Py_DECREF(notes);
  }
  PyErr_Clear();
}

std::string CurrentExceptionText() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "error";
  PyObject* message = value ? PyObject_Str(value) : nullptr;
  if (message != nullptr && PyUnicode_Check(message)) text += std::string(": ") + PyUnicode_AsUTF8(message);
  Py_XDECREF(message);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  PyErr_Clear();
  return text;
}

std::string AttributeText(PyObject* object, const char* name) {
  PyObject* value = PyObject_GetAttrString(object, name);
  std::string text = value && PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : "?";
  Py_XDECREF(value);
  PyErr_Clear();
  return text;
}

// Loads the executor on a region's first call. torch comes first: the executor
// links libtorch_python, which needs torch's Python module initialized.
bool LoadExecutor(RegionFunctionObject* self) {
  std::string qualname = PyUnicode_AsUTF8(self->qualname);
  auto unavailable = [&](const std::string& why) {
    self->state = ExecutorState::kUnavailable;
    Note(Cat("the ATen region executor is unavailable (", why, "); ", qualname, " runs as plain Python"));
    return false;
  };
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return unavailable(CurrentExceptionText());
  std::string running = AttributeText(torch, "__version__");
  Py_DECREF(torch);
  PyObject* executor = PyImport_ImportModule("ppy._regions");
  if (executor == nullptr) return unavailable(CurrentExceptionText());
  PyObject* capsule = PyObject_GetAttrString(executor, "_api");
  Py_DECREF(executor);
  if (capsule == nullptr) return unavailable(CurrentExceptionText());
  auto* api = static_cast<const ExecutorApi*>(PyCapsule_GetPointer(capsule, kApiCapsule));
  Py_DECREF(capsule);
  if (api == nullptr) return unavailable(CurrentExceptionText());
  if (api->version != kApiVersion) return unavailable("an executor of another ppy build");
  if (running != api->torch_version) {
    return unavailable(Cat("built for torch ", api->torch_version, ", running torch ", running,
                           ": reinstall ppy to rebuild it"));
  }
  char* data;
  Py_ssize_t size;
  if (PyBytes_AsStringAndSize(self->section, &data, &size) < 0) return unavailable(CurrentExceptionText());
  void* program = api->load(data, static_cast<size_t>(size), static_cast<size_t>(self->index));
  if (program == nullptr) return unavailable(CurrentExceptionText());
  self->api = api;
  self->program = program;
  self->state = ExecutorState::kReady;
  Report(Format("region: %s runs as %zu ATen ops (executor for torch %s)", qualname.c_str(),
                self->code->instructions.size(), api->torch_version));
  return true;
}

PyObject* CallPython(RegionFunctionObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  ++self->python_calls;
  return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

PyObject* RegionVectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<RegionFunctionObject*>(callable);
  ++self->calls;
  if (self->state == ExecutorState::kNotLoaded) LoadExecutor(self);
  if (self->state != ExecutorState::kReady) return CallPython(self, args, nargsf, kwnames);
  const RegionCode& code = *self->code;
  const int num_params = static_cast<int>(code.params.size());
  PyObject* storage[16];
  std::vector<PyObject*> heap;
  PyObject** bound = storage;
  if (num_params > 16) {
    heap.resize(num_params);
    bound = heap.data();
  }
  auto name_at = [&code](int i) -> const std::string& { return code.params[i].name; };
  if (!BindArguments(self->python, num_params, code.num_posonly, code.num_kwonly, name_at, args,
                     PyVectorcall_NARGS(nargsf), kwnames, bound)) {
    return CallPython(self, args, nargsf, kwnames);
  }
  PyObject* result = self->api->run(self->program, bound);
  if (result == Py_NotImplemented) {
    Py_DECREF(result);
    return CallPython(self, args, nargsf, kwnames);
  }
  return result;
}

// ---- The type ---------------------------------------------------------------------------------

int Traverse(PyObject* op, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<RegionFunctionObject*>(op);
  Py_VISIT(self->python);
  Py_VISIT(self->dict);
  return 0;
}

int Clear(PyObject* op) {
  auto* self = reinterpret_cast<RegionFunctionObject*>(op);
  Py_CLEAR(self->python);
  Py_CLEAR(self->dict);
  return 0;
}

void Dealloc(PyObject* op) {
  auto* self = reinterpret_cast<RegionFunctionObject*>(op);
  PyObject_GC_UnTrack(op);
  if (self->weakreflist != nullptr) PyObject_ClearWeakRefs(op);
  Clear(op);
  if (self->program != nullptr) self->api->release(self->program);
  delete self->code;
  Py_CLEAR(self->section);
  Py_CLEAR(self->name);
  Py_CLEAR(self->qualname);
  Py_CLEAR(self->module_name);
  PyObject_GC_Del(op);
}

PyObject* Repr(PyObject* op) {
  return PyUnicode_FromFormat("<ppy region %U at %p>", reinterpret_cast<RegionFunctionObject*>(op)->qualname, op);
}

PyObject* DescrGet(PyObject* op, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(op);
  return PyMethod_New(op, obj);
}

// __code__, __defaults__, __annotations__ ... are the Python function's.
PyObject* GetAttr(PyObject* op, PyObject* name) {
  PyObject* value = PyObject_GenericGetAttr(op, name);
  if (value != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return value;
  PyErr_Clear();
  return PyObject_GetAttr(reinterpret_cast<RegionFunctionObject*>(op)->python, name);
}

PyObject* Reduce(PyObject* op, PyObject*) { return Py_NewRef(reinterpret_cast<RegionFunctionObject*>(op)->qualname); }

PyObject* Dis(PyObject* op, PyObject*) {
  return PyUnicode_FromString(DescribeRegion(*reinterpret_cast<RegionFunctionObject*>(op)->code).c_str());
}

PyObject* GetRegion(PyObject*, void*) { Py_RETURN_TRUE; }
PyObject* GetTier(PyObject*, void*) { return PyUnicode_FromString("region"); }
PyObject* GetPython(PyObject* op, void*) { return Py_NewRef(reinterpret_cast<RegionFunctionObject*>(op)->python); }
PyObject* GetName(PyObject* op, void*) { return Py_NewRef(reinterpret_cast<RegionFunctionObject*>(op)->name); }
PyObject* GetQualname(PyObject* op, void*) { return Py_NewRef(reinterpret_cast<RegionFunctionObject*>(op)->qualname); }
PyObject* GetDoc(PyObject* op, void*) {
  return PyObject_GetAttrString(reinterpret_cast<RegionFunctionObject*>(op)->python, "__doc__");
}

int SetString(PyObject** slot, PyObject* value, const char* what) {
  if (value == nullptr || !PyUnicode_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be set to a string object", what);
    return -1;
  }
  Py_XSETREF(*slot, Py_NewRef(value));
  return 0;
}
int SetName(PyObject* op, PyObject* value, void*) {
  return SetString(&reinterpret_cast<RegionFunctionObject*>(op)->name, value, "__name__");
}
int SetQualname(PyObject* op, PyObject* value, void*) {
  return SetString(&reinterpret_cast<RegionFunctionObject*>(op)->qualname, value, "__qualname__");
}
int SetDoc(PyObject* op, PyObject* value, void*) {
  return PyObject_SetAttrString(reinterpret_cast<RegionFunctionObject*>(op)->python, "__doc__", value);
}

PyMethodDef kMethods[] = {
    {"__reduce__", Reduce, METH_NOARGS, nullptr},
    {"__ppy_dis__", Dis, METH_NOARGS, "The region's op sequence, as `ppy dis` prints it."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kGetSet[] = {
    {"__name__", GetName, SetName, nullptr, nullptr},
    {"__qualname__", GetQualname, SetQualname, nullptr, nullptr},
    {"__doc__", GetDoc, SetDoc, nullptr, nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {"__ppy_region__", GetRegion, nullptr, "True: calls run as an ATen op sequence.", nullptr},
    {"__ppy_tier__", GetTier, nullptr, "Where calls run: 'region'.", nullptr},
    {"__ppy_python__", GetPython, nullptr, "The Python function of the same def.", nullptr},
    {"__wrapped__", GetPython, nullptr, "The Python function of the same def.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef kMembers[] = {
    {"__module__", T_OBJECT, offsetof(RegionFunctionObject, module_name), 0, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(RegionFunctionObject, vectorcall), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(RegionFunctionObject, weakreflist), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(RegionFunctionObject, dict), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

PyTypeObject RegionFunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool InitRegionFunctionType(PyObject* extension) {
  RegionFunctionType.tp_name = "ppy._ppy.RegionFunction";
  RegionFunctionType.tp_basicsize = sizeof(RegionFunctionObject);
  RegionFunctionType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                                Py_TPFLAGS_METHOD_DESCRIPTOR;
  RegionFunctionType.tp_doc = "A function of a .ppy module run as an ATen op sequence.";
  RegionFunctionType.tp_vectorcall_offset = offsetof(RegionFunctionObject, vectorcall);
  RegionFunctionType.tp_call = PyVectorcall_Call;
  RegionFunctionType.tp_traverse = Traverse;
  RegionFunctionType.tp_clear = Clear;
  RegionFunctionType.tp_dealloc = Dealloc;
  RegionFunctionType.tp_repr = Repr;
  RegionFunctionType.tp_descr_get = DescrGet;
  RegionFunctionType.tp_methods = kMethods;
  RegionFunctionType.tp_getset = kGetSet;
  RegionFunctionType.tp_members = kMembers;
  RegionFunctionType.tp_getattro = GetAttr;
  RegionFunctionType.tp_dictoffset = offsetof(RegionFunctionObject, dict);
  RegionFunctionType.tp_weaklistoffset = offsetof(RegionFunctionObject, weakreflist);
  if (PyType_Ready(&RegionFunctionType) < 0) return false;
  return PyModule_AddObjectRef(extension, "RegionFunction", reinterpret_cast<PyObject*>(&RegionFunctionType)) == 0;
}

PyObject* NewRegionFunction(PyObject* section, Py_ssize_t index, PyObject* python) {
  if (!PyBytes_Check(section) || !PyFunction_Check(python)) {
    PyErr_SetString(PyExc_TypeError, "ppy: region() decorates a Python function, given the region section");
    return nullptr;
  }
  StatusOr<std::vector<RegionCode>> parsed =
      ParseRegions(std::string_view(PyBytes_AS_STRING(section), PyBytes_GET_SIZE(section)));
  if (!parsed.ok()) {
    PyErr_Format(PyExc_ValueError, "ppy: %s", parsed.status().message().c_str());
    return nullptr;
  }
  if (index < 0 || index >= static_cast<Py_ssize_t>(parsed->size())) {
    PyErr_SetString(PyExc_IndexError, "no such region");
    return nullptr;
  }
  auto* self = PyObject_GC_New(RegionFunctionObject, &RegionFunctionType);
  if (self == nullptr) return nullptr;
  self->vectorcall = RegionVectorcall;
  self->python = Py_NewRef(python);
  self->section = Py_NewRef(section);
  self->index = index;
  self->code = new RegionCode(std::move((*parsed)[index]));
  self->name = PyObject_GetAttrString(python, "__name__");
  self->qualname = PyObject_GetAttrString(python, "__qualname__");
  self->module_name = PyObject_GetAttrString(python, "__module__");
  self->dict = nullptr;
  self->weakreflist = nullptr;
  self->state = ExecutorState::kNotLoaded;
  self->api = nullptr;
  self->program = nullptr;
  self->calls = 0;
  self->python_calls = 0;
  PyObject_GC_Track(self);
  if (self->name == nullptr || self->qualname == nullptr || self->module_name == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(self);
}

PyObject* RegionFunctionStats(PyObject* function) {
  auto* self = reinterpret_cast<RegionFunctionObject*>(function);
  return Py_BuildValue("(OKnK)", self->name, self->calls, static_cast<Py_ssize_t>(self->code->instructions.size()),
                       self->python_calls);
}

void SetRegionListener(std::function<void(const std::string&)> listener) { Listener() = std::move(listener); }

}  // namespace ppy::regions
