#include "fuzz/embedded_python.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "vm/function_object.h"
#include "vm/python_compat.h"

namespace ppy::fuzz {
namespace {

PyObject* g_extension = nullptr;  // stands in for ppy._ppy: owns the readied types
PyObject* g_template = nullptr;   // the Python function binder() and region() decorate

constexpr const char* kRegionSection = "RGNS";
constexpr Py_ssize_t kMaxRegionsTried = 64;

// Calls `module.name(*args)`; returns the result or nullptr with the exception set.
PyObject* CallMethod(PyObject* object, const char* name, PyObject* arg = nullptr) {
  PyObject* method = PyObject_GetAttrString(object, name);
  if (method == nullptr) return nullptr;
  PyObject* result = arg ? PyObject_CallOneArg(method, arg) : PyObject_CallNoArgs(method);
  Py_DECREF(method);
  return result;
}

// A call on a verified module that must not fail.
void MustSucceed(PyObject* object, const char* name, PyObject* arg = nullptr) {
  PyObject* result = CallMethod(object, name, arg);
  if (result == nullptr) Fail(std::string("CompiledModule.") + name + "() failed on a verified entry", TakeException());
  // str() of every result: the listings are what `ppy dis` prints.
  PyObject* text = PyObject_Str(result);
  Py_DECREF(result);
  if (text == nullptr) Fail(std::string("str() of CompiledModule.") + name + "()", TakeException());
  Py_DECREF(text);
}

// decorator(index)(template), as a compiled def's decorator runs; the function is
// repr'd and dropped, never called. Returns false when the decorator refused.
bool Bind(PyObject* module, const char* decorator, Py_ssize_t index) {
  PyObject* number = PyLong_FromSsize_t(index);
  PyObject* binder = CallMethod(module, decorator, number);
  Py_DECREF(number);
  if (binder == nullptr) return false;
  PyObject* function = PyObject_CallOneArg(binder, g_template);
  Py_DECREF(binder);
  if (function == nullptr) return false;
  PyObject* repr = PyObject_Repr(function);
  if (repr == nullptr) Fail(std::string("repr() of a function ") + decorator + "() made", TakeException());
  Py_DECREF(repr);
  Py_DECREF(function);
  return true;
}

}  // namespace

void InitEmbeddedPython() {
  if (Py_IsInitialized()) return;
  PyPreConfig preconfig;
  PyPreConfig_InitPythonConfig(&preconfig);
  preconfig.allocator = PYMEM_ALLOCATOR_MALLOC;
  preconfig.utf8_mode = 1;
  PyStatus status = Py_PreInitialize(&preconfig);
  if (PyStatus_Exception(status)) Py_ExitStatusException(status);

  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  PyConfig_SetBytesString(&config, &config.home, PPY_PYTHON_HOME);
  config.install_signal_handlers = 0;
  config.site_import = 0;  // the standard library (ast) is all the compiler needs
  config.parse_argv = 0;
  config.write_bytecode = 0;
  status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) Py_ExitStatusException(status);

  g_extension = PyModule_New("ppy_fuzz_extension");
  if (g_extension == nullptr || !InitFunctionTypes(g_extension)) Fail("readying ppy's types", TakeException());
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* done = PyRun_String("def template(*args, **kwargs):\n    pass\n", Py_file_input, globals, globals);
  if (done == nullptr) Fail("defining the template function", TakeException());
  Py_DECREF(done);
  g_template = Py_NewRef(PyDict_GetItemString(globals, "template"));
  Py_DECREF(globals);
}

void Fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "\nppy fuzz: BUG: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  std::abort();
}

std::string TakeException() {
  PyObject* exception = TakeRaisedException();
  if (exception == nullptr) return "<no exception set>";
  std::string text;
  PyObject* type_name = PyType_GetQualName(Py_TYPE(exception));
  PyObject* message = PyObject_Str(exception);
  if (type_name != nullptr && PyUnicode_Check(type_name)) text = PyUnicode_AsUTF8(type_name);
  if (message != nullptr && PyUnicode_Check(message)) {
    const char* utf8 = PyUnicode_AsUTF8(message);
    if (utf8 != nullptr) text += std::string(": ") + utf8;
  }
  Py_XDECREF(type_name);
  Py_XDECREF(message);
  Py_DECREF(exception);
  PyErr_Clear();
  return text;
}

void ExerciseEntry(Entry& entry) {
  // _ppy.load: the extra sections become a dict of bytes.
  PyObject* extras = PyDict_New();
  bool has_regions = false;
  for (const auto& [tag, payload] : entry.extra_sections) {
    PyObject* bytes = PyBytes_FromStringAndSize(payload.data(), static_cast<Py_ssize_t>(payload.size()));
    if (bytes == nullptr || PyDict_SetItemString(extras, tag.c_str(), bytes) < 0) {
      Fail("building the extras dict", TakeException());
    }
    Py_DECREF(bytes);
    has_regions |= tag == kRegionSection;
  }
  size_t num_functions = entry.module->functions.size();
  PyObject* module = NewCompiledModule(std::move(entry.module), extras);
  Py_DECREF(extras);
  if (module == nullptr) Fail("NewCompiledModule", TakeException());

  // The hook: attach(globals) to the new module's namespace, then its defs run
  // with binder(i) / region(i) as their innermost decorators.
  PyObject* globals = PyDict_New();
  PyObject* name = PyUnicode_FromString("fuzzed");
  PyObject* file = PyUnicode_FromString("/fuzz/fuzzed.ppy");
  PyDict_SetItemString(globals, "__name__", name);
  PyDict_SetItemString(globals, "__file__", file);
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  Py_DECREF(name);
  Py_DECREF(file);
  MustSucceed(module, "attach", globals);
  for (size_t i = 0; i < num_functions; ++i) {
    if (!Bind(module, "binder", static_cast<Py_ssize_t>(i))) {
      Fail("binder(i)(function) failed on a verified entry", TakeException());
    }
  }
  // The region section is verified when a region is bound (or listed).
  for (Py_ssize_t i = 0; has_regions && i < kMaxRegionsTried; ++i) {
    if (!Bind(module, "region", i)) {
      PyErr_Clear();
      break;
    }
    PyObject* number = PyLong_FromSsize_t(i);
    PyObject* listing = CallMethod(module, "region_dis", number);
    Py_DECREF(number);
    if (listing == nullptr) Fail("region_dis(i) failed for a region region(i) bound", TakeException());
    Py_DECREF(listing);
  }
  // What `ppy dis` and `ppy run --trace` print.
  MustSucceed(module, "function_names");
  MustSucceed(module, "dis");
  MustSucceed(module, "tiers");
  MustSucceed(module, "stats");
  MustSucceed(module, "region_stats");

  Py_DECREF(module);
  Py_DECREF(globals);
  if (PyErr_Occurred()) Fail("an exception left set after a load", TakeException());
}

}  // namespace ppy::fuzz
