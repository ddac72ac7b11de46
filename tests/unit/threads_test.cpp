// Compiled functions called from many threads at once, while they tier up: 8
// std::threads, each with a thread state of its own (PyGILState_Ensure), call
// the same functions through the VM's C++ entry (CallTyped) and hand the GIL
// over between calls, so that the tiering counters, the JIT's compile and
// install, and machine code run from every thread. Every result is compared
// with CPython's for the same source run as plain Python. The second test
// makes every call as a @ppy.nogil call does, releasing the GIL for it (the
// VM takes it back for object code, raises and compiles): there the threads
// run compiled code truly at once. scripts/tsan.sh runs this under
// ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "asmjit-backend/jit.h"
#include "tests/unit/test_util.h"
#include "vm/interpreter.h"
#include "vm/tiering.h"

namespace ppy {
namespace {

using testing::Compile;
using testing::IntValue;

const char* const kSource = R"(
def spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i % 7
    return total

def fib(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

def divide(a: int, b: int) -> int:
    return a // b + a % b

def mean(n: int, step: int) -> float:
    s = 0.0
    for i in range(n):
        s += i * step * 0.5
    return s / n

def label(n: int, k: int) -> str:
    parts = [n, k]
    return f"{n}:{parts!r}:{n % (k + 1)}"
)";

struct Case {
  std::string name;
  std::vector<int64_t> args;
  std::string expected;  // CPython's result
};

// The repr of `call` evaluated in `globals`, or "Type: message" (as
// testing::Call reports a compiled call's exception).
std::string PythonResult(PyObject* globals, const std::string& call) {
  PyObject* value = PyRun_String(call.c_str(), Py_eval_input, globals, globals);
  if (value == nullptr) {
    PyObject *type, *exc, *traceback;
    PyErr_Fetch(&type, &exc, &traceback);
    PyErr_NormalizeException(&type, &exc, &traceback);
    std::string text = reinterpret_cast<PyTypeObject*>(type)->tp_name;
    PyObject* message = PyObject_Str(exc);
    text += std::string(": ") + PyUnicode_AsUTF8(message);
    Py_XDECREF(message);
    Py_XDECREF(type);
    Py_XDECREF(exc);
    Py_XDECREF(traceback);
    return text;
  }
  PyObject* repr = PyObject_Repr(value);
  std::string text = PyUnicode_AsUTF8(repr);
  Py_DECREF(repr);
  Py_DECREF(value);
  return text;
}

std::string Arguments(const std::vector<int64_t>& args) {
  std::string text = "(";
  for (size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + std::to_string(args[i]);
  return text + ")";
}

void CallFromEightThreadsWhileTheyTierUp(bool nogil) {
  JitMode saved_mode = g_tiering.mode;
  jit::Install();
  g_tiering.mode = JitMode::kHot;  // compiled after 100 calls or 8,192 back edges, mid-run
  auto compiled = Compile(kSource);

  // CPython's results for the same source, as plain Python.
  PyObject* python = PyDict_New();
  PyDict_SetItemString(python, "__builtins__", PyEval_GetBuiltins());
  PyObject* ran = PyRun_String(kSource, Py_file_input, python, python);
  ASSERT_NE(ran, nullptr);
  Py_DECREF(ran);
  std::vector<Case> cases;
  for (int64_t n : {0, 1, 5, 100, 3000, 10000}) cases.push_back({"spin", {n}, ""});
  for (int64_t n : {0, 1, 2, 10, 15}) cases.push_back({"fib", {n}, ""});
  for (int64_t a : {-7, 0, 9, 100}) {
    for (int64_t b : {-3, 0, 4}) cases.push_back({"divide", {a, b}, ""});  // b == 0 raises
  }
  for (int64_t n : {0, 1, 50, 2000}) cases.push_back({"mean", {n, 3}, ""});  // n == 0 raises
  for (int64_t n : {-1, 0, 7}) cases.push_back({"label", {n, 2}, ""});
  for (Case& c : cases) c.expected = PythonResult(python, c.name + Arguments(c.args));
  Py_DECREF(python);

  constexpr int kThreads = 8;
  constexpr int kCalls = 2000;
  std::atomic<int> failures{0};
  std::vector<std::string> first_failure(kThreads);
  std::vector<std::thread> threads;
  // Nothing runs before every thread exists: they start together.
  std::atomic<bool> go{false};
  Py_BEGIN_ALLOW_THREADS
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      PyGILState_STATE gil = PyGILState_Ensure();
      uint64_t state = 0x9E3779B97F4A7C15u * (t + 1);
      for (int k = 0; k < kCalls; ++k) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        const Case& c = cases[state % cases.size()];
        std::vector<Value> args;
        for (int64_t a : c.args) args.push_back(IntValue(a));
        std::string got = testing::Call(*compiled, c.name, args, nogil);
        if (got != c.expected && failures.fetch_add(1) == 0) {
          first_failure[t] = c.name + Arguments(c.args) + ": " + got + ", CPython: " + c.expected;
        }
        // Another thread's turn (the GIL is handed over here, as CPython's
        // eval loop hands it over between bytecodes).
        if (k % 4 == 3) {
          PyThreadState* mine = PyEval_SaveThread();
          std::this_thread::yield();
          PyEval_RestoreThread(mine);
        }
      }
      PyGILState_Release(gil);
    });
  }
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  Py_END_ALLOW_THREADS

  EXPECT_EQ(failures.load(), 0);
  for (const std::string& failure : first_failure) {
    if (!failure.empty()) ADD_FAILURE() << failure;
  }
  // The functions that are called often enough did tier up while the threads ran.
  for (const char* name : {"spin", "fib", "divide"}) {
    EXPECT_EQ(compiled->function(name).runtime->jit_state, JitState::kCompiled) << name;
  }
  uint64_t calls = 0;
  for (const auto& fn : compiled->result.code->functions) calls += fn->runtime->calls;
  // With the GIL held every call counted (fib's recursive calls count too);
  // without it, threads' counts may overwrite each other's (RelaxedCounter).
  if (!nogil) {
    EXPECT_GE(calls, static_cast<uint64_t>(kThreads) * kCalls);
  }
  g_tiering.mode = saved_mode;
}

TEST(Threads, EightThreadsCallFunctionsWhileTheyTierUp) { CallFromEightThreadsWhileTheyTierUp(false); }

TEST(Threads, EightThreadsCallNogilWhileTheyTierUp) { CallFromEightThreadsWhileTheyTierUp(true); }

}  // namespace
}  // namespace ppy
