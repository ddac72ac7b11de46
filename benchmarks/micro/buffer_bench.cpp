// Buffer borrow and release: what every call with a Buffer[float] argument pays
// before and after the function runs. AcquireBuffer asks the exporter for its
// buffer (PyObject_GetBuffer), checks the format, dimensions and writability
// against the parameter and fills the view; PyBuffer_Release hands it back. Here
// the exporter is an array.array('d'), the most common one without numpy.
#include <Python.h>
#include <benchmark/benchmark.h>

#include <string>

#include "benchmarks/micro/micro_util.h"
#include "vm/runtime.h"

namespace ppy::micro {
namespace {

constexpr const char* kBufferFunctions = R"(
from ppy import Buffer

def total(xs: Buffer[float]) -> float:
    s = 0.0
    for i in range(len(xs)):
        s += xs[i]
    return s

def scale(xs: Buffer[float], k: float) -> None:
    for i in range(len(xs)):
        xs[i] = xs[i] * k
)";

// Borrows and releases a 1000-element array('d') as the first parameter of
// `name`: a read-only view for `total`, a writable one for `scale` (which
// stores into it).
void RunBorrow(benchmark::State& state, const char* name) {
  std::string error;
  static std::unique_ptr<Module> module = CompileSource(kBufferFunctions, &error);
  const FunctionCode* fn = module ? module->function(name) : nullptr;
  if (fn == nullptr) return Fail(state, error.empty() ? std::string("no function ") + name : error);
  PyObject* array =
      PyRun_String("__import__('array').array('d', [1.0]) * 1000", Py_eval_input, module->globals, module->globals);
  if (array == nullptr) return Fail(state, TakeException());
  for (auto _ : state) {
    Py_buffer raw;
    BufferView view;
    if (!AcquireBuffer(array, *fn, fn->params[0], &raw, &view)) {
      Fail(state, TakeException());
      break;
    }
    benchmark::DoNotOptimize(view.data);
    PyBuffer_Release(&raw);
  }
  Py_DECREF(array);
  state.SetItemsProcessed(state.iterations());
}

void BM_BorrowReadOnlyBuffer(benchmark::State& state) { RunBorrow(state, "total"); }
BENCHMARK(BM_BorrowReadOnlyBuffer);

void BM_BorrowWritableBuffer(benchmark::State& state) { RunBorrow(state, "scale"); }
BENCHMARK(BM_BorrowWritableBuffer);

}  // namespace
}  // namespace ppy::micro
