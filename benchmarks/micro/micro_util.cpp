#include "benchmarks/micro/micro_util.h"

#include <cstdio>

#include "compiler/ast_reader.h"
#include "vm/instr.h"
#include "vm/loader.h"
#include "vm/verify.h"

namespace ppy::micro {

bool g_failed = false;

Module::~Module() { Py_XDECREF(globals); }

const FunctionCode* Module::function(const std::string& name) const {
  for (const auto& fn : result.code->functions) {
    if (fn->name == name) return fn.get();
  }
  return nullptr;
}

std::string TakeException() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return "";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  PyObject* message = value ? PyObject_Str(value) : nullptr;
  if (message != nullptr) {
    text += std::string(": ") + PyUnicode_AsUTF8(message);
    Py_DECREF(message);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return text;
}

std::unique_ptr<Module> CompileSource(const std::string& source, std::string* error, bool prepare) {
  auto module = std::make_unique<Module>();
  PyObject* tree = ParseSource(source, "micro.ppy");
  if (tree == nullptr) {
    *error = "syntax error: " + TakeException();
    return nullptr;
  }
  module->result = CompileModule(tree, "micro.ppy", "micro", /*regions=*/false, /*object_code_as_python=*/false);
  Py_DECREF(tree);
  for (const FunctionReport& report : module->result.functions) {
    if (!report.compiled) {
      *error = report.name + " did not compile: " + report.reason;
      return nullptr;
    }
  }
  module->globals = PyDict_New();
  PyDict_SetItemString(module->globals, "__name__", PyUnicode_FromString("micro"));
  PyDict_SetItemString(module->globals, "__builtins__", PyEval_GetBuiltins());
  if (Status verified = VerifyModule(*module->result.code); !verified.ok()) {
    *error = "verifier: " + std::string(verified.message());
    return nullptr;
  }
  if (!prepare) return module;
  if (Status prepared = PrepareModule(*module->result.code, module->globals); !prepared.ok()) {
    *error = "prepare: " + std::string(prepared.message());
    return nullptr;
  }
  return module;
}

int64_t LoopInstructions(const FunctionCode& fn) {
  for (size_t pc = 0; pc < fn.code.size(); ++pc) {
    const Instr& in = fn.code[pc];
    if (HasFlag(in.op, kFlagJump) && in.d >= 0 && static_cast<size_t>(in.d) <= pc) {
      return static_cast<int64_t>(pc) - in.d + 1;
    }
  }
  return 0;
}

void Fail(benchmark::State& state, const std::string& why) {
  g_failed = true;
  std::fprintf(stderr, "ppy_micro_benchmarks: %s\n", why.c_str());
  state.SkipWithError(why.c_str());
}

}  // namespace ppy::micro
