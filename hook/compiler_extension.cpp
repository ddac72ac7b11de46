// ppy._compiler: the compiler, loaded only when a module is built or checked
// (never on a warm import, so that its dependencies cost nothing there).
//
//   compile(source, filename, module_name, regions=False) -> (tree, functions, diagnostics, code, regions)
//   serialize(code, ppy_version, abi, key, extras) -> bytes
//   render_diagnostic(severity, loc, message, filename, source) -> str

#include <Python.h>

#include <map>
#include <string>

#include "build_id.h"
#include "compiler/ast_reader.h"
#include "compiler/compile.h"
#include "compiler/diagnostics.h"
#include "regions/region_code.h"
#include "vm/serialize.h"

namespace ppy {
namespace {

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
  int regions = 0;
  int object_code_as_python = 1;
  if (!PyArg_ParseTuple(args, "Sss|pp:compile", &source, &filename, &module_name, &regions, &object_code_as_python)) {
    return nullptr;
  }
  std::string text = BytesOf(source);
  PyObject* tree = ParseSource(text, filename);
  if (tree == nullptr) return nullptr;
  CompileResult result = CompileModule(tree, filename, module_name, regions != 0, object_code_as_python != 0);
  if (PyErr_Occurred()) {
    Py_DECREF(tree);
    return nullptr;
  }
  PyObject* functions = PyList_New(0);
  for (const FunctionReport& report : result.functions) {
    PyObject* item = Py_BuildValue("{s:s,s:i,s:i,s:i,s:O,s:O,s:s,s:N,s:s}", "name", report.name.c_str(), "line",
                                   report.line, "statement", report.statement_index, "index", report.code_index,
                                   "compiled", report.compiled ? Py_True : Py_False, "native",
                                   report.native_required ? Py_True : Py_False, "reason", report.reason.c_str(),
                                   "reason_loc", LocTuple(report.reason_loc), "python_entry",
                                   report.python_entry.c_str());
    PyObject* region = Py_BuildValue("{s:i,s:i,s:s,s:N}", "region", report.region_index, "region_ops",
                                     report.region_ops, "region_reason", report.region_reason.c_str(),
                                     "region_reason_loc", LocTuple(report.region_reason_loc));
    PyDict_Update(item, region);
    Py_DECREF(region);
    PyObject* dynamic = PyList_New(0);
    for (const std::string& local : report.dynamic_locals) {
      PyObject* text = PyUnicode_FromString(local.c_str());
      PyList_Append(dynamic, text);
      Py_DECREF(text);
    }
    PyDict_SetItemString(item, "dynamic", dynamic);
    Py_DECREF(dynamic);
    // An element-generic function: its generic parameter and (element type, index) per specialization.
    PyObject* specializations = PyTuple_New(static_cast<Py_ssize_t>(report.specializations.size()));
    for (size_t k = 0; k < report.specializations.size(); ++k) {
      PyTuple_SET_ITEM(specializations, static_cast<Py_ssize_t>(k),
                       Py_BuildValue("(ii)", report.specializations[k].first, report.specializations[k].second));
    }
    // ... and the element types' names, f64 (code_index) first, for `ppy check -v`.
    PyObject* generic_types = PyList_New(0);
    if (report.generic_param >= 0) {
      std::vector<int> elems = {static_cast<int>(ElemType::kF64)};
      for (const auto& [elem, index] : report.specializations) elems.push_back(elem);
      for (int elem : elems) {
        PyObject* name = PyUnicode_FromString(InfoOf(static_cast<ElemType>(elem)).name);
        PyList_Append(generic_types, name);
        Py_DECREF(name);
      }
    }
    PyObject* generic = Py_BuildValue("{s:i,s:N,s:N}", "generic_param", report.generic_param, "specializations",
                                      specializations, "generic_types", generic_types);
    PyDict_Update(item, generic);
    Py_DECREF(generic);
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
  PyObject* region_section = Py_NewRef(Py_None);
  if (!result.regions.empty()) {
    std::string section = regions::SerializeRegions(result.regions);
    Py_SETREF(region_section, PyBytes_FromStringAndSize(section.data(), section.size()));
  }
  return Py_BuildValue("(NNNNN)", tree, functions, diagnostics, code, region_section);
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

PyMethodDef kMethods[] = {
    {"compile", Compile, METH_VARARGS,
     "compile(source, filename, module_name, regions=False, object_code_as_python=True) -> (tree, functions, "
     "diagnostics, code, regions)"},
    {"serialize", Serialize, METH_VARARGS, "serialize(code, ppy_version, abi, key, extras) -> bytes"},
    {"render_diagnostic", Render, METH_VARARGS,
     "render_diagnostic(severity, (line, col, end_line, end_col), message, filename, source) -> str"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "ppy._compiler", "The ppy compiler.", -1, kMethods, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace
}  // namespace ppy

PyMODINIT_FUNC PyInit__compiler() {
  PyObject* module = PyModule_Create(&ppy::kModule);
  if (module == nullptr) return nullptr;
  if (PyModule_AddStringConstant(module, "BUILD_ID", PPY_BUILD_ID) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
