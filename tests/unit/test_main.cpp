// The unit tests' main: one embedded CPython for every test.
#include <Python.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "absl/status/status.h"
#include "compiler/ast_reader.h"
#include "tests/unit/test_util.h"
#include "vm/gil.h"
#include "vm/loader.h"
#include "vm/verify.h"
#include "vm/interpreter.h"

namespace ppy::testing {

Compiled::~Compiled() { Py_XDECREF(globals); }

const FunctionCode& Compiled::function(const std::string& name) const {
  for (const auto& fn : result.code->functions) {
    if (fn->name == name) return *fn;
  }
  ADD_FAILURE() << "no compiled function " << name;
  static FunctionCode empty;
  return empty;
}

std::unique_ptr<Compiled> Compile(const std::string& source) {
  auto compiled = std::make_unique<Compiled>();
  PyObject* tree = ParseSource(source, "test.ppy");
  if (tree == nullptr) {
    PyErr_Print();
    ADD_FAILURE() << "syntax error";
    return compiled;
  }
  compiled->result = CompileModule(tree, "test.ppy", "test", /*regions=*/false, /*object_code_as_python=*/false);
  Py_DECREF(tree);
  compiled->globals = PyDict_New();
  PyDict_SetItemString(compiled->globals, "__name__", PyUnicode_FromString("test"));
  PyDict_SetItemString(compiled->globals, "__builtins__", PyEval_GetBuiltins());
  Status verified = VerifyModule(*compiled->result.code);
  EXPECT_TRUE(verified.ok()) << verified;
  Status prepared = PrepareModule(*compiled->result.code, compiled->globals);
  EXPECT_TRUE(prepared.ok()) << prepared;
  return compiled;
}

std::string ExceptionText() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return "<failed without an exception>";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  PyObject* message = value ? PyObject_Str(value) : nullptr;
  if (message != nullptr) {
    text += std::string(": ") + PyUnicode_AsUTF8(message);
    Py_DECREF(message);
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return text;
}

std::string Repr(PyObject* object) {
  PyObject* repr = PyObject_Repr(object);
  std::string text = repr ? PyUnicode_AsUTF8(repr) : "<repr failed>";
  Py_XDECREF(repr);
  return text;
}

std::string Call(const Compiled& compiled, const std::string& name, const std::vector<Value>& args, bool nogil) {
  const FunctionCode& fn = compiled.function(name);
  Value result;
  bool ok;
  if (nogil) {
    NogilScope released;
    ok = CallTyped(fn, args.data(), &result);
  } else {
    ok = CallTyped(fn, args.data(), &result);
  }
  if (!ok) return ExceptionText();
  PyObject* boxed = BoxValue(fn.result, result);
  std::string text = Repr(boxed);
  Py_DECREF(boxed);
  return text;
}

std::string PythonEval(const std::string& expression) {
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* math = PyImport_ImportModule("math");
  PyDict_SetItemString(globals, "math", math);
  Py_XDECREF(math);
  PyObject* value = PyRun_String(expression.c_str(), Py_eval_input, globals, globals);
  Py_DECREF(globals);
  if (value == nullptr) return ExceptionText();
  std::string text = Repr(value);
  Py_DECREF(value);
  return text;
}

}  // namespace ppy::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  PyConfig_SetBytesString(&config, &config.home, PPY_PYTHON_HOME);
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) Py_ExitStatusException(status);
  int result = RUN_ALL_TESTS();
  Py_Finalize();
  return result;
}
