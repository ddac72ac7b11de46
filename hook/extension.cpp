// ppy._ppy: the extension module that joins the compiler and the VM to the
// Python package. It is imported only when a .ppy module is first loaded, so
// `import ppy` itself stays cheap.
//
//   compile(source, filename, module_name) -> (tree, functions, diagnostics, code)
//   serialize(code, ppy_version, abi, key, extras) -> bytes
//   load(data, ppy_version) -> CompiledModule (verified, not yet attached)
//   read_header(data) -> (format, ppy_version, abi, key)
//   render_diagnostic(diagnostic, filename, source) -> str

#include <Python.h>

#include <map>
#include <string>

#include "build_id.h"
#include "compiler/ast_reader.h"
#include "compiler/compile.h"
#include "compiler/diagnostics.h"
#include "vm/function_object.h"
#include "vm/interpreter.h"
#include "vm/serialize.h"

namespace ppy {
namespace {

PyObject* g_entry_error = nullptr;  // ppy._ppy.EntryError

const char* kCodeCapsule = "ppy.ModuleCode";

void DeleteCode(PyObject* capsule) {
  delete static_cast<ModuleCode*>(PyCapsule_GetPointer(capsule, kCodeCapsule));
}

std::string BytesOf(PyObject* object) {
  char* data;
  Py_ssize_t size;
  if (PyBytes_AsStringAndSize(object, &data, &size) < 0) return {};
  return std::string(data, size);
}

PyObject* LocTuple(const Loc& loc) { return Py_BuildValue("(iiii)", loc.line, loc.col, loc.end_line, loc.end_col); }

PyObject* Compile(PyObject*, PyObject* args) {
  PyObject* source;
  const char* filename;
  const char* module_name;
  if (!PyArg_ParseTuple(args, "Sss:compile", &source, &filename, &module_name)) return nullptr;
  std::string text = BytesOf(source);
  PyObject* tree = ParseSource(text, filename);
  if (tree == nullptr) return nullptr;
  CompileResult result = CompileModule(tree, filename, module_name);
  if (PyErr_Occurred()) {
    Py_DECREF(tree);
    return nullptr;
  }
  PyObject* functions = PyList_New(0);
  for (const FunctionReport& report : result.functions) {
    PyObject* item = Py_BuildValue("{s:s,s:i,s:i,s:i,s:O,s:O,s:s,s:N}", "name", report.name.c_str(), "line",
                                   report.line, "statement", report.statement_index, "index", report.code_index,
                                   "compiled", report.compiled ? Py_True : Py_False, "native",
                                   report.native_required ? Py_True : Py_False, "reason", report.reason.c_str(),
                                   "reason_loc", LocTuple(report.reason_loc));
    PyList_Append(functions, item);
    Py_DECREF(item);
  }
  PyObject* diagnostics = PyList_New(0);
  static const char* kSeverity[] = {"error", "warning", "note"};
  for (const Diagnostic& diagnostic : result.diagnostics) {
    PyObject* item = Py_BuildValue("(sNs)", kSeverity[static_cast<int>(diagnostic.severity)], LocTuple(diagnostic.loc),
                                   diagnostic.message.c_str());
    PyList_Append(diagnostics, item);
    Py_DECREF(item);
  }
  PyObject* code = PyCapsule_New(result.code.release(), kCodeCapsule, DeleteCode);
  return Py_BuildValue("(NNNN)", tree, functions, diagnostics, code);
}

PyObject* Serialize(PyObject*, PyObject* args) {
  PyObject* capsule;
  const char *ppy_version, *abi, *key;
  PyObject* extras;
  if (!PyArg_ParseTuple(args, "O!sssO!:serialize", &PyCapsule_Type, &capsule, &ppy_version, &abi, &key,
                        &PyDict_Type, &extras)) {
    return nullptr;
  }
  auto* code = static_cast<ModuleCode*>(PyCapsule_GetPointer(capsule, kCodeCapsule));
  if (code == nullptr) return nullptr;
  std::map<std::string, std::string> sections;
  PyObject *tag, *payload;
  Py_ssize_t pos = 0;
  while (PyDict_Next(extras, &pos, &tag, &payload)) {
    const char* name = PyUnicode_AsUTF8(tag);
    if (name == nullptr || !PyBytes_Check(payload)) {
      PyErr_SetString(PyExc_TypeError, "extras maps str tags to bytes");
      return nullptr;
    }
    sections[name] = BytesOf(payload);
  }
  EntryHeader header{kBytecodeVersion, ppy_version, abi, key};
  std::string data = SerializeEntry(header, *code, sections);
  if (PyErr_Occurred()) return nullptr;
  return PyBytes_FromStringAndSize(data.data(), data.size());
}

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
  absl::StatusOr<Entry> entry =
      ParseEntry(std::string_view(static_cast<const char*>(data.buf), data.len), ppy_version, &problem);
  PyBuffer_Release(&data);
  if (!entry.ok()) {
    if (PyErr_Occurred()) PyErr_Clear();
    return RaiseEntryError(problem == EntryProblem::kVersion ? "version" : "corrupt", std::string(entry.status().message()));
  }
  PyObject* extras = PyDict_New();
  for (const auto& [tag, payload] : entry->extra_sections) {
    PyObject* bytes = PyBytes_FromStringAndSize(payload.data(), payload.size());
    PyDict_SetItemString(extras, tag.c_str(), bytes);
    Py_DECREF(bytes);
  }
  PyObject* module = NewCompiledModule(std::move(entry->module), extras);
  Py_DECREF(extras);
  return module;
}

PyObject* ReadHeader(PyObject*, PyObject* args) {
  Py_buffer data;
  if (!PyArg_ParseTuple(args, "y*:read_header", &data)) return nullptr;
  absl::StatusOr<EntryHeader> header =
      ParseEntryHeader(std::string_view(static_cast<const char*>(data.buf), data.len));
  PyBuffer_Release(&data);
  if (!header.ok()) return RaiseEntryError("corrupt", std::string(header.status().message()));
  return Py_BuildValue("(Isss)", header->format, header->ppy_version.c_str(), header->abi.c_str(),
                       header->key.c_str());
}

PyObject* Render(PyObject*, PyObject* args) {
  const char* severity;
  Loc loc;
  const char* message;
  const char* filename;
  PyObject* source;
  if (!PyArg_ParseTuple(args, "s(iiii)ssS:render_diagnostic", &severity, &loc.line, &loc.col, &loc.end_line,
                        &loc.end_col, &message, &filename, &source)) {
    return nullptr;
  }
  Diagnostic diagnostic;
  diagnostic.severity = std::string_view(severity) == "warning" ? Severity::kWarning
                        : std::string_view(severity) == "note"  ? Severity::kNote
                                                                : Severity::kError;
  diagnostic.loc = loc;
  diagnostic.message = message;
  std::string text = RenderDiagnostic(diagnostic, filename, BytesOf(source));
  return PyUnicode_DecodeUTF8(text.data(), text.size(), "replace");
}

PyObject* SetProfilingFromPython(PyObject*, PyObject* arg) {
  int enabled = PyObject_IsTrue(arg);
  if (enabled < 0) return nullptr;
  SetProfiling(enabled != 0);
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"set_profiling", SetProfilingFromPython, METH_O, "set_profiling(enabled): time every call of a compiled function"},
    {"compile", Compile, METH_VARARGS, "compile(source, filename, module_name) -> (tree, functions, diagnostics, code)"},
    {"serialize", Serialize, METH_VARARGS, "serialize(code, ppy_version, abi, key, extras) -> bytes"},
    {"load", Load, METH_VARARGS, "load(data, ppy_version) -> CompiledModule, verified; attach() it to run it"},
    {"read_header", ReadHeader, METH_VARARGS, "read_header(data) -> (format, ppy_version, abi, key)"},
    {"render_diagnostic", Render, METH_VARARGS,
     "render_diagnostic(severity, (line, col, end_line, end_col), message, filename, source) -> str"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "ppy._ppy", "The ppy compiler and VM.", -1, kMethods, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace
}  // namespace ppy

PyMODINIT_FUNC PyInit__ppy() {
  PyObject* module = PyModule_Create(&ppy::kModule);
  if (module == nullptr) return nullptr;
  if (!ppy::InitFunctionTypes(module)) {
    Py_DECREF(module);
    return nullptr;
  }
  ppy::g_entry_error = PyErr_NewExceptionWithDoc(
      "ppy._ppy.EntryError", "A cache entry that cannot be used: args are (kind, message), kind 'corrupt' or 'version'.",
      PyExc_ValueError, nullptr);
  if (ppy::g_entry_error == nullptr || PyModule_AddObjectRef(module, "EntryError", ppy::g_entry_error) < 0 ||
      PyModule_AddIntConstant(module, "BYTECODE_VERSION", ppy::kBytecodeVersion) < 0 ||
      PyModule_AddStringConstant(module, "BUILD_ID", PPY_BUILD_ID) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
