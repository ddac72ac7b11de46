// Loading a module from the cache, as an import that hits .ppy-cache/ does:
// reading a .ppyc (parse every section, then run the verifier over every
// function: nothing read is trusted before that) and mapping a .ppyjit (check
// the header and checksum, mmap each function's code executable). Reported
// in bytes per second of the entry, so that entries of different sizes
// compare.
#include <benchmark/benchmark.h>

#include <string>

#include "asmjit-backend/code_cache.h"
#include "asmjit-backend/jit.h"
#include "benchmarks/micro/micro_util.h"
#include "vm/serialize.h"
#include "vm/verify.h"

namespace ppy::micro {
namespace {

constexpr const char* kVersion = "micro-benchmark";
constexpr const char* kKey = "micro-key";

// A module of a few typical kernels, 16 functions in all.
std::string KernelModuleSource() {
  std::string source = "import math\nfrom ppy import Buffer\n";
  for (int k = 0; k < 4; ++k) {
    std::string n = std::to_string(k);
    source += "\ndef norm" + n + "(xs: Buffer[float], n: int) -> float:\n"
              "    total = 0.0\n    for i in range(n):\n        total += xs[i] * xs[i]\n"
              "    return math.sqrt(total)\n";
    source += "\ndef saxpy" + n + "(a: float, xs: Buffer[float], ys: Buffer[float], n: int) -> None:\n"
              "    for i in range(n):\n        ys[i] = a * xs[i] + ys[i]\n";
    source += "\ndef collatz" + n + "(x: int) -> int:\n    steps = 0\n    while x != 1:\n"
              "        if x % 2 == 0:\n            x = x // 2\n        else:\n            x = 3 * x + 1\n"
              "        steps += 1\n    return steps\n";
    source += "\ndef describe" + n + "(x: int) -> str:\n    return f\"{x!r:>6} {[x, 'two', 3.5]}\"\n";
  }
  return source;
}

Module* KernelModule(std::string* error) {
  static std::unique_ptr<Module> module = CompileSource(KernelModuleSource(), error);
  return module.get();
}

// ParseEntry: structure checks, decoding, and the verifier over every function.
void BM_LoadPpyc(benchmark::State& state) {
  std::string error;
  Module* module = KernelModule(&error);
  if (module == nullptr) return Fail(state, error);
  EntryHeader header{kBytecodeVersion, kVersion, "micro-abi", kKey};
  std::string entry = SerializeEntry(header, *module->result.code, {});
  for (auto _ : state) {
    EntryProblem problem;
    StatusOr<Entry> parsed = ParseEntry(entry, kVersion, &problem);
    if (!parsed.ok()) return Fail(state, std::string(parsed.status().message()));
    const ModuleCode* code = (*parsed).module.get();
    benchmark::DoNotOptimize(code);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(entry.size()));
  state.counters["entry_bytes"] = static_cast<double>(entry.size());
}
BENCHMARK(BM_LoadPpyc)->Unit(benchmark::kMicrosecond);

// The verifier alone, over the same module (its share of BM_LoadPpyc).
void BM_VerifyModule(benchmark::State& state) {
  std::string error;
  Module* module = KernelModule(&error);
  if (module == nullptr) return Fail(state, error);
  int64_t instructions = 0;
  for (const auto& fn : module->result.code->functions) instructions += static_cast<int64_t>(fn->code.size());
  for (auto _ : state) {
    Status verified = VerifyModule(*module->result.code);
    if (!verified.ok()) return Fail(state, std::string(verified.message()));
  }
  state.SetItemsProcessed(state.iterations() * instructions);
  state.counters["bytecode_insns"] = static_cast<double>(instructions);
}
BENCHMARK(BM_VerifyModule)->Unit(benchmark::kMicrosecond);

// LoadMachineCode: checksum, header checks, one mmap + mprotect per function
// (and the munmap of the code it replaces, as a reload would).
void BM_MapPpyjit(benchmark::State& state) {
  std::string error;
  Module* module = KernelModule(&error);
  if (module == nullptr) return Fail(state, error);
  StatusOr<std::string> built = jit::BuildMachineCode(*module->result.code, kVersion, kKey);
  if (!built.ok()) return Fail(state, std::string(built.status().message()));
  const std::string& data = *built;
  int functions = 0;
  for (auto _ : state) {
    StatusOr<int> loaded = jit::LoadMachineCode(*module->result.code, data, kVersion, kKey);
    if (!loaded.ok()) return Fail(state, std::string(loaded.status().message()));
    functions = *loaded;
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(data.size()));
  state.counters["entry_bytes"] = static_cast<double>(data.size());
  state.counters["functions_mapped"] = functions;
}
BENCHMARK(BM_MapPpyjit)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ppy::micro
