// Typed call overhead: what crossing a function boundary costs, from ppy code
// (CALL_FN, on the interpreter and in machine code) and from Python (calling
// the ppy Function object as CPython calls any function, with its argument
// checks and unboxing). The callee does one addition, so nearly all of the
// time is the call itself.
#include <Python.h>
#include <benchmark/benchmark.h>

#include <string>

#include "asmjit-backend/jit.h"
#include "benchmarks/micro/micro_util.h"
#include "vm/function_object.h"
#include "vm/interpreter.h"
#include "vm/tiering.h"

namespace ppy::micro {
namespace {

constexpr const char* kCalls = R"(
def tiny(x: int) -> int:
    return x + 1

def caller(n: int) -> int:
    total = 0
    for i in range(n):
        total = tiny(total)
    return total
)";

constexpr int64_t kCallsPerRun = 10000;

// `caller` makes kCallsPerRun calls to `tiny`; reported per call. On
// `machine_code`, both are compiled first and the calls run machine code to
// machine code.
void RunCaller(benchmark::State& state, bool machine_code) {
  std::string error;
  std::unique_ptr<Module> module = CompileSource(kCalls, &error);
  if (module == nullptr) return Fail(state, error);
  const FunctionCode* caller = module->function("caller");
  const FunctionCode* tiny = module->function("tiny");
  if (machine_code) {
    g_tiering.mode = JitMode::kHot;
    if (!jit::CompileAndInstall(*tiny, "micro") || !jit::CompileAndInstall(*caller, "micro")) {
      g_tiering.mode = JitMode::kOff;
      return Fail(state, "the JIT did not compile caller or tiny");
    }
  } else {
    g_tiering.mode = JitMode::kOff;
  }
  Value args[1];
  args[0].i = kCallsPerRun;
  for (auto _ : state) {
    Value result;
    if (!CallTyped(*caller, args, &result)) {
      g_tiering.mode = JitMode::kOff;
      return Fail(state, TakeException());
    }
    benchmark::DoNotOptimize(result.i);
  }
  g_tiering.mode = JitMode::kOff;
  if (machine_code && (caller->runtime->jit_entries == 0 || tiny->runtime->jit_entries == 0)) {
    return Fail(state, "caller or tiny never entered its machine code");
  }
  state.SetItemsProcessed(state.iterations() * kCallsPerRun);
  state.counters["time_per_call"] = TimePer(kCallsPerRun);
}

// ppy to ppy on the interpreter: a CALL_FN with one int argument, a new frame,
// RET_I.
void BM_CallPpyToPpyInterpreted(benchmark::State& state) { RunCaller(state, false); }
BENCHMARK(BM_CallPpyToPpyInterpreted);

// ppy to ppy in machine code. (Machine code's CALL_FN calls a helper that
// goes through CallModuleFunction and the interpreter's frame set-up, which
// then enters the callee's machine code: today this costs what the
// interpreted call does.)
void BM_CallPpyToPpyMachineCode(benchmark::State& state) { RunCaller(state, true); }
BENCHMARK(BM_CallPpyToPpyMachineCode);

// A module bound as the hook binds it, without the hook package: the compiled
// module object attached to a namespace, and `tiny` made a ppy Function from
// the Python function its def creates (CompiledModule.binder). Returns the
// namespace's `tiny` and `plain_tiny` (the same def left to CPython), new
// references.
bool BindTiny(PyObject** ppy_tiny, PyObject** plain_tiny, std::string* error) {
  static PyObject* types = nullptr;  // ppy._ppy's two types, readied once
  if (types == nullptr) {
    types = PyModule_New("ppy_micro_types");
    if (types == nullptr || !InitFunctionTypes(types)) {
      *error = TakeException();
      return false;
    }
  }
  std::unique_ptr<Module> module = CompileSource(kCalls, error, /*prepare=*/false);
  if (module == nullptr) return false;
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__name__", PyUnicode_FromString("micro"));
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* compiled = NewCompiledModule(std::move(module->result.code), nullptr);
  PyObject* attached = compiled ? PyObject_CallMethod(compiled, "attach", "O", globals) : nullptr;
  PyObject* ran = attached ? PyRun_String("def tiny(x: int) -> int:\n    return x + 1\n", Py_file_input, globals,
                                         globals)
                           : nullptr;
  PyObject* python = ran ? PyDict_GetItemString(globals, "tiny") : nullptr;  // borrowed
  PyObject* binder = python ? PyObject_CallMethod(compiled, "binder", "i", 0) : nullptr;
  *ppy_tiny = binder ? PyObject_CallOneArg(binder, python) : nullptr;
  *plain_tiny = *ppy_tiny ? Py_NewRef(python) : nullptr;
  if (*ppy_tiny != nullptr) PyDict_SetItemString(globals, "tiny", *ppy_tiny);
  Py_XDECREF(binder);
  Py_XDECREF(ran);
  Py_XDECREF(attached);
  Py_XDECREF(compiled);
  Py_DECREF(globals);
  if (*ppy_tiny == nullptr) *error = TakeException();
  return *ppy_tiny != nullptr;
}

// Calls `function(i)` from C through CPython's vectorcall, as a Python
// caller's CALL does.
void RunPythonCalls(benchmark::State& state, bool ppy) {
  PyObject *ppy_tiny, *plain_tiny;
  std::string error;
  if (!BindTiny(&ppy_tiny, &plain_tiny, &error)) return Fail(state, error);
  g_tiering.mode = JitMode::kOff;
  PyObject* function = ppy ? ppy_tiny : plain_tiny;
  PyObject* argument = PyLong_FromLong(41);
  for (auto _ : state) {
    PyObject* result = PyObject_Vectorcall(function, &argument, 1, nullptr);
    if (result == nullptr) {
      Fail(state, TakeException());
      break;
    }
    Py_DECREF(result);
  }
  Py_DECREF(argument);
  Py_DECREF(ppy_tiny);
  Py_DECREF(plain_tiny);
  state.SetItemsProcessed(state.iterations());
}

// Python to ppy: the Function's vectorcall checks and unboxes the int, runs
// `tiny` on the interpreter and boxes the result.
void BM_CallPythonToPpy(benchmark::State& state) { RunPythonCalls(state, true); }
BENCHMARK(BM_CallPythonToPpy);

// The reference: the same def called as plain CPython bytecode.
void BM_CallPythonToPython(benchmark::State& state) { RunPythonCalls(state, false); }
BENCHMARK(BM_CallPythonToPython);

}  // namespace
}  // namespace ppy::micro
