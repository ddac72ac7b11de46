// Interpreter dispatch: what one executed instruction costs on the interpreter
// alone (no machine code), per kind of instruction. Each benchmark runs a loop
// whose body is straight-line code of one kind, so time / (trips x body
// instructions) is the cost of fetching, dispatching and executing one
// instruction of that kind. A change to the dispatch loop or to an
// instruction's handler shows up here first, before the whole-program suite.
#include <Python.h>
#include <benchmark/benchmark.h>

#include <string>

#include "benchmarks/micro/micro_util.h"
#include "vm/interpreter.h"
#include "vm/runtime.h"
#include "vm/tiering.h"

namespace ppy::micro {
namespace {

constexpr const char* kLoops = R"(
from ppy import Buffer

def int_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total = total + i * 3 - (i & 7)
    return total

def float_loop(n: int) -> float:
    x = 0.0
    for i in range(n):
        x = x * 0.5 + 1.25
    return x

def buffer_loop(xs: Buffer[float], n: int) -> float:
    for i in range(n):
        xs[i] = xs[i] * 2.0 + 1.0
    return xs[0]

def object_loop(items: list, n: int) -> object:
    acc = items[0]
    for i in range(n):
        acc = acc + items[1]
    return acc
)";

constexpr int64_t kTrips = 10000;

// The module every dispatch benchmark runs, compiled once.
Module* Loops(std::string* error) {
  static std::unique_ptr<Module> module = CompileSource(kLoops, error);
  if (module == nullptr && error->empty()) *error = "the loops did not compile";
  return module.get();
}

// Runs `name` kTrips times around its loop with `args` (the trip count last)
// on the interpreter, and reports time per executed loop instruction.
void RunLoop(benchmark::State& state, const char* name, Value* args) {
  std::string error;
  Module* module = Loops(&error);
  const FunctionCode* fn = module ? module->function(name) : nullptr;
  if (fn == nullptr) return Fail(state, error.empty() ? std::string("no function ") + name : error);
  int64_t body = LoopInstructions(*fn);
  if (body == 0) return Fail(state, std::string(name) + " has no loop");
  g_tiering.mode = JitMode::kOff;  // the interpreter alone
  for (auto _ : state) {
    Value result;
    if (!Interpret(*fn, args, &result)) return Fail(state, TakeException());
    if (fn->result == ValueType::kObject) Py_DECREF(result.o);
    benchmark::DoNotOptimize(result.i);
  }
  state.SetItemsProcessed(state.iterations() * kTrips * body);
  state.counters["insns_per_trip"] = static_cast<double>(body);
  state.counters["time_per_insn"] = TimePer(static_cast<double>(kTrips * body));
}

// MUL_I, ADD_I, AND_I, SUB_I (integer arithmetic with overflow checks) and
// FORLOOP_INC.
void BM_InterpretIntArithmetic(benchmark::State& state) {
  Value args[1];
  args[0].i = kTrips;
  RunLoop(state, "int_loop", args);
}
BENCHMARK(BM_InterpretIntArithmetic);

// MUL_F, ADD_F and FORLOOP_INC.
void BM_InterpretFloatArithmetic(benchmark::State& state) {
  Value args[1];
  args[0].i = kTrips;
  RunLoop(state, "float_loop", args);
}
BENCHMARK(BM_InterpretFloatArithmetic);

// LOAD_F64 and STORE_F64 (bounds-checked, through a borrowed array('d')
// view), MUL_F, ADD_F, FORLOOP_INC. The borrow itself is outside the timed
// call: see buffer_bench.cpp.
void BM_InterpretBufferLoadStore(benchmark::State& state) {
  std::string error;
  Module* module = Loops(&error);
  const FunctionCode* fn = module ? module->function("buffer_loop") : nullptr;
  if (fn == nullptr) return Fail(state, error);
  PyObject* array = PyRun_String("__import__('array').array('d', [0.0]) * 10000", Py_eval_input,
                                 module->globals, module->globals);
  if (array == nullptr) return Fail(state, TakeException());
  Py_buffer raw;
  BufferView view;
  if (!AcquireBuffer(array, *fn, fn->params[0], &raw, &view)) {
    Py_DECREF(array);
    return Fail(state, TakeException());
  }
  Value args[2];
  args[0].u = &view;
  args[1].i = kTrips;
  RunLoop(state, "buffer_loop", args);
  PyBuffer_Release(&raw);
  Py_DECREF(array);
}
BENCHMARK(BM_InterpretBufferLoadStore);

// Object-mode instructions: BOX_I of the index, GETITEM on a list and
// BINARY_O '+' on Python ints, through CPython's abstract API with reference
// counting.
void BM_InterpretObjectMode(benchmark::State& state) {
  PyObject* items = Py_BuildValue("[ii]", 1, 2);
  Value args[2];
  args[0].o = items;
  args[1].i = kTrips;
  RunLoop(state, "object_loop", args);
  Py_DECREF(items);
}
BENCHMARK(BM_InterpretObjectMode);

}  // namespace
}  // namespace ppy::micro
