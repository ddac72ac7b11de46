// JIT compile time against bytecode size: how long jit::CompileBlob takes to
// turn a function of 10, 100 and 1000 statements into relocatable machine
// code, reported as bytecode instructions compiled per second. Compile time
// should grow linearly with size; a pass that goes quadratic shows up as a
// falling rate at 1000.
#include <benchmark/benchmark.h>

#include <string>

#include "asmjit-backend/jit.h"
#include "benchmarks/micro/micro_util.h"

namespace ppy::micro {
namespace {

// A straight-line function of `statements` statements mixing int and float
// arithmetic, a buffer store and a comparison, the mix of a numeric kernel.
std::string StraightLineSource(int64_t statements) {
  // Literals come from small sets: every distinct constant takes a register,
  // and the instruction format addresses 256.
  std::string source = "from ppy import Buffer\n\ndef generated(xs: Buffer[float], n: int, x: float) -> float:\n";
  source += "    i = n\n";
  for (int64_t s = 0; s < statements; ++s) {
    std::string small = std::to_string(s % 8);
    switch (s % 4) {
      case 0: source += "    i = i * 3 + " + small + "\n"; break;
      case 1: source += "    x = x * 0.5 + " + small + ".25\n"; break;
      case 2: source += "    xs[" + small + "] = x\n"; break;
      default: source += "    if i > " + small + ":\n        x = x - 1.0\n"; break;
    }
  }
  source += "    return x + i\n";
  return source;
}

void BM_JitCompile(benchmark::State& state) {
  std::string error;
  std::unique_ptr<Module> module = CompileSource(StraightLineSource(state.range(0)), &error);
  if (module == nullptr) return Fail(state, error);
  const FunctionCode& fn = *module->function("generated");
  size_t code_bytes = 0;
  for (auto _ : state) {
    jit::Blob blob;
    if (!jit::CompileBlob(fn, &blob, nullptr, &error)) return Fail(state, error);
    code_bytes = blob.bytes.size();
    benchmark::DoNotOptimize(blob.bytes.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(fn.code.size()));
  state.counters["bytecode_insns"] = static_cast<double>(fn.code.size());
  state.counters["machine_code_bytes"] = static_cast<double>(code_bytes);
}
BENCHMARK(BM_JitCompile)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ppy::micro
