// The micro suite's main: one embedded CPython (as the unit tests have), the
// machine-code tier's hooks installed but the JIT off (each benchmark says
// which tier it runs), then Google Benchmark.
#include <Python.h>
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "asmjit-backend/jit.h"
#include "vm/tiering.h"

namespace ppy::micro {
extern bool g_failed;
}  // namespace ppy::micro

namespace {

// --benchmark_min_time in the spelling this Google Benchmark reads: 1.7 takes
// seconds as a plain number ("0.01"), 1.8 and later want a unit ("0.01s", or
// "10x" for iterations). Either spelling given is rewritten to the library's,
// so that scripts/test.sh runs the same command on Debian 12 and 13.
std::string MinTimeForThisLibrary(const std::string& arg) {
  const std::string flag = "--benchmark_min_time=";
  if (arg.rfind(flag, 0) != 0 || arg.size() == flag.size()) return arg;
  std::string value = arg.substr(flag.size());
#if PPY_BENCHMARK_VERSION_MAJOR == 1 && PPY_BENCHMARK_VERSION_MINOR < 8
  if (value.back() == 's') value.pop_back();
#else
  if (value.back() != 's' && value.back() != 'x') value += 's';
#endif
  return flag + value;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (std::string& arg : args) arg = MinTimeForThisLibrary(arg);
  std::vector<char*> pointers;
  for (std::string& arg : args) pointers.push_back(arg.data());
  int count = static_cast<int>(pointers.size());
  benchmark::Initialize(&count, pointers.data());
  if (benchmark::ReportUnrecognizedArguments(count, pointers.data())) return 1;

  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  PyConfig_SetBytesString(&config, &config.home, PPY_PYTHON_HOME);
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) Py_ExitStatusException(status);

  ppy::jit::Install();
  ppy::g_tiering.mode = ppy::JitMode::kOff;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Not finalized: the compiled modules the benchmarks keep in statics hold
  // Python objects, and the process ends here anyway.
  return ppy::micro::g_failed ? 1 : 0;
}
