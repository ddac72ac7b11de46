// ppy._ppy: the VM, as the Python package sees it. It is imported when the first
// .ppy module loads, on every warm import; the compiler is a separate extension,
// ppy._compiler, loaded only to build. The two share nothing but bytes: the
// compiler serializes an entry, and this reads it back like any cache entry.
//
//   load(data, ppy_version) -> CompiledModule (verified, not yet attached)
//   digest(data) -> str: the cache's 128-bit content digest
//   set_profiling(enabled)

#include <Python.h>

#include <algorithm>
#include <map>
#include <string>

#include "asmjit-backend/code_cache.h"
#include "asmjit-backend/jit.h"
#include "build_id.h"
#include "regions/region_function.h"
#include "vm/function_object.h"
#include "vm/gil.h"
#include "vm/interpreter.h"
#include "vm/tiering.h"
#include "vm/serialize.h"

namespace ppy {
namespace {

PyObject* g_entry_error = nullptr;  // ppy._ppy.EntryError

PyObject* RaiseEntryError(const char* kind, const std::string& message) {
  PyObject* value = Py_BuildValue("(ss#)", kind, message.data(), static_cast<Py_ssize_t>(message.size()));
  if (value != nullptr) {
    PyErr_SetObject(g_entry_error, value);
    Py_DECREF(value);
  }
  return nullptr;
}

PyObject* Load(PyObject*, PyObject* args) {
  Py_buffer data;
  const char* ppy_version;
  if (!PyArg_ParseTuple(args, "y*s:load", &data, &ppy_version)) return nullptr;
  EntryProblem problem;
  StatusOr<Entry> entry =
      ParseEntry(std::string_view(static_cast<const char*>(data.buf), data.len), ppy_version, &problem);
  PyBuffer_Release(&data);
  if (!entry.ok()) {
    if (PyErr_Occurred()) PyErr_Clear();
    return RaiseEntryError(problem == EntryProblem::kVersion ? "version" : "corrupt", std::string(entry.status().message()));
  }
  PyObject* extras = PyDict_New();
  if (extras == nullptr) return nullptr;
  for (const auto& [tag, payload] : entry->extra_sections) {
    PyObject* bytes = PyBytes_FromStringAndSize(payload.data(), payload.size());
    int stored = bytes != nullptr ? PyDict_SetItemString(extras, tag.c_str(), bytes) : -1;
    Py_XDECREF(bytes);
    if (stored < 0) {
      Py_DECREF(extras);
      return nullptr;
    }
  }
  PyObject* module = NewCompiledModule(std::move(entry->module), extras);
  Py_DECREF(extras);
  return module;
}

PyObject* Digest(PyObject*, PyObject* arg) {
  Py_buffer data;
  if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0) return nullptr;
  std::string digest = Digest128(std::string_view(static_cast<const char*>(data.buf), data.len));
  PyBuffer_Release(&data);
  return PyUnicode_FromStringAndSize(digest.data(), digest.size());
}

PyObject* SetProfilingFromPython(PyObject*, PyObject* arg) {
  int enabled = PyObject_IsTrue(arg);
  if (enabled < 0) return nullptr;
  SetProfiling(enabled != 0);
  Py_RETURN_NONE;
}

PyObject* g_jit_listener = nullptr;

void ForwardJitEvent(const std::string& event) {
  if (g_jit_listener == nullptr) return;
  PyObject* result = PyObject_CallFunction(g_jit_listener, "s", event.c_str());
  if (result == nullptr) PyErr_WriteUnraisable(g_jit_listener);
  Py_XDECREF(result);
}

PyObject* SetJitListener(PyObject*, PyObject* listener) {
  Py_XSETREF(g_jit_listener, listener == Py_None ? nullptr : Py_NewRef(listener));
  jit::SetListener(g_jit_listener ? ForwardJitEvent : nullptr);
  if (g_jit_listener != nullptr) {
    regions::SetRegionListener([](const std::string& event) { ForwardJitEvent(event); });
  } else {
    regions::SetRegionListener(nullptr);
  }
  Py_RETURN_NONE;
}

// The compiled function `name` of an attached module, or null with an error:
// the first of that name, or the one of that qualified name (an element
// type's own code of an element-generic function, `dot[f32]`).
const FunctionCode* AttachedFunction(PyObject* module, const char* name, const char* caller) {
  const ModuleCode& code = *reinterpret_cast<CompiledModuleObject*>(module)->code;
  for (const auto& fn : code.functions) {
    if (fn->name != name && fn->qualname != name) continue;
    if (code.globals == nullptr) {
      PyErr_Format(PyExc_RuntimeError, "%s() needs an attached module", caller);
      return nullptr;
    }
    return fn.get();
  }
  PyErr_Format(PyExc_KeyError, "no compiled function %s", name);
  return nullptr;
}

// `values` ({parameter: int}, or None) as the known values of fn's value
// specialization, sorted by register; false with an error for a parameter
// that is not one of fn.value_params.
bool ParseValues(const FunctionCode& fn, PyObject* values, KnownValues* known) {
  if (values == Py_None) return true;
  if (!PyDict_Check(values)) {
    PyErr_SetString(PyExc_TypeError, "values must be a dict {parameter: int}");
    return false;
  }
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(values, &pos, &key, &value)) {
    const char* param = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
    if (param == nullptr) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a parameter name must be a str");
      return false;
    }
    int reg = -1;
    for (uint8_t candidate : fn.value_params) {
      if (fn.params[candidate].name == param) reg = candidate;
    }
    if (reg < 0) {
      PyErr_Format(PyExc_ValueError, "%s has no int parameter %s that it never assigns: nothing to specialize on",
                   fn.name.c_str(), param);
      return false;
    }
    const long long number = PyLong_AsLongLong(value);
    if (number == -1 && PyErr_Occurred()) return false;
    known->emplace_back(reg, number);
  }
  std::sort(known->begin(), known->end());
  return true;
}

// jit_listing(compiled_module, name, values=None) -> the machine code ppy
// compiles for it: the general code, or with `values` ({parameter: int}) the
// value specialization the interpreter enters only with exactly those values;
// the guards it relies on first, as comments.
PyObject* JitListing(PyObject*, PyObject* args) {
  PyObject* module;
  const char* name;
  PyObject* values = Py_None;
  if (!PyArg_ParseTuple(args, "O!s|O:jit_listing", &CompiledModuleType, &module, &name, &values)) return nullptr;
  const FunctionCode* fn = AttachedFunction(module, name, "jit_listing");
  KnownValues known;
  if (fn == nullptr || !ParseValues(*fn, values, &known)) return nullptr;
  jit::Blob blob;
  std::string listing, error;
  std::vector<jit::JitGuard> guards;
  if (!jit::CompileBlob(*fn, &blob, &listing, &error, known, &guards)) {
    PyErr_SetString(PyExc_RuntimeError, error.c_str());
    return nullptr;
  }
  std::string header;
  if (!known.empty()) {
    header = "; specialized for " + DescribeValues(*fn, known) + ": entered only when the frame holds " +
             "exactly these values (the interpreter's check before it enters machine code);\n" +
             "; any other values run the general code\n";
  }
  for (const jit::JitGuard& guard : guards) {
    header += "; guard, line " + std::to_string(fn->LineAt(guard.pc)) + ": " + guard.what + "\n";
  }
  return PyUnicode_FromString((header + listing).c_str());
}

// [(line, text)] for each guard in `guards`, or null with an error.
PyObject* GuardList(const FunctionCode& fn, const std::vector<jit::JitGuard>& guards) {
  PyObject* list = PyList_New(0);
  for (const jit::JitGuard& guard : guards) {
    PyObject* item = list ? Py_BuildValue("(is)", fn.LineAt(guard.pc), guard.what.c_str()) : nullptr;
    if (item == nullptr || PyList_Append(list, item) < 0) {
      Py_XDECREF(item);
      Py_XDECREF(list);
      return nullptr;
    }
    Py_DECREF(item);
  }
  return list;
}

// jit_guards(compiled_module, name) -> (general, special): the guards, as
// [(line, text)], of the general machine code of the function, and of the
// value specialization this process made of it (None if none), for `ppy run
// --trace`. The code is compiled again to say so: machine code mapped from
// the cache carries no such list, and a compile gives the same code each
// time. None for both where the function has no machine code.
PyObject* JitGuards(PyObject*, PyObject* args) {
  PyObject* module;
  const char* name;
  if (!PyArg_ParseTuple(args, "O!s:jit_guards", &CompiledModuleType, &module, &name)) return nullptr;
  const FunctionCode* fn = AttachedFunction(module, name, "jit_guards");
  if (fn == nullptr) return nullptr;
  const FunctionRuntime& runtime = *fn->runtime;
  jit::Blob blob;
  std::string error;
  std::vector<jit::JitGuard> guards;
  if (runtime.jit_state.load(std::memory_order_acquire) != JitState::kCompiled ||
      !jit::CompileBlob(*fn, &blob, nullptr, &error, {}, &guards)) {
    return Py_BuildValue("(OO)", Py_None, Py_None);
  }
  PyObject* general = GuardList(*fn, guards);
  if (general == nullptr) return nullptr;
  if (runtime.special_state.load(std::memory_order_acquire) != JitState::kCompiled) {
    return Py_BuildValue("(NO)", general, Py_None);
  }
  KnownValues known;
  for (int k = 0; k < runtime.special_count; ++k) known.emplace_back(runtime.special_regs[k], runtime.special_values[k]);
  std::vector<jit::JitGuard> special_guards = {
      {-1, "the frame holds exactly " + DescribeValues(*fn, known) +
              " (checked before each entry: other values run the general code)"}};
  std::vector<jit::JitGuard> more;
  if (!jit::CompileBlob(*fn, &blob, nullptr, &error, known, &more)) return Py_BuildValue("(NO)", general, Py_None);
  special_guards.insert(special_guards.end(), more.begin(), more.end());
  PyObject* special = GuardList(*fn, special_guards);
  if (special == nullptr) {
    Py_DECREF(general);
    return nullptr;
  }
  return Py_BuildValue("(NN)", general, special);
}

const ModuleCode* AttachedCode(PyObject* module) {
  const ModuleCode* code = reinterpret_cast<CompiledModuleObject*>(module)->code;
  if (code->globals == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "the compiled module must be attached first");
    return nullptr;
  }
  return code;
}

// jit_build(compiled_module, ppy_version, key) -> bytes: machine code for every
// function, for the cache.
PyObject* JitBuild(PyObject*, PyObject* args) {
  PyObject* module;
  const char *version, *key;
  if (!PyArg_ParseTuple(args, "O!ss:jit_build", &CompiledModuleType, &module, &version, &key)) return nullptr;
  const ModuleCode* code = AttachedCode(module);
  if (code == nullptr) return nullptr;
  StatusOr<std::string> data = jit::BuildMachineCode(*code, version, key);
  if (!data.ok()) return RaiseEntryError("corrupt", data.status().message());
  return PyBytes_FromStringAndSize(data->data(), data->size());
}

// jit_load(compiled_module, data, ppy_version, key) -> how many functions got code.
PyObject* JitLoad(PyObject*, PyObject* args) {
  PyObject* module;
  Py_buffer data;
  const char *version, *key;
  if (!PyArg_ParseTuple(args, "O!y*ss:jit_load", &CompiledModuleType, &module, &data, &version, &key)) return nullptr;
  const ModuleCode* code = AttachedCode(module);
  if (code == nullptr) {
    PyBuffer_Release(&data);
    return nullptr;
  }
  StatusOr<int> loaded =
      jit::LoadMachineCode(*code, std::string_view(static_cast<const char*>(data.buf), data.len), version, key);
  PyBuffer_Release(&data);
  if (!loaded.ok()) return RaiseEntryError("corrupt", loaded.status().message());
  return PyLong_FromLong(*loaded);
}

// jit_wait(compiled_module, code_path, lock_path, ppy_version, key): machine code
// is being built by another process; run on the interpreter until it appears.
PyObject* JitWait(PyObject*, PyObject* args) {
  PyObject* module;
  const char *path, *lock, *version, *key;
  if (!PyArg_ParseTuple(args, "O!ssss:jit_wait", &CompiledModuleType, &module, &path, &lock, &version, &key)) {
    return nullptr;
  }
  ModuleCode* code = reinterpret_cast<CompiledModuleObject*>(module)->code;
  code->pending_code_path = path;
  code->pending_lock_path = lock;
  code->pending_version = version;
  code->pending_key = key;
  for (const auto& fn : code->functions) {
    if (fn->runtime->jit_state == JitState::kNone) fn->runtime->jit_state = JitState::kPending;
  }
  Py_RETURN_NONE;
}

PyObject* JitMode(PyObject*, PyObject*) {
  switch (g_tiering.mode) {
    case JitMode::kOff: return PyUnicode_FromString("off");
    case JitMode::kEager: return PyUnicode_FromString("eager");
    default: return PyUnicode_FromString("hot");
  }
}

// exec_main(code, namespace): runs a file's module code as `python FILE` runs
// it, at the top of the thread's recursion count. `ppy run` reaches the
// module through its launcher's frames (runpy, the command line, the hook:
// about ten), which CPython's count would charge to the program, so that a
// recursion met the limit that many frames sooner than under `python FILE`.
// The count they took is given back for the run and taken again after it; a
// limit the program sets meanwhile keeps the difference (sys.setrecursionlimit
// keeps each thread's depth as the count says it).
PyObject* ExecMain(PyObject*, PyObject* args) {
  PyObject *code, *namespace_;
  if (!PyArg_ParseTuple(args, "O!O!:exec_main", &PyCode_Type, &code, &PyDict_Type, &namespace_)) return nullptr;
  PyThreadState* thread = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030C0000
  const int taken = thread->py_recursion_limit - thread->py_recursion_remaining;
  thread->py_recursion_remaining += taken;
#else
  const int taken = thread->recursion_limit - thread->recursion_remaining;
  thread->recursion_remaining += taken;
#endif
  PyObject* result = PyEval_EvalCode(code, namespace_, namespace_);
#if PY_VERSION_HEX >= 0x030C0000
  thread->py_recursion_remaining -= taken;
#else
  thread->recursion_remaining -= taken;
#endif
  return result;
}

PyMethodDef kMethods[] = {
    {"exec_main", ExecMain, METH_VARARGS,
     "exec_main(code, namespace): exec() at the top of the recursion count, as `python FILE` runs a file"},
    {"jit_build", JitBuild, METH_VARARGS, "jit_build(compiled_module, ppy_version, key) -> bytes"},
    {"jit_load", JitLoad, METH_VARARGS, "jit_load(compiled_module, data, ppy_version, key) -> functions mapped"},
    {"jit_wait", JitWait, METH_VARARGS, "jit_wait(compiled_module, code_path, lock_path, ppy_version, key)"},
    {"jit_mode", JitMode, METH_NOARGS, "jit_mode() -> 'off', 'hot' or 'eager' (PPY_JIT)"},
    {"jit_listing", JitListing, METH_VARARGS, "jit_listing(compiled_module, name, values=None) -> str: the machine code"},
    {"jit_guards", JitGuards, METH_VARARGS,
     "jit_guards(compiled_module, name) -> (general, special): the guards its machine code relies on"},
    {"set_jit_listener", SetJitListener, METH_O,
     "set_jit_listener(callable or None): JIT and region events for --trace"},
    {"digest", Digest, METH_O, "digest(data) -> 32 hex digits: the cache's content digest"},
    {"set_profiling", SetProfilingFromPython, METH_O, "set_profiling(enabled): time every call of a compiled function"},
    {"load", Load, METH_VARARGS, "load(data, ppy_version) -> CompiledModule, verified; attach() it to run it"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "ppy._ppy", "The ppy VM.", -1, kMethods, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace
}  // namespace ppy

PyMODINIT_FUNC PyInit__ppy() {
  PyObject* module = PyModule_Create(&ppy::kModule);
  if (module == nullptr) return nullptr;
  ppy::jit::Install();
  ppy::LearnMainThread();
  if (!ppy::InitFunctionTypes(module) || !ppy::regions::InstallRegionTier(module)) {
    Py_DECREF(module);
    return nullptr;
  }
  ppy::g_entry_error = PyErr_NewExceptionWithDoc(
      "ppy._ppy.EntryError", "A cache entry that cannot be used: args are (kind, message), kind 'corrupt' or 'version'.",
      PyExc_ValueError, nullptr);
  if (ppy::g_entry_error == nullptr || PyModule_AddObjectRef(module, "EntryError", ppy::g_entry_error) < 0 ||
      PyModule_AddIntConstant(module, "BYTECODE_VERSION", ppy::kBytecodeVersion) < 0 ||
      PyModule_AddStringConstant(module, "BUILD_ID", PPY_BUILD_ID) < 0 ||
      PyModule_AddStringConstant(module, "JIT_TARGET", ppy::jit::Target().c_str()) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
