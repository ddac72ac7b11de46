#include "regions/region_function.h"

#include <string>
#include <vector>

#include "regions/region_api.h"
#include "regions/region_code.h"
#include "vm/binding.h"
#include "vm/function_like.h"
#include "vm/python_compat.h"
#include "vm/region_tier.h"
#include "vm/status.h"

namespace ppy::regions {
namespace {

enum class ExecutorState : uint8_t { kNotLoaded, kReady, kUnavailable };

struct RegionFunctionObject {
  FunctionLike head;  // the Python function of the same def, names, __dict__
  PyObject* section;  // bytes: the module's region section
  Py_ssize_t index;
  RegionCode* code;   // owned: the parsed region (parameters, ops for `ppy dis`)
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
  PyObject* exception = TakeRaisedException();
  std::string text = exception ? Py_TYPE(exception)->tp_name : "error";
  PyObject* message = exception ? PyObject_Str(exception) : nullptr;
  if (message != nullptr && PyUnicode_Check(message)) text += std::string(": ") + PyUnicode_AsUTF8(message);
  Py_XDECREF(message);
  Py_XDECREF(exception);
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
  std::string qualname = PyUnicode_AsUTF8(self->head.qualname);
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
  return PyObject_Vectorcall(self->head.python, args, nargsf, kwnames);
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
  if (!BindArguments(self->head.python, num_params, code.num_posonly, code.num_kwonly, name_at, args,
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
  return TraverseFunctionLike(&reinterpret_cast<RegionFunctionObject*>(op)->head, visit, arg);
}

int Clear(PyObject* op) {
  ClearFunctionLike(&reinterpret_cast<RegionFunctionObject*>(op)->head);
  return 0;
}

void Dealloc(PyObject* op) {
  auto* self = reinterpret_cast<RegionFunctionObject*>(op);
  PyObject_GC_UnTrack(op);
  if (self->program != nullptr) self->api->release(self->program);
  delete self->code;
  Py_CLEAR(self->section);
  DeallocFunctionLike(&self->head);
}

PyObject* Repr(PyObject* op) {
  return PyUnicode_FromFormat("<ppy region %U at %p>", reinterpret_cast<RegionFunctionObject*>(op)->head.qualname, op);
}

PyObject* Dis(PyObject* op, PyObject*) {
  return PyUnicode_FromString(DescribeRegion(*reinterpret_cast<RegionFunctionObject*>(op)->code).c_str());
}

PyObject* GetRegion(PyObject*, void*) { Py_RETURN_TRUE; }
PyObject* GetTier(PyObject*, void*) { return PyUnicode_FromString("region"); }

PyMethodDef kMethods[] = {
    {"__reduce__", FunctionLikeReduce, METH_NOARGS, nullptr},
    {"__ppy_dis__", Dis, METH_NOARGS, "The region's op sequence, as `ppy dis` prints it."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kGetSet[] = {
    PPY_FUNCTION_LIKE_GETSET,
    {"__ppy_region__", GetRegion, nullptr, "True: calls run as an ATen op sequence.", nullptr},
    {"__ppy_tier__", GetTier, nullptr, "Where calls run: 'region'.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

PyTypeObject RegionFunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* DescribeRegionOfSection(PyObject* section, Py_ssize_t index) {
  std::unique_ptr<RegionCode> code = ParseRegionFromSection(section, index);
  if (code == nullptr) return nullptr;
  return PyUnicode_FromString(DescribeRegion(*code).c_str());
}

bool InstallRegionTier(PyObject* extension) {
  RegionFunctionType.tp_name = "function";  // as FunctionType: reads as a Python function
  RegionFunctionType.tp_basicsize = sizeof(RegionFunctionObject);
  SetFunctionLikeSlots(&RegionFunctionType);
  RegionFunctionType.tp_doc = "A function of a .ppy module run as an ATen op sequence.";
  RegionFunctionType.tp_traverse = Traverse;
  RegionFunctionType.tp_clear = Clear;
  RegionFunctionType.tp_dealloc = Dealloc;
  RegionFunctionType.tp_repr = Repr;
  RegionFunctionType.tp_methods = kMethods;
  RegionFunctionType.tp_getset = kGetSet;
  if (PyType_Ready(&RegionFunctionType) < 0 ||
      PyModule_AddObjectRef(extension, "RegionFunction", reinterpret_cast<PyObject*>(&RegionFunctionType)) < 0) {
    return false;
  }
  g_region_tier.new_function = NewRegionFunction;
  g_region_tier.stats = RegionFunctionStats;
  g_region_tier.describe = DescribeRegionOfSection;
  return true;
}

std::unique_ptr<RegionCode> ParseRegionFromSection(PyObject* section, Py_ssize_t index) {
  if (section == nullptr || !PyBytes_Check(section)) {
    PyErr_SetString(PyExc_ValueError, "ppy: the cache entry has no region section");
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
  return std::make_unique<RegionCode>(std::move((*parsed)[index]));
}

PyObject* NewRegionFunction(PyObject* section, Py_ssize_t index, PyObject* python) {
  if (!PyFunction_Check(python)) {
    PyErr_SetString(PyExc_TypeError, "ppy: region() decorates a Python function");
    return nullptr;
  }
  std::unique_ptr<RegionCode> code = ParseRegionFromSection(section, index);
  if (code == nullptr) return nullptr;
  auto* self = PyObject_GC_New(RegionFunctionObject, &RegionFunctionType);
  if (self == nullptr) return nullptr;
  self->section = Py_NewRef(section);
  self->index = index;
  self->code = code.release();
  self->state = ExecutorState::kNotLoaded;
  self->api = nullptr;
  self->program = nullptr;
  self->calls = 0;
  self->python_calls = 0;
  bool ready = InitFunctionLike(&self->head, RegionVectorcall, python);
  PyObject_GC_Track(self);
  if (!ready) {
    Py_DECREF(self);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(self);
}

PyObject* RegionFunctionStats(PyObject* function) {
  auto* self = reinterpret_cast<RegionFunctionObject*>(function);
  return Py_BuildValue("(OKnK)", self->head.name, self->calls, static_cast<Py_ssize_t>(self->code->instructions.size()),
                       self->python_calls);
}

void SetRegionListener(std::function<void(const std::string&)> listener) { Listener() = std::move(listener); }

}  // namespace ppy::regions
