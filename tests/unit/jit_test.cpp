// The machine-code tier, case by case: compile, run, compare with the
// interpreter. Every case runs the same function both ways on the same inputs
// and expects the same result or the same exception (type and message).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "asmjit-backend/codegen.h"
#include "asmjit-backend/jit.h"
#include "vm/math_table.h"
#include "tests/unit/test_util.h"
#include "vm/interpreter.h"
#include "vm/tiering.h"

namespace ppy {
namespace {

using testing::Compile;
using testing::FloatValue;
using testing::IntValue;

// Runs `name` on the interpreter with `first`, then compiled with `second`
// (copies of the same inputs, for functions that write into their buffers),
// and returns both outcomes.
std::pair<std::string, std::string> BothWaysOnCopies(const testing::Compiled& compiled, const std::string& name,
                                                     const std::vector<Value>& first,
                                                     const std::vector<Value>& second) {
  const FunctionCode& fn = compiled.function(name);
  JitMode mode = g_tiering.mode;
  g_tiering.mode = JitMode::kOff;
  std::string interpreted = testing::Call(compiled, name, first);
  g_tiering.mode = JitMode::kHot;
  // (Machine code that could never be entered is not made: MachineCodeCanRun.)
  if (fn.runtime->jit_state != JitState::kCompiled) {
    EXPECT_EQ(jit::CompileAndInstall(fn, "test"), jit::MachineCodeCanRun(fn)) << name;
  }
  uint64_t entries = fn.runtime->jit_entries;
  std::string machine = testing::Call(compiled, name, second);
  // Not merely compiled: this call ran the machine code (unless its first
  // instruction is one the machine code leaves to the interpreter).
  if (fn.runtime->jit_enters_at_start) {
    EXPECT_GT(fn.runtime->jit_entries, entries) << name;
  }
  g_tiering.mode = mode;
  return {interpreted, machine};
}

std::pair<std::string, std::string> BothWays(const testing::Compiled& compiled, const std::string& name,
                                             const std::vector<Value>& args) {
  return BothWaysOnCopies(compiled, name, args, args);
}

void ExpectSame(const testing::Compiled& compiled, const std::string& name, const std::vector<Value>& args) {
  auto [interpreted, machine] = BothWays(compiled, name, args);
  EXPECT_EQ(interpreted, machine) << name;
}

class Jit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { jit::Install(); }
};

const std::vector<int64_t> kInts = {0, 1, -1, 2, -2, 3, 7, -7, 63, 64, 100, -100, 1 << 20, INT64_MAX, INT64_MIN,
                                    INT64_MAX - 1, (int64_t{1} << 53) + 1, -(int64_t{1} << 53) - 1};
const std::vector<double> kFloats = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e300, -1e-300, 1e-310, INFINITY,
                                     -INFINITY, NAN, 9007199254740993.0, 4.5e15};

TEST_F(Jit, IntegerInstructions) {
  auto compiled = Compile(R"(
def add(a: int, b: int) -> int: return a + b
def sub(a: int, b: int) -> int: return a - b
def mul(a: int, b: int) -> int: return a * b
def floordiv(a: int, b: int) -> int: return a // b
def mod(a: int, b: int) -> int: return a % b
def power(a: int, b: int) -> int: return a ** b
def truediv(a: int, b: int) -> float: return a / b
def bits(a: int, b: int) -> int: return (a & b) ^ (a | b)
def shl(a: int, b: int) -> int: return a << b
def shr(a: int, b: int) -> int: return a >> b
def smallest(a: int, b: int) -> int: return min(a, b)
def largest(a: int, b: int) -> int: return max(a, b)
def neg(a: int, b: int) -> int: return -a
def inv(a: int, b: int) -> int: return ~a
def absolute(a: int, b: int) -> int: return abs(a)
def compare(a: int, b: int) -> tuple: return (a < b, a <= b, a == b, a != b, a > b, a >= b)
def branch(a: int, b: int) -> int:
    if a < b: return 1
    if a <= b: return 2
    if a != b: return 3
    return 4
)");
  for (const char* name : {"add", "sub", "mul", "floordiv", "mod", "power", "truediv", "bits", "shl", "shr", "smallest",
                           "largest", "neg", "inv", "absolute", "compare", "branch"}) {
    for (int64_t a : kInts) {
      for (int64_t b : kInts) {
        if (std::string(name) == "power" && (b > 64 || b < -2)) continue;
        ExpectSame(*compiled, name, {IntValue(a), IntValue(b)});
      }
    }
  }
}

TEST_F(Jit, FloatInstructions) {
  auto compiled = Compile(R"(
import math
def add(a: float, b: float) -> float: return a + b
def sub(a: float, b: float) -> float: return a - b
def mul(a: float, b: float) -> float: return a * b
def div(a: float, b: float) -> float: return a / b
def floordiv(a: float, b: float) -> float: return a // b
def mod(a: float, b: float) -> float: return a % b
def power(a: float, b: float) -> float: return a ** b
def smallest(a: float, b: float) -> float: return min(a, b)
def largest(a: float, b: float) -> float: return max(a, b)
def neg(a: float, b: float) -> float: return -abs(a) + -b
def compare(a: float, b: float) -> tuple: return (a < b, a <= b, a == b, a != b, a > b, a >= b)
def branch(a: float, b: float) -> int:
    if not (a < b): return 1
    if not (a <= b): return 2
    if a == b: return 3
    return 4
def truth(a: float, b: float) -> bool: return bool(a) and not b
def to_int(a: float, b: float) -> int: return int(a)
def roots(a: float, b: float) -> float: return math.sqrt(a) + math.exp(b) + math.log(a)
def angles(a: float, b: float) -> float: return math.atan2(a, b) + math.sin(a) * math.cos(b)
def rounding(a: float, b: float) -> int: return math.floor(a) + math.ceil(b) + math.trunc(a)
def kinds(a: float, b: float) -> tuple: return (math.isnan(a), math.isinf(b), math.isfinite(a))
def hyp(a: float, b: float) -> float: return math.hypot(a, b) + math.fmod(a, b)
)");
  for (const char* name : {"add", "sub", "mul", "div", "floordiv", "mod", "power", "smallest", "largest", "neg",
                           "compare", "branch", "truth", "to_int", "roots", "angles", "rounding", "kinds", "hyp"}) {
    for (double a : kFloats) {
      for (double b : kFloats) ExpectSame(*compiled, name, {FloatValue(a), FloatValue(b)});
    }
  }
}

// 2.0 * x runs as x + x, and x / 2**k as x * 2**-k where 2**-k is normal
// (codegen.h, the MUL_F and DIV_F cases): both give the same bits for every
// float, the signed zeros, the infinities, NaN and the subnormals included.
TEST_F(Jit, DoublingAndHalvingByConstantsAreExact) {
  auto compiled = Compile(R"(
import math
def d1(a: float, b: float) -> float: return 2.0 * a
def d2(a: float, b: float) -> float: return b * 2.0
def d3(a: float, b: float) -> float: return math.copysign(1.0, 2.0 * a) + 2.0 * a * b
def d4(a: float, b: float) -> float: return -2.0 * a
def h1(a: float, b: float) -> float: return a / 2.0
def h2(a: float, b: float) -> float: return b / 0.25
def h3(a: float, b: float) -> float: return math.copysign(1.0, a / -4.0)
def h4(a: float, b: float) -> float: return b / 3.0
def h5(a: float, b: float) -> float: return a / 2.2250738585072014e-308
def h6(a: float, b: float) -> float: return b / 8.98846567431158e+307
def h7(a: float, b: float) -> float: return a / 4.9406564584124654e-324
def h8(a: float, b: float) -> float: return a / 1.0 + b / -1.0
def loop(a: float, b: float) -> float:
    x: float = a
    for i in range(40):
        x = 2.0 * x / 4.0 + b
    return x
)");
  for (const char* name : {"d1", "d2", "d3", "d4", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "loop"}) {
    for (double a : kFloats) {
      for (double b : kFloats) ExpectSame(*compiled, name, {FloatValue(a), FloatValue(b)});
    }
  }
}

TEST_F(Jit, MixedComparisonsAreExact) {
  auto compiled = Compile(R"(
def compare(f: float, i: int) -> tuple: return (f < i, f <= i, f > i, f >= i, f == i, f != i, i < f, i >= f)
def branch(f: float, i: int) -> int:
    if f < i: return 1
    if not (f >= i): return 2
    if f == i: return 3
    return 4
)");
  for (double f : kFloats) {
    for (int64_t i : kInts) {
      ExpectSame(*compiled, "compare", {FloatValue(f), IntValue(i)});
      ExpectSame(*compiled, "branch", {FloatValue(f), IntValue(i)});
    }
  }
}

TEST_F(Jit, LoopsOfEveryStep) {
  auto compiled = Compile(R"(
def total(start: int, stop: int, step: int) -> int:
    s = 0
    for i in range(start, stop, step):
        s += i
    return s
def counted(n: int, unused: int, k: int) -> int:
    s = 0
    for i in range(n):
        if i == k:
            continue
        s += i * i
        if s > 1000000:
            break
    else:
        s = -s
    return s
def spin(n: int, a: int, b: int) -> int:
    k = 0
    while k < n:
        k += 1
    return k
)");
  for (int64_t start : {-5, 0, 3, 100}) {
    for (int64_t stop : {-4, 0, 7, 100}) {
      for (int64_t step : {1, 2, -1, -3, 0}) {
        ExpectSame(*compiled, "total", {IntValue(start), IntValue(stop), IntValue(step)});
      }
    }
  }
  for (int64_t n : {0, 1, 10, 5000}) {
    ExpectSame(*compiled, "counted", {IntValue(n), IntValue(0), IntValue(3)});
    ExpectSame(*compiled, "spin", {IntValue(n), IntValue(0), IntValue(0)});
  }
  ExpectSame(*compiled, "total", {IntValue(INT64_MAX - 5), IntValue(INT64_MAX), IntValue(2)});
}

TEST_F(Jit, TypedCallsAndRecursion) {
  auto compiled = Compile(R"(
def fib(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
def hypot2(x: float, y: float) -> float:
    return x * x + y * y
def use(n: int, x: float) -> float:
    return hypot2(x, x) + fib(n)
)");
  for (int64_t n : {0, 1, 10, 20}) {
    ExpectSame(*compiled, "fib", {IntValue(n)});
    ExpectSame(*compiled, "use", {IntValue(n), FloatValue(1.5)});
  }
}

// Small callees machine code runs in place of their calls (InlinableCallee),
// behind the guard on the module's namespace version: the unit tests run
// without a namespace, so the test sets the version words itself. Overflows
// and a division by zero inside the inlined code make the real call.
TEST_F(Jit, InlinedCallsAgreeWithTheInterpreter) {
  auto compiled = Compile(R"(
def weight(i: int, j: int) -> float:
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)
def clamp(x: float, low: float, high: float) -> float:
    if x < low:
        return low
    if x > high:
        return high
    return x
def octant(k: int) -> int:
    return k // 8 + k % 8 * 100 + k % 4096 - k // 1
def total(n: int, shift: int) -> float:
    t = 0.0
    for i in range(n):
        t += weight(i + shift, i) * clamp(i * 0.1, -1.0, 2.0) + octant(i * 7919 + shift)
    return t
)");
  const FunctionCode& total = compiled->function("total");
  const FunctionCode& weight = compiled->function("weight");
  for (const char* name : {"weight", "clamp", "octant"}) {
    EXPECT_TRUE(jit::InlinableCallee(total, compiled->function(name))) << name;
  }
  EXPECT_FALSE(jit::InlinableCallee(total, total));
  auto& module = const_cast<ModuleCode&>(*total.module);
  uint64_t version = 7;
  module.versions.globals = &version;
  for (const auto& fn : module.functions) fn->runtime->globals_version = 7;
  for (int64_t shift : {int64_t{0}, int64_t{-40}, int64_t{-1}, int64_t{1} << 40, INT64_MAX / 2, INT64_MIN / 2,
                        INT64_MAX - 10}) {
    ExpectSame(*compiled, "total", {IntValue(60), IntValue(shift)});
  }
  // Machine code ran weight's code in place: its calls were not made.
  g_tiering.mode = JitMode::kHot;
  uint64_t calls = weight.runtime->calls;
  EXPECT_EQ(testing::Call(*compiled, "total", {IntValue(60), IntValue(0)}), testing::Call(*compiled, "total", {IntValue(60), IntValue(0)}));
  EXPECT_LT(weight.runtime->calls - calls, 10u);
  // The name no longer holds the callee (the version moved on): real calls.
  version = 8;
  calls = weight.runtime->calls;
  ExpectSame(*compiled, "total", {IntValue(60), IntValue(3)});
  EXPECT_GE(weight.runtime->calls - calls, 120u);
  g_tiering.mode = JitMode::kOff;
  module.versions.globals = nullptr;
}

// A value specialization (jit::Specialize) treats the int parameters that
// kept one value as constants; the interpreter enters it only with those
// values, and other values run the general code. (halves divides by d: by a
// power of two known there, a multiply, subnormal quotients included.)
TEST_F(Jit, ValueSpecializationsAgreeWithTheInterpreter) {
  const char* source = R"(
def divide(n: int, d: int) -> int:
    t = 0
    for k in range(-n, n):
        t += (k * 7) // d * 3 + (k * 5) % d
    return t
def limits(start: int, stop: int, step: int) -> int:
    t = 0
    for k in range(start, stop, step):
        t = t * 3 % 1000003 + k
    return t
def halves(n: int, d: int) -> float:
    t: float = 0.0
    for k in range(-n, n):
        t += (k * 0.37 + k * 1e-310) / d
    return t / d + 5e-324 / d
)";
  for (int64_t value : {int64_t{16}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{-4}, int64_t{-16}, int64_t{0},
                        int64_t{1} << 40, INT64_MIN, INT64_MAX}) {
    auto compiled = Compile(source);
    for (const char* name : {"divide", "limits", "halves"}) {
      const FunctionCode& fn = compiled->function(name);
      const int param = fn.num_params() - 1;  // d, step
      auto args = [&](int64_t v) {
        std::vector<Value> values = {IntValue(std::string(name) == "limits" ? -50 : 100), IntValue(50), IntValue(v)};
        values.resize(fn.num_params());
        values[param] = IntValue(v);
        return values;
      };
      g_tiering.mode = JitMode::kOff;
      const int64_t different = value == INT64_MAX ? value - 1 : value + 1;
      const std::string expected = testing::Call(*compiled, name, args(value));
      const std::string other = testing::Call(*compiled, name, args(different));
      ASSERT_EQ(fn.value_params.back(), param);
      FunctionRuntime& runtime = *fn.runtime;
      for (size_t k = 0; k < fn.value_params.size(); ++k) {
        runtime.seen[k].state = k + 1 == fn.value_params.size() ? FunctionRuntime::kOneValue : FunctionRuntime::kSeveral;
      }
      runtime.seen[fn.value_params.size() - 1].value = value;
      g_tiering.mode = JitMode::kHot;
      ASSERT_TRUE(runtime.jit_state == JitState::kCompiled || jit::CompileAndInstall(fn, "test")) << name;
      runtime.special_state = JitState::kCompiling;
      jit::Specialize(fn);
      ASSERT_EQ(runtime.special_state, JitState::kCompiled) << name << " " << value;
      uint64_t entries = runtime.special_entries;
      EXPECT_EQ(testing::Call(*compiled, name, args(value)), expected) << name << " " << value;
      EXPECT_GT(runtime.special_entries, entries) << name << " " << value;
      entries = runtime.special_entries;
      EXPECT_EQ(testing::Call(*compiled, name, args(different)), other) << name << " " << value;
      EXPECT_EQ(runtime.special_entries, entries) << name << " " << value;
      g_tiering.mode = JitMode::kOff;
    }
  }
}

// The value of a Python expression (with the builtins), a new reference.
PyObject* EvalExpression(const std::string& code) {
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* value = PyRun_String(code.c_str(), Py_eval_input, globals, globals);
  Py_DECREF(globals);
  EXPECT_NE(value, nullptr) << code;
  return value;
}

// A buffer argument built in Python, as the call boundary would borrow it.
struct BorrowedArray {
  PyObject* array = nullptr;
  Py_buffer raw{};
  BufferView view;
  BorrowedArray(const char* format, const std::string& values, bool readonly = false) {
    std::string code = std::string("__import__('array').array('") + format + "', " + values + ")";
    if (readonly) code = "memoryview(" + code + ".tobytes()).cast('" + format + "')";
    array = EvalExpression(code);
    PyObject_GetBuffer(array, &raw, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS);
    view.data = static_cast<char*>(raw.buf);
    const int64_t shape[1] = {raw.len / raw.itemsize}, strides[1] = {1};
    SetViewGeometry(&view, 1, shape, strides);
    view.readonly = raw.readonly;
    view.owner = array;
    view.exporter = readonly ? Exporter::kMemoryview : Exporter::kArray;
    view.format = format[0];
    switch (format[0]) {
      case 'd': view.elem = ElemType::kF64; break;
      case 'f': view.elem = ElemType::kF32; break;
      case 'q': view.elem = ElemType::kI64; break;
      case 'B': view.elem = ElemType::kU8; break;
      case 'i': view.elem = ElemType::kI32; break;
      case 'I': view.elem = ElemType::kU32; break;
      default: view.elem = ElemType::kI8; break;
    }
  }
  ~BorrowedArray() {
    PyBuffer_Release(&raw);
    Py_XDECREF(array);
  }
  Value value() {
    Value v;
    v.u = &view;
    return v;
  }
  std::string contents() {
    PyObject* repr = PyObject_Repr(array);
    std::string text = PyUnicode_AsUTF8(repr);
    Py_DECREF(repr);
    return text;
  }
};

// An N-d buffer argument: a memoryview of an array.array cast to `rows` x
// `cols` (C order; transposed when `transposed`, so that its last axis is
// strided), borrowed as the call boundary would borrow it.
struct BorrowedMatrix {
  PyObject* array = nullptr;
  Py_buffer raw{};
  BufferView view;
  BorrowedMatrix(const char* format, int rows, int cols, const std::string& values) {
    std::string code = std::string("memoryview(__import__('array').array('") + format + "', " + values +
                       ")).cast('B').cast('" + format + "', (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "))";
    array = EvalExpression(code);
    EXPECT_EQ(PyObject_GetBuffer(array, &raw, PyBUF_FORMAT | PyBUF_STRIDES), 0);
    view.data = static_cast<char*>(raw.buf);
    int64_t shape[2] = {raw.shape[0], raw.shape[1]};
    int64_t strides[2] = {raw.strides[0] / raw.itemsize, raw.strides[1] / raw.itemsize};
    SetViewGeometry(&view, 2, shape, strides);
    view.readonly = raw.readonly;
    view.owner = array;
    view.exporter = Exporter::kMemoryview;
    view.format = format[0];
    view.elem = format[0] == 'd'   ? ElemType::kF64
                : format[0] == 'B' ? ElemType::kU8
                : format[0] == 'Q' ? ElemType::kU64
                                   : ElemType::kI64;
  }
  ~BorrowedMatrix() {
    PyBuffer_Release(&raw);
    Py_XDECREF(array);
  }
  Value value() {
    Value v;
    v.u = &view;
    return v;
  }
  std::string contents() {
    PyObject* list = PyObject_CallMethod(array, "tolist", nullptr);
    PyObject* repr = PyObject_Repr(list);
    std::string text = PyUnicode_AsUTF8(repr);
    Py_DECREF(repr);
    Py_DECREF(list);
    return text;
  }
};

// N-d accesses in counted loops: range checks made once by the loop's guard
// (counter plus a constant, an unchanging row index), accesses folded into a
// row pointer (one per row, the constants in the addresses), and the guard or a narrow store failing halfway, where the
// interpreter must find every register it reads. Same results and the same
// exceptions (memoryview's words) both ways, and the same stores.
TEST_F(Jit, NdAccessesAgreeWithTheInterpreter) {
  auto compiled = Compile(R"(
from ppy import Buffer, u8, u64
def stencil(a: Buffer[float, 2], b: Buffer[float, 2], cols: int) -> float:
    s = 0.0
    for i in range(1, a.shape[0] - 1):
        for j in range(1, cols):
            b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
            s += b[i, j]
    return s
def wide(a: Buffer[float, 2], lo: int, hi: int) -> float:
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(lo, hi):
            s += a[i, j - 2] - a[i, j + 2] * 0.5 + a[i, j]
    return s
def rows(a: Buffer[float, 2], first: int) -> float:
    s = 0.0
    for i in range(first, a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i - 2, j] * j
    return s
def narrow(a: Buffer[u8, 2], k: int) -> int:
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = a[i, j] * k + j
    return a[a.shape[0] - 1, 0]
def big(a: Buffer[u64, 2]) -> int:
    s = 0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] % 1000
    return s
)");
  const std::string grid = "[0.5 * k for k in range(20)]";
  for (int64_t cols : std::vector<int64_t>{4, 5, 6, 0, -2}) {
    BorrowedMatrix a1("d", 4, 5, grid), b1("d", 4, 5, grid), a2("d", 4, 5, grid), b2("d", 4, 5, grid);
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "stencil", {a1.value(), b1.value(), IntValue(cols)},
                                                   {a2.value(), b2.value(), IntValue(cols)});
    EXPECT_EQ(interpreted, machine) << cols;
    EXPECT_EQ(b1.contents(), b2.contents()) << cols;
  }
  // (One row pointer for a[i, j - 2], a[i, j], a[i, j + 2]; one check of
  // the least and greatest offsets: below 0, past the end, inside.)
  for (auto [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {1, 3}, {2, 4}, {0, 5}, {3, 2}}) {
    BorrowedMatrix a("d", 4, 5, grid);
    ExpectSame(*compiled, "wide", {a.value(), IntValue(lo), IntValue(hi)});
  }
  for (int64_t first : std::vector<int64_t>{0, 1, 2, 3, 4, 6, -3}) {
    BorrowedMatrix a("d", 4, 5, grid);
    ExpectSame(*compiled, "rows", {a.value(), IntValue(first)});
  }
  for (int64_t k : std::vector<int64_t>{1, 3, 40, -1}) {
    const std::string bytes = "range(0, 120, 10)";
    BorrowedMatrix m1("B", 3, 4, bytes), m2("B", 3, 4, bytes);
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "narrow", {m1.value(), IntValue(k)}, {m2.value(), IntValue(k)});
    EXPECT_EQ(interpreted, machine) << k;
    EXPECT_EQ(m1.contents(), m2.contents()) << k;
  }
  // A u64 element beyond 2**63 - 1 raises where it is read (the load leaves
  // machine code, and the interpreter reads the offset machine code computed).
  for (const char* values : {"[1, 2, 3, 4, 5, 6]", "[1, 2, 3, 4, 2**64 - 1, 6]", "[2**63, 2, 3, 4, 5, 6]"}) {
    BorrowedMatrix m("Q", 2, 3, values);
    ExpectSame(*compiled, "big", {m.value()});
  }
}

// Inside `for i in range(k, n)` with a constant k >= 0 the machine code knows
// 0 <= i < n: i + 1 cannot overflow and (i + 1) % n needs no sign fixing. Loops
// that start elsewhere, and divisors the loop does not bound, keep every check.
TEST_F(Jit, FactsFromLoopBoundsKeepPythonsDivision) {
  auto compiled = Compile(R"(
def bounded(n: int) -> int:
    total: int = 0
    for i in range(n):
        total += (i + 1) % n * 7 + (i + 1) // n + i % n + i // n + (i + 1)
    return total
def from_one(n: int, d: int) -> int:
    total: int = 0
    for i in range(1, n):
        total += (i + 1) % d + i // d
    return total
def from_minus_five(n: int) -> int:
    total: int = 0
    for i in range(-5, n):
        total += (i + 1) % n + (i + 1) // n
    return total
def from_anywhere(k: int, n: int) -> int:
    total: int = 0
    for i in range(k, n):
        total += (i + 1) % n + (i + 1) // n
    return total
)");
  for (int64_t n : std::vector<int64_t>{-3, 0, 1, 2, 17, 1000}) {
    ExpectSame(*compiled, "bounded", {IntValue(n)});
    ExpectSame(*compiled, "from_minus_five", {IntValue(n)});
    for (int64_t d : std::vector<int64_t>{-7, -1, 0, 1, 3}) {
      ExpectSame(*compiled, "from_one", {IntValue(n), IntValue(d)});
    }
    for (int64_t k : std::vector<int64_t>{-10, -1, 0, 5}) {
      ExpectSame(*compiled, "from_anywhere", {IntValue(k), IntValue(n)});
    }
  }
  ExpectSame(*compiled, "from_anywhere", {IntValue(INT64_MAX - 3), IntValue(INT64_MAX)});
}

// buf[t + cols + i] with t + cols recomputed every iteration: the loop skips the
// computation when only hoisted accesses read it, and keeps it when a side exit
// may hand it to the interpreter first.
TEST_F(Jit, RecomputedBasesAgreeWithTheInterpreter) {
  auto compiled = Compile(R"(
from ppy import Buffer
def pairs(out: Buffer[float], rows: int, cols: int, probe: int) -> float:
    total: float = 0.0
    for r in range(rows):
        t: int = r * cols
        for i in range(cols):
            x: float = out[t + i] * out[t + (i + 1) % cols]
            out[t + cols + i] = x
            total += x + out[probe]
    return total
)");
  for (int64_t probe : std::vector<int64_t>{0, -1, 11, 12, -13}) {
    for (int64_t cols : std::vector<int64_t>{1, 3, 4}) {
      BorrowedArray o1("d", "[1.5 * k for k in range(12)]"), o2("d", "[1.5 * k for k in range(12)]");
      auto [interpreted, machine] =
          BothWaysOnCopies(*compiled, "pairs", {o1.value(), IntValue(2), IntValue(cols), IntValue(probe)},
                           {o2.value(), IntValue(2), IntValue(cols), IntValue(probe)});
      EXPECT_EQ(interpreted, machine) << cols << " " << probe;
      EXPECT_EQ(o1.contents(), o2.contents()) << cols << " " << probe;
    }
  }
}

// xs[int(v)]: on x86-64 the conversion's own check is left to the index check
// that follows it; every value int() rejects must still raise int()'s error.
// A negative index is normalized in its own register when nothing reads it
// afterwards, and must still reach the interpreter unchanged on an exit.
TEST_F(Jit, ConvertedAndNegativeIndexesAgreeWithTheInterpreter) {
  auto compiled = Compile(R"(
from ppy import Buffer
def pick(xs: Buffer[int], v: float) -> int:
    return xs[int(v)]
def tally(xs: Buffer[int], v: float) -> int:
    xs[int(v)] += 1
    return xs[0]
def doubled(xs: Buffer[int], i: int) -> int:
    j: int = i * 2
    return xs[j]
def twice(xs: Buffer[int], i: int) -> int:
    xs[i] = i
    xs[i] += i
    return xs[i] + i
)");
  const std::vector<double> values = {0.0, 2.7, -1.0, -7.5, -8.0, 6.9, 7.0, 1e300, -1e300, NAN, INFINITY, -INFINITY,
                                      -9223372036854775808.0, 9223372036854775808.0};
  for (double v : values) {
    BorrowedArray xs("q", "[10, 11, 12, 13, 14, 15, 16]");
    ExpectSame(*compiled, "pick", {xs.value(), FloatValue(v)});
    BorrowedArray t1("q", "[0] * 7"), t2("q", "[0] * 7");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "tally", {t1.value(), FloatValue(v)}, {t2.value(), FloatValue(v)});
    EXPECT_EQ(interpreted, machine) << v;
    EXPECT_EQ(t1.contents(), t2.contents()) << v;
  }
  for (int64_t i : std::vector<int64_t>{0, 3, -1, -3, -4, -5, 4, -8}) {
    BorrowedArray xs("q", "[10, 11, 12, 13, 14, 15, 16]");
    ExpectSame(*compiled, "doubled", {xs.value(), IntValue(i)});
  }
  for (int64_t i : std::vector<int64_t>{0, 6, -1, -7, 7, -8, INT64_MIN}) {
    BorrowedArray w1("q", "[0] * 7"), w2("q", "[0] * 7");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "twice", {w1.value(), IntValue(i)}, {w2.value(), IntValue(i)});
    EXPECT_EQ(interpreted, machine) << i;
    EXPECT_EQ(w1.contents(), w2.contents()) << i;
  }
}

// xs[i] += v adds to the element in place (x86-64: one add to memory); a sum
// past 64 bits must leave the element as it was and raise what the
// interpreter raises, by a constant and by a register, at either end.
TEST_F(Jit, InPlaceAddsThatOverflowLeaveTheElementAlone) {
  auto compiled = Compile(R"(
from ppy import Buffer
def bump(xs: Buffer[int], i: int, by: int) -> int:
    xs[i] += by
    return xs[i]
def bump1(xs: Buffer[int], i: int) -> int:
    xs[i] += 1
    xs[i - 1] += -7
    return xs[i]
)");
  for (int64_t i : std::vector<int64_t>{0, 1, 2, -1, -3, 3, -4}) {
    for (int64_t by : std::vector<int64_t>{1, -1, 7, INT64_MAX, INT64_MIN, int64_t{1} << 40}) {
      BorrowedArray x1("q", "[9223372036854775806, -9223372036854775807, 5]");
      BorrowedArray x2("q", "[9223372036854775806, -9223372036854775807, 5]");
      auto [interpreted, machine] =
          BothWaysOnCopies(*compiled, "bump", {x1.value(), IntValue(i), IntValue(by)},
                           {x2.value(), IntValue(i), IntValue(by)});
      EXPECT_EQ(interpreted, machine) << i << " " << by;
      EXPECT_EQ(x1.contents(), x2.contents()) << i << " " << by;
    }
    BorrowedArray x1("q", "[9223372036854775807, -9223372036854775802, 5]");
    BorrowedArray x2("q", "[9223372036854775807, -9223372036854775802, 5]");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "bump1", {x1.value(), IntValue(i)}, {x2.value(), IntValue(i)});
    EXPECT_EQ(interpreted, machine) << i;
    EXPECT_EQ(x1.contents(), x2.contents()) << i;
  }
}

// Loops whose checks move to their entry: a while loop with a monotone
// counter (unchecked accesses and adds, run in chunks), a loop that fills a
// buffer (one memset) and sums of bounded values (checked per chunk). Every
// way their checks can fail must give what the interpreter gives.
TEST_F(Jit, LoopsCheckedAtTheirEntry) {
  auto compiled = Compile(R"(
from ppy import Buffer, u8
def strike(flags: Buffer[u8], start: int, n: int, step: int) -> int:
    j: int = start
    count: int = 0
    while j < n:
        flags[j] = 0
        count += 1
        j += step
        if count > 40:
            break
    return count * 1000 + j
def fill(xs: Buffer[u8], start: int, stop: int) -> int:
    i: int = -1
    for i in range(start, stop):
        xs[i] = 7
    return i
def fill_wide(xs: Buffer[int], stop: int) -> int:
    for i in range(stop):
        xs[i] = 0
    return stop
def total(xs: Buffer[u8], start: int) -> int:
    acc: int = start
    for i in range(len(xs)):
        acc += xs[i]
    return acc
)");
  const std::vector<std::vector<int64_t>> strikes = {{0, 20, 3}, {5, 20, 1}, {0, 25, 4}, {-4, 20, 3}, {0, 20, 0},
                                                     {3, 20, -1}, {0, 0, 5}, {19, 20, INT64_MAX}, {2, 20, 1 << 30}};
  for (const auto& args : strikes) {
    BorrowedArray f1("B", "[1] * 20"), f2("B", "[1] * 20");
    auto [interpreted, machine] = BothWaysOnCopies(
        *compiled, "strike", {f1.value(), IntValue(args[0]), IntValue(args[1]), IntValue(args[2])},
        {f2.value(), IntValue(args[0]), IntValue(args[1]), IntValue(args[2])});
    EXPECT_EQ(interpreted, machine) << args[0] << " " << args[1] << " " << args[2];
    EXPECT_EQ(f1.contents(), f2.contents()) << args[0] << " " << args[1] << " " << args[2];
  }
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 10}, {3, 8}, {5, 5}, {7, 3}, {0, 12}, {-2, 4}};
  for (auto [start, stop] : ranges) {
    BorrowedArray x1("B", "[0] * 10"), x2("B", "[0] * 10");
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "fill", {x1.value(), IntValue(start), IntValue(stop)},
                                                   {x2.value(), IntValue(start), IntValue(stop)});
    EXPECT_EQ(interpreted, machine) << start << " " << stop;
    EXPECT_EQ(x1.contents(), x2.contents()) << start << " " << stop;
  }
  for (int64_t stop : {0, 4, 6, 7}) {
    BorrowedArray x1("q", "[3] * 6"), x2("q", "[3] * 6");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "fill_wide", {x1.value(), IntValue(stop)}, {x2.value(), IntValue(stop)});
    EXPECT_EQ(interpreted, machine) << stop;
    EXPECT_EQ(x1.contents(), x2.contents()) << stop;
  }
  for (int64_t start : {int64_t{0}, INT64_MAX - 255 * 300, INT64_MAX - 255 * 299, INT64_MIN}) {
    BorrowedArray xs("B", "[255] * 300");
    ExpectSame(*compiled, "total", {xs.value(), IntValue(start)});
  }
}

// b[k * n + j] in the loop over k is made through a pointer moved by n
// elements per iteration (FindStridedAccesses): loads and stores, of f32
// (ADD_I then LOAD_F) and of float and int64 (LOADX/STOREX), strides that
// leave the buffer, negative and zero strides.
TEST_F(Jit, StridedAccesses) {
  auto compiled = Compile(R"(
from ppy import Buffer, f32
def column32(b: Buffer[f32], n: int, j: int) -> float:
    acc: float = 0.0
    for k in range(n):
        acc += b[k * n + j]
    return acc
def column(b: Buffer[float], start: int, stop: int, n: int, j: int) -> float:
    acc: float = 0.0
    for k in range(start, stop):
        acc += b[k * n + j]
    return acc
def scatter(out: Buffer[int], n: int, stride: int, j: int) -> int:
    for k in range(n):
        out[k * stride + j] = k + 1
    return n
)");
  for (int64_t j : {0, 2, 3, 4, -1, -5, 9}) {
    BorrowedArray b32("f", "[float(k % 5) - 1.5 for k in range(16)]");
    ExpectSame(*compiled, "column32", {b32.value(), IntValue(4), IntValue(j)});
  }
  for (auto [start, stop] : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {1, 4}, {3, 1}, {-1, 4}, {0, 5}}) {
    BorrowedArray b("d", "[float(k % 7) for k in range(16)]");
    ExpectSame(*compiled, "column", {b.value(), IntValue(start), IntValue(stop), IntValue(4), IntValue(1)});
  }
  const std::vector<std::pair<int64_t, int64_t>> strides = {{3, 0}, {3, 2}, {0, 4}, {-2, 12}, {-2, 5}, {2, -1}};
  for (auto [stride, j] : strides) {
    BorrowedArray o1("q", "[0] * 13"), o2("q", "[0] * 13");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "scatter", {o1.value(), IntValue(6), IntValue(stride), IntValue(j)},
                         {o2.value(), IntValue(6), IntValue(stride), IntValue(j)});
    EXPECT_EQ(interpreted, machine) << stride << " " << j;
    EXPECT_EQ(o1.contents(), o2.contents()) << stride << " " << j;
  }
}

// Inner loops of a run-time trip count run four iterations per pass
// (EmitPartialPass): every count of leftover iterations, the counter read as
// a value in each copy, a strided access, an inlined callee given the
// counter, and exits in each copy of a pass (a zero divisor of either sign,
// an int that outgrows 64 bits), with the stores up to there.
TEST_F(Jit, PartiallyUnrolledLoopsAgreeWithTheInterpreter) {
  auto compiled = Compile(R"(
from ppy import Buffer, f32
def entry(i: int, j: int) -> float:
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)
def counters(out: Buffer[int], start: int, stop: int) -> int:
    total: int = 0
    for i in range(start, stop):
        out[i - start] = i * i % 7 + i
        total += i * 3
    return total
def column(b: Buffer[f32], n: int, j: int) -> float:
    acc: float = 0.0
    for k in range(n):
        acc += b[k * n + j] * b[k]
    return acc
def row(u: Buffer[float], i: int, n: int) -> float:
    acc: float = 0.0
    for j in range(n):
        acc += entry(i, j) * u[j]
    return acc
def ratios(x: Buffer[float], y: Buffer[float], out: Buffer[float], n: int) -> int:
    for i in range(n):
        out[i] = x[i] / y[i]
    return n
def grow(x: Buffer[int], n: int) -> int:
    acc: int = 1
    for i in range(n):
        acc = acc * x[i] + i
    return acc
def fixed(u: Buffer[float]) -> float:
    acc: float = 0.0
    for i in range(3):
        for j in range(37):
            acc += entry(j, i) * u[j % 9] + entry(i, j)
    return acc
def mix(i: int, j: int) -> float:
    return float(j * 3 - i) + float(j // 2) + float(j + i + 7) + float(i - j)
def mixes(n: int, i: int) -> float:
    acc: float = 0.0
    for j in range(n):
        acc += mix(i, j) + mix(j, i)
    return acc
def differences(x: Buffer[int], top: int, out: Buffer[int]) -> int:
    check: int = 0
    for i in range(top, 0, -1):
        check += x[i] - x[i - 1]
        out[i] = check * i
    return check
)");
  // The names hold their functions (the version the calls saw): calls of
  // entry and mix run in place (see InlinedCallsAgreeWithTheInterpreter).
  auto& module = const_cast<ModuleCode&>(*compiled->function("row").module);
  uint64_t version = 7;
  module.versions.globals = &version;
  for (const auto& fn : module.functions) fn->runtime->globals_version = 7;
  for (int64_t stop = -3; stop <= 14; ++stop) {
    BorrowedArray o1("q", "[0] * 20"), o2("q", "[0] * 20");
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "counters", {o1.value(), IntValue(-3), IntValue(stop)},
                                                   {o2.value(), IntValue(-3), IntValue(stop)});
    EXPECT_EQ(interpreted, machine) << stop;
    EXPECT_EQ(o1.contents(), o2.contents()) << stop;
  }
  for (int64_t n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
    BorrowedArray b("f", "[float(k % 5) - 1.5 for k in range(100)]");
    ExpectSame(*compiled, "column", {b.value(), IntValue(n), IntValue(n > 0 ? n - 1 : 0)});
    BorrowedArray u("d", "[1.0 / (k + 1) for k in range(9)]");
    ExpectSame(*compiled, "row", {u.value(), IntValue(n), IntValue(n)});
  }
  for (int zero = 0; zero < 9; ++zero) {
    const std::string y = std::string("[") + (zero % 2 ? "-0.0" : "0.0") + " if k == " + std::to_string(zero) +
                          " else 1.5 + k for k in range(9)]";
    BorrowedArray x("d", "[k * 0.5 for k in range(9)]"), y1("d", y), o1("d", "[0.0] * 9"), o2("d", "[0.0] * 9");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "ratios", {x.value(), y1.value(), o1.value(), IntValue(9)},
                         {x.value(), y1.value(), o2.value(), IntValue(9)});
    EXPECT_EQ(interpreted, machine) << zero;
    EXPECT_EQ(o1.contents(), o2.contents()) << zero;
  }
  for (int64_t n : {30, 38, 39, 40, 41, 42, 43, 44}) {
    BorrowedArray x("q", "[3] * 50");
    ExpectSame(*compiled, "grow", {x.value(), IntValue(n)});
  }
  // An inlined callee given the counter of a copy: its offset folds into
  // the callee's unchecked adds, and a checked add that overflows leaves
  // for the real call.
  BorrowedArray u9("d", "[1.0 / (k + 1) for k in range(9)]");
  ExpectSame(*compiled, "fixed", {u9.value()});  // (a known trip count: the adds need no check)
  const FunctionCode& entry = compiled->function("entry");
  g_tiering.mode = JitMode::kHot;
  const uint64_t calls = entry.runtime->calls;
  testing::Call(*compiled, "fixed", {u9.value()});
  EXPECT_LT(entry.runtime->calls - calls, 10u);  // (run in place, not called)
  g_tiering.mode = JitMode::kOff;
  for (int64_t n : {0, 1, 3, 4, 5, 9}) {
    for (int64_t i : {int64_t{0}, int64_t{-7}, int64_t{1} << 62, INT64_MAX - 9, INT64_MIN + 2}) {
      ExpectSame(*compiled, "mixes", {IntValue(n), IntValue(i)});
    }
  }
  // Counting down: the copies' elements and values below the counter's, and
  // an index past the end. (Ints that outgrow 64 bits there: program 185,
  // which runs with the Python hook that grows them.)
  for (int64_t top : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) {
    for (const char* values : {"[k * k - 7 * k for k in range(11)]", "[(-1) ** k * 2**40 for k in range(11)]"}) {
      BorrowedArray x("q", values), o1("q", "[0] * 11"), o2("q", "[0] * 11");
      auto [interpreted, machine] = BothWaysOnCopies(*compiled, "differences", {x.value(), IntValue(top), o1.value()},
                                                     {x.value(), IntValue(top), o2.value()});
      EXPECT_EQ(interpreted, machine) << top << values;
      EXPECT_EQ(o1.contents(), o2.contents()) << top << values;
    }
  }
  module.versions.globals = nullptr;
}

// A float64 element only the next add, subtract or multiply reads is that
// instruction's operand (FindLoadsIntoArithmetic): as either operand of an
// add or multiply, as a subtrahend, beside a minuend loaded as usual, by
// negative indexes, and past the end halfway through the loop.
TEST_F(Jit, ElementsTakenAsOperands) {
  auto compiled = Compile(R"(
from ppy import Buffer
def mixed(a: Buffer[float], b: Buffer[float], n: int, shift: int) -> float:
    acc: float = 0.0
    for k in range(n):
        x: float = a[k] - b[k + shift]
        z: float = a[k] * b[k]
        acc += x * (b[k] - a[k]) - z + (2.0 * b[k] + a[k])
        acc = acc - a[k]
    return acc
)");
  for (auto [n, shift] : std::vector<std::pair<int64_t, int64_t>>{{6, 0}, {4, 2}, {5, 2}, {0, 1}, {3, -3}, {3, -9}}) {
    BorrowedArray a("d", "[k * 0.75 - 3.0 for k in range(6)]"), b("d", "[1.5 - k * 0.5 for k in range(6)]");
    ExpectSame(*compiled, "mixed", {a.value(), b.value(), IntValue(n), IntValue(shift)});
  }
}

// Elements loaded into the result's register (FindLoadsIntoResults: `dx =
// s[p] - s[q]`), and elements that wait past a multiply whose product goes
// straight into the add's result (`s[q] += dx * m`): with f32 and f64
// firsts, products and differences read again later (a repeated product
// copies the first's register), results that are an operand of the
// multiply, subtrahends, and indexes past the end.
TEST_F(Jit, ElementsLoadedIntoResults) {
  auto compiled = Compile(R"(
from ppy import Buffer, f32
def pairs(s: Buffer[float], m: Buffer[float], n: int, shift: int) -> float:
    total: float = 0.0
    for j in range(1, n):
        dx: float = s[0] - s[j]
        dy: float = s[1] - s[j + shift]
        w: float = m[j] * dx
        total += dx * dy + w
        s[j] += dx * w
        s[0] -= dx * w
        s[j - 1] = dy * w - s[j]
        w = s[j] + w * dy
        total = m[j] - total * w
        total = total * dy + m[j - 1]
    return total
def narrow(a: Buffer[f32], b: Buffer[float], n: int) -> float:
    acc: float = 0.0
    for i in range(n):
        d: float = a[i] - b[i]
        e: float = a[i] * b[i]
        acc += d * e
    return acc
)");
  for (auto [n, shift] : std::vector<std::pair<int64_t, int64_t>>{{6, 0}, {6, 1}, {7, 1}, {2, 0}, {5, -1}, {8, 0}}) {
    BorrowedArray s1("d", "[k * 0.75 - 3.0 for k in range(8)]"), s2("d", "[k * 0.75 - 3.0 for k in range(8)]"),
        m("d", "[1.5 - k * 0.25 for k in range(8)]");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "pairs", {s1.value(), m.value(), IntValue(n), IntValue(shift)},
                         {s2.value(), m.value(), IntValue(n), IntValue(shift)});
    EXPECT_EQ(interpreted, machine) << n << " " << shift;
    EXPECT_EQ(s1.contents(), s2.contents()) << n << " " << shift;
  }
  for (int64_t n : {0, 1, 3, 5, 6, 7}) {
    BorrowedArray a("f", "[k * 0.5 - 1.0 for k in range(6)]"), b("d", "[2.0 - k * 0.375 for k in range(6)]");
    ExpectSame(*compiled, "narrow", {a.value(), b.value(), IntValue(n)});
  }
}

// `low <= c <= high` is one unsigned compare of c - low (FindRangeTests):
// the range taken and left, negated, at its edges and at int64's.
TEST_F(Jit, RangeTestsAreOneCompare) {
  auto compiled = Compile(R"(
def classify(c: int) -> int:
    if 97 <= c <= 122:
        return 1
    elif 65 <= c <= 90 or 48 <= c <= 57:
        return 2
    elif not (-5 <= c <= 5):
        return 3
    return 4
)");
  for (int64_t c : {INT64_MIN, INT64_MIN + 96, int64_t{-6}, int64_t{-5}, int64_t{0}, int64_t{5}, int64_t{6},
                    int64_t{47}, int64_t{48}, int64_t{57}, int64_t{58}, int64_t{64}, int64_t{65}, int64_t{90},
                    int64_t{91}, int64_t{96}, int64_t{97}, int64_t{122}, int64_t{123}, INT64_MAX - 25, INT64_MAX}) {
    ExpectSame(*compiled, "classify", {IntValue(c)});
  }
}

// Two adds that cannot overflow, the second of a constant to the first's
// sum, are one AddPlusImm (AddsConstantNext), unless a repeat of the sum
// copies it; a repeated sum in an inlined callee shares the first one's
// register (SharesRegister).
TEST_F(Jit, AddsOfAConstantToASum) {
  auto compiled = Compile(R"(
def tri(i: int, j: int) -> int:
    return (i + j) * (i + j + 1) // 2 + i + 1
def total(start: int) -> int:
    acc: int = start
    for a in range(60):
        for b in range(-30, 30):
            acc += (a + b) * (a - b + 3) // 2 + a - 7 + tri(a, b)
    return acc
def repeated(start: int) -> int:
    acc: int = start
    for a in range(60):
        for b in range(60):
            acc += (a + b + 5) * (a + b + 5 + 1) // 2 % 65521
    return acc
)");
  for (int64_t start : {int64_t{0}, int64_t{-5}, INT64_MAX - 1000, INT64_MIN}) {
    ExpectSame(*compiled, "total", {IntValue(start)});
    ExpectSame(*compiled, "repeated", {IntValue(start)});
  }
}

// Accesses the loop never moves that differ only by constants share one
// register, each constant in the address (s[p] ... s[p + 4]); and affine
// ones that differ by constants are checked as a group (s[6 * j + k]).
TEST_F(Jit, GroupsOfAccessesThatDifferByConstants) {
  auto compiled = Compile(R"(
from ppy import Buffer
def pull(s: Buffer[float], p: int, n: int) -> float:
    acc: float = 0.0
    for j in range(n):
        dx: float = s[p] - s[j]
        acc += dx * s[p + 1] + s[p + 2]
        s[p + 3] = s[p + 3] - dx * 0.5
    return acc
def rows(s: Buffer[float], n: int, back: int) -> float:
    acc: float = 0.0
    for j in range(n):
        q: int = 3 * j
        acc += s[q] + s[q + 1] * 2.0 + s[q + 2] * 3.0 - s[q - back]
    return acc
)");
  for (int64_t p : {0, 3, 5, 6, -9, -4, -2, 9, -10}) {
    BorrowedArray s1("d", "[k * 1.5 - 4.0 for k in range(9)]"), s2("d", "[k * 1.5 - 4.0 for k in range(9)]");
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "pull", {s1.value(), IntValue(p), IntValue(5)},
                                                   {s2.value(), IntValue(p), IntValue(5)});
    EXPECT_EQ(interpreted, machine) << p;
    EXPECT_EQ(s1.contents(), s2.contents()) << p;
  }
  for (auto [n, back] : std::vector<std::pair<int64_t, int64_t>>{{3, 0}, {3, 1}, {4, 0}, {2, 3}, {0, 1}}) {
    BorrowedArray s("d", "[float(k) for k in range(9)]");
    ExpectSame(*compiled, "rows", {s.value(), IntValue(n), IntValue(back)});
  }
}

// Products of the counter that index a row, `q = 6 * j`, carried from one
// iteration to the next (FindProductInductions: x86-64 `add q, 6` for the
// multiply): a side exit in the middle of a row's updates, the product read
// after the loop, scales negative, zero and run-time, and products that keep
// their multiply (read before the loop writes them, made in a branch).
TEST_F(Jit, ProductsCarriedFromIterationToIteration) {
  auto compiled = Compile(R"(
from ppy import Buffer
def pairs(s: Buffer[float], n: int, dt: float) -> float:
    e: float = 0.0
    for i in range(n):
        p: int = 3 * i
        for j in range(i + 1, n):
            q: int = 3 * j
            w: float = dt / (s[p] - s[q])
            s[p + 1] -= w
            s[q + 1] += w
            s[q + 2] = w * 0.5
            e += w
    return e
def scaled(s: Buffer[float], start: int, n: int, k: int) -> int:
    q: int = -1
    for j in range(start, n):
        q = j * k
        s[q + 7] += 1.0
        s[q + 8] *= 2.0
    return q
def read_first(s: Buffer[float], n: int) -> float:
    q: int = 0
    acc: float = 0.0
    for j in range(n):
        acc += q
        q = 2 * j
        acc += s[q] + s[q + 1]
    return acc
def in_branch(s: Buffer[float], n: int) -> float:
    q: int = 0
    acc: float = 0.0
    for j in range(n):
        if j % 3 == 1:
            q = 2 * j
        acc += s[q] + s[q + 1]
    return acc
)");
  for (const char* init : {"[float(k * k % 11) for k in range(18)]", "[float(k // 3) for k in range(18)]",
                           "[1.0, 0.0, 0.0] * 6"}) {
    for (int64_t n : {0, 1, 2, 5, 6, 7}) {
      BorrowedArray s1("d", init), s2("d", init);
      auto [interpreted, machine] = BothWaysOnCopies(*compiled, "pairs", {s1.value(), IntValue(n), FloatValue(0.5)},
                                                     {s2.value(), IntValue(n), FloatValue(0.5)});
      EXPECT_EQ(interpreted, machine) << init << " " << n;
      EXPECT_EQ(s1.contents(), s2.contents()) << init << " " << n;
    }
  }
  for (auto [start, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {0, 4, -2}, {0, 5, 0}, {1, 5, 1}, {2, 6, 3}, {0, 3, -4}, {3, 3, 2}, {0, 40, 1}, {5, 2, 1}, {-3, 2, 2}}) {
    BorrowedArray s1("d", "[0.0] * 20"), s2("d", "[0.0] * 20");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "scaled", {s1.value(), IntValue(start), IntValue(n), IntValue(k)},
                         {s2.value(), IntValue(start), IntValue(n), IntValue(k)});
    EXPECT_EQ(interpreted, machine) << start << " " << n << " " << k;
    EXPECT_EQ(s1.contents(), s2.contents()) << start << " " << n << " " << k;
  }
  for (int64_t n : {0, 1, 12, 15, 16}) {
    BorrowedArray s("d", "[float(k) for k in range(30)]");
    ExpectSame(*compiled, "read_first", {s.value(), IntValue(n)});
    ExpectSame(*compiled, "in_branch", {s.value(), IntValue(n)});
  }
#if defined(__x86_64__)
  // The inner loop of pairs adds 3 to q where it multiplied.
  jit::Blob blob;
  std::string listing, error;
  ASSERT_TRUE(jit::CompileBlob(compiled->function("pairs"), &blob, &listing, &error)) << error;
  EXPECT_TRUE(std::regex_search(listing, std::regex(R"(\nadd [a-z0-9]+, 3\n)"))) << listing;
#endif
}

// An outer loop whose guard fails runs on the interpreter, which enters the
// machine code again at the inner loop's head: that entry must check the outer
// loop's hoisted accesses too (xs[r] after the inner loop, one row too many).
TEST_F(Jit, EntriesAtNestedLoopsCheckTheOuterLoopsAccesses) {
  auto compiled = Compile(R"(
from ppy import Buffer
def load_rows(xs: Buffer[int], rows: int, cols: int) -> int:
    total: int = 0
    for r in range(rows):
        for c in range(cols):
            total += c
        total += xs[r]
    return total
def store_rows(xs: Buffer[float], rows: int, cols: int) -> int:
    for r in range(rows):
        k: int = 0
        while k < cols:
            k += 1
        xs[r] = 0.5 * k
    return 0
)");
  for (int64_t rows : {2, 3, 4}) {
    for (int64_t cols : {0, 1, 2, 5}) {
      BorrowedArray xs("q", "[1, 2, 3]");
      ExpectSame(*compiled, "load_rows", {xs.value(), IntValue(rows), IntValue(cols)});
      BorrowedArray y1("d", "[0.0] * 3"), y2("d", "[0.0] * 3");
      auto [interpreted, machine] =
          BothWaysOnCopies(*compiled, "store_rows", {y1.value(), IntValue(rows), IntValue(cols)},
                           {y2.value(), IntValue(rows), IntValue(cols)});
      EXPECT_EQ(interpreted, machine) << rows << " " << cols;
      EXPECT_EQ(y1.contents(), y2.contents()) << rows << " " << cols;
    }
  }
}

TEST_F(Jit, BufferAccessesKeepPythonsIndexRules) {
  auto compiled = Compile(R"(
from ppy import Buffer, i8, f32
def read(xs: Buffer[float], i: int) -> float: return xs[i]
def write(xs: Buffer[float], i: int) -> float:
    xs[i] = 2.5
    return xs[i]
def summed(xs: Buffer[float], base: int) -> float:
    s = 0.0
    for i in range(4):
        s += xs[base + i]
    return s
def histogram(xs: Buffer[int], k: int) -> int:
    for i in range(len(xs)):
        xs[(i * k) % len(xs)] += 1
    return xs[0]
def narrow(xs: Buffer[i8], v: int) -> int:
    xs[0] = v
    return xs[0]
def single(xs: Buffer[f32], v: float) -> float:
    xs[1] = v
    return xs[1]
)");
  for (int64_t i : std::vector<int64_t>{0, 3, 5, -1, -6, -7, 100, INT64_MIN}) {
    BorrowedArray xs("d", "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]");
    auto [a, b] = BothWays(*compiled, "read", {xs.value(), IntValue(i)});
    EXPECT_EQ(a, b) << i;
    BorrowedArray w1("d", "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]"), w2("d", "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "write", {w1.value(), IntValue(i)}, {w2.value(), IntValue(i)});
    EXPECT_EQ(interpreted, machine) << i;
    EXPECT_EQ(w1.contents(), w2.contents()) << i;
  }
  for (int64_t base : std::vector<int64_t>{0, 2, 3, -4, -5, INT64_MAX}) {
    BorrowedArray xs("d", "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]");
    ExpectSame(*compiled, "summed", {xs.value(), IntValue(base)});
  }
  for (int64_t k : {0, 1, 3, -2}) {
    BorrowedArray h1("q", "[0] * 7"), h2("q", "[0] * 7");
    auto [interpreted, machine] =
        BothWaysOnCopies(*compiled, "histogram", {h1.value(), IntValue(k)}, {h2.value(), IntValue(k)});
    EXPECT_EQ(interpreted, machine);
    EXPECT_EQ(h1.contents(), h2.contents());
  }
  for (int64_t v : {0, 127, 128, -128, -129}) {
    BorrowedArray xs("b", "[0, 0]");
    ExpectSame(*compiled, "narrow", {xs.value(), IntValue(v)});
  }
  for (double v : {0.1, 1e39, -2.5}) {
    BorrowedArray xs("f", "[0.0, 0.0]");
    ExpectSame(*compiled, "single", {xs.value(), FloatValue(v)});
  }
  BorrowedArray readonly("d", "[1.0, 2.0]", true);
  ExpectSame(*compiled, "write", {readonly.value(), IntValue(0)});
}

// What the guards and the block's facts let machine code skip: division by
// known divisors (a multiply-high), immediates of every size (AArch64 encodes
// only 12 bits), ranges that prove no overflow, loops counting down, indexes
// a loop never changes, repeated arithmetic, constants stored into narrow
// elements. Both backends run it (AArch64 under qemu).
TEST_F(Jit, KnownValuesAndRangesAgreeWithTheInterpreter) {
  auto compiled = Compile(R"(
from ppy import Buffer, u8, i32
def narrow(xs: Buffer[i32]) -> int:
    t = 0
    for x in xs:
        t += x // 3 + x % 3 * 11 + x // 7 - x % 7 + x // 1000 * 13 + x % 1000 + x // 2147483647 + x % 65537 * 5
    return t
def divide(x: int) -> int:
    return x // 3 + x % 3 * 11 + x // 7 - x % 7 + x // 1000 * 13 + x % 1000 + x // 2147483647 + x % 65537 * 5
def immediates(x: int) -> int:
    return (x + 5000) // 2 + (x - 5) % 1024 + (x + 7) * 3 + (x - 70000) // 4 + x * 100000 % 7 + (4095 - x) % 9
def ranged(n: int) -> int:
    t = 0
    for i in range(n):
        for j in range(n):
            t += ((i + j) * (i + j + 1) // 2 + i * 3) % 1000003
            if j > 50:
                break
        if i > 40:
            break
    return t
def down(xs: Buffer[int], out: Buffer[u8], stop: int) -> int:
    t = 0
    for i in range(len(xs) - 1, stop, -1):
        out[i] = 200
        t += xs[i] - xs[i - 1] + i % 7 + xs[-1] + xs[2]
    return t
def repeated(x: float, y: float, n: int) -> float:
    t: float = 0.0
    k: int = 0
    while k < n:
        t += x * y - x * y / (y * y + 1.0) + (k + n) * (k + n)
        k += 1
    return t
)");
  for (int64_t x : kInts) {
    ExpectSame(*compiled, "divide", {IntValue(x)});
    ExpectSame(*compiled, "immediates", {IntValue(x)});
  }
  for (int64_t n : std::vector<int64_t>{-1, 0, 1, 30, 100, int64_t{1} << 32, INT64_MAX}) {
    ExpectSame(*compiled, "ranged", {IntValue(n)});
    ExpectSame(*compiled, "repeated", {FloatValue(1.5), FloatValue(-2.0), IntValue(n > 1000 ? 1000 : n)});
  }
  for (int64_t stop : std::vector<int64_t>{-3, -1, 0, 2, 5, 9, INT64_MIN}) {
    BorrowedArray xs("q", "[(k * 37) % 11 - 5 for k in range(9)]");
    BorrowedArray o1("B", "[0] * 9"), o2("B", "[0] * 9");
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "down", {xs.value(), o1.value(), IntValue(stop)},
                                                   {xs.value(), o2.value(), IntValue(stop)});
    EXPECT_EQ(interpreted, machine) << stop;
    EXPECT_EQ(o1.contents(), o2.contents()) << stop;
  }
  BorrowedArray xs("q", "[1, 2, 3, 4]");
  BorrowedArray readonly("B", "[0] * 4", true);
  ExpectSame(*compiled, "down", {xs.value(), readonly.value(), IntValue(0)});
  // i32 elements: the multiply without its high half (DivideByConstant).
  BorrowedArray narrow("i", "[0, 1, -1, 2, -3, 6, -7, 999, -1000, 65537, -65538, 2147483647, -2147483648, "
                            "2147483646, -2147483647] + [(k * 2654435761) % 2**32 - 2**31 for k in range(64)]");
  ExpectSame(*compiled, "narrow", {narrow.value()});
}

// Division of an element narrower than 64 bits by a divisor only known at
// run time: the dividend cannot be INT64_MIN, so a divisor of -1 takes the
// machine's division (which gives Python's results there) instead of a path
// of its own (FloorDivide); every sign, 0 (which raises), and int64's edges.
TEST_F(Jit, DivisionOfNarrowElementsByAnyDivisor) {
  auto compiled = Compile(R"(
from ppy import Buffer, i32, u32
def histogram(keys: Buffer[i32], counts: Buffer[int], d: int) -> int:
    for k in keys:
        counts[k % d] += 1
    t = 0
    for k in keys:
        t += k // d * 3 + k % d
    return t
def unsigned(keys: Buffer[u32], d: int) -> int:
    t = 0
    for k in keys:
        t = t * 7 % 1000003 + k // d - k % d
    return t
)");
  BorrowedArray keys("i", "[0, 1, -1, 5, -6, 7, 2147483647, -2147483648, -2147483647, 12345, -54321]");
  BorrowedArray wide("I", "[0, 1, 2, 4294967295, 2147483648, 77]");
  for (int64_t d : kInts) {
    BorrowedArray c1("q", "[0] * 8"), c2("q", "[0] * 8");
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "histogram", {keys.value(), c1.value(), IntValue(d)},
                                                   {keys.value(), c2.value(), IntValue(d)});
    EXPECT_EQ(interpreted, machine) << d;
    EXPECT_EQ(c1.contents(), c2.contents()) << d;
    ExpectSame(*compiled, "unsigned", {wide.value(), IntValue(d)});
  }
  for (int64_t d : {int64_t{-8}, int64_t{-3}, int64_t{3}, int64_t{8}}) {
    BorrowedArray c1("q", "[0] * 8"), c2("q", "[0] * 8");
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "histogram", {keys.value(), c1.value(), IntValue(d)},
                                                   {keys.value(), c2.value(), IntValue(d)});
    EXPECT_EQ(interpreted, machine) << d;
    EXPECT_EQ(c1.contents(), c2.contents()) << d;
  }
}

// A float the tests before int() keep in [0, m) makes a histogram's index
// that needs no check (FindBinnedAccesses: the loop's guard checks m against
// the length once), and one they keep a number inside int64 converts with no
// check (FindExactConversions). Every way around those tests must still
// raise or wrap as Python does: NaN (which `x < 0.0 or x >= m` lets through
// to int()), the infinities, -1.0 (int() gives -1: counts[-1]), a buffer
// shorter than m, an m of 0 or below, the bound itself with <=, and a test on
// one path only.
TEST_F(Jit, IndexesTheFloatTestsKeepInRange) {
  auto compiled = Compile(R"(
from ppy import Buffer
def either(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    outside = 0
    for i in range(len(xs)):
        x = xs[i] * 1.5
        if x < 0.0 or x >= m:
            outside += 1
        else:
            counts[int(x)] += 1
    return outside
def chained(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    outside = 0
    for i in range(len(xs)):
        x = xs[i] * 1.5
        if 0.0 <= x < m:
            counts[int(x)] += 1
        else:
            outside += 1
    return outside
def inclusive(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    t = 0
    for i in range(len(xs)):
        x = xs[i]
        if x > -1.0 and x <= m:
            t += counts[int(x)]
    return t
def minus_one(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    for i in range(len(xs)):
        x = xs[i]
        if x >= -1.0 and x < m:
            counts[int(x)] += 1
    return 0
def int_bounds(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    t = 0
    for i in range(len(xs)):
        x = xs[i]
        if x >= 0 and m > x:
            t += int(x) + counts[int(x)]
    return t
def one_path(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    t = 0
    for i in range(len(xs)):
        x = xs[i]
        if x >= 0.0:
            t += 1
        t += int(x)
    return t
def wide(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    t = 0
    for i in range(len(xs)):
        x = xs[i] * 1e18
        if -9.3e18 < x < 9.3e18:
            t += int(x) // 1000
        if -9.2e18 <= x < m:
            t += int(x) // 1000
    return t
)");
  const std::vector<std::string> data = {
      "[0.0, 1.0, 2.5, 3.9, 5.2, 7.9, 0.3]",
      "[0.5, float('nan'), 1.0]",
      "[1.0, float('inf'), 2.0]",
      "[1.0, float('-inf'), 2.0]",
      "[-1.0, -0.5, -0.9, 1.5, 8.0, 8.5, 9.0, -1.5]",
      "[5.3, 5.6, 5.9, 6.1, 9.2, 9.3, -9.3, -9.2, 4.0]",
  };
  for (const std::string& values : data) {
    for (int64_t m : {int64_t{8}, int64_t{6}, int64_t{5}, int64_t{1}, int64_t{0}, int64_t{-3}, INT64_MAX}) {
      for (const char* name : {"either", "chained", "inclusive", "minus_one", "int_bounds", "one_path", "wide"}) {
        BorrowedArray xs("d", values);
        BorrowedArray c1("q", "[0] * 6"), c2("q", "[0] * 6");
        auto [interpreted, machine] = BothWaysOnCopies(*compiled, name, {xs.value(), c1.value(), IntValue(m)},
                                                       {xs.value(), c2.value(), IntValue(m)});
        EXPECT_EQ(interpreted, machine) << name << " " << values << " m=" << m;
        EXPECT_EQ(c1.contents(), c2.contents()) << name << " " << values << " m=" << m;
      }
    }
  }
}

// A histogram over bins the code knows adds to its counts with no overflow
// check: each chunk of iterations checks that no count is within the
// chunk's adds of 2**63 (FindBoundedElementSums). A count that gets there
// must still raise at the same add, after the same adds, in the first chunk
// or a later one (the loop runs 6,000 iterations: two chunks at least).
TEST_F(Jit, HistogramCountsNearTheTopRaiseAtTheSameAdd) {
  auto compiled = Compile(R"(
from ppy import Buffer
def tally(xs: Buffer[float], counts: Buffer[int]) -> int:
    outside = 0
    for i in range(len(xs)):
        x = xs[i]
        if x < 0.0 or x >= 4:
            outside += 1
        else:
            counts[int(x)] += 1
            counts[int(x)] += 2
    return outside
)");
  const std::string values = "[float(k % 5) + 0.5 for k in range(6000)]";
  for (const char* start : {"[0] * 4", "[2**63 - 1000, 0, 0, 0]", "[0, 0, 0, 2**63 - 3000]", "[0, 2**63 - 1, 0, 0]",
                            "[2**63 - 4000] * 4"}) {
    BorrowedArray xs("d", values);
    BorrowedArray c1("q", start), c2("q", start);
    auto [interpreted, machine] = BothWaysOnCopies(*compiled, "tally", {xs.value(), c1.value()},
                                                   {xs.value(), c2.value()});
    EXPECT_EQ(interpreted, machine) << start;
    EXPECT_EQ(c1.contents(), c2.contents()) << start;
  }
}

// Where the tests let x lie in (-1, 0), int(x) is 0 whatever the bound: with
// `x > -1.0 and x < m` and m = 0, index 0 is still read and written, so an
// empty buffer must raise IndexError (the guard checks len >= 1 as well),
// and a count at 2**63 - 1 there must raise OverflowError (the chunk's scan
// covers element 0 even for m = 0).
TEST_F(Jit, BinsBelowZeroStillIndexElementZero) {
  auto compiled = Compile(R"(
from ppy import Buffer
def below(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    for i in range(len(xs)):
        x = xs[i]
        if x > -1.0 and x < m:
            counts[int(x)] += 1
    return 0
def below_zero(xs: Buffer[float], counts: Buffer[int], m: int) -> int:
    for i in range(len(xs)):
        x = xs[i]
        if x > -1.0 and x < 0:
            counts[int(x)] += 1
    return 0
)");
  for (const char* counts : {"[]", "[2**63 - 1]", "[2**63 - 10, 0]", "[0, 0, 0]"}) {
    for (int64_t m : {int64_t{0}, int64_t{-2}, int64_t{2}}) {
      for (const char* name : {"below", "below_zero"}) {
        BorrowedArray xs("d", "[-0.5, -0.25, 0.5, 1.5] * 20");
        BorrowedArray c1("q", counts), c2("q", counts);
        auto [interpreted, machine] = BothWaysOnCopies(*compiled, name, {xs.value(), c1.value(), IntValue(m)},
                                                       {xs.value(), c2.value(), IntValue(m)});
        EXPECT_EQ(interpreted, machine) << name << " " << counts << " m=" << m;
        EXPECT_EQ(c1.contents(), c2.contents()) << name << " " << counts << " m=" << m;
      }
    }
  }
}

// `c == 32 or c == 10 or c == 9 or c == 13` runs as one compare with the
// greatest constant and one bit test (FindMembershipChains): every int must
// still take the branch Python takes, those above 63 and the negative ones
// (where a bit test alone would wrap) included, for chains that end either
// way (a last `!=` jumping out, or a last `==` jumping in), as a loop test
// and as a plain branch.
TEST_F(Jit, MembershipChainsAgreeForEveryValue) {
  auto compiled = Compile(R"(
def spaces(c: int, d: int) -> int:
    if c == 32 or c == 10 or c == 9 or c == 13:
        return 1
    return 2
def chosen(c: int, d: int) -> int:
    t = 0
    if c == 0 or c == 63 or c == 5:
        t += 1
    else:
        t += 10
    if c == 7 or c == 1 or d == 2:
        t += 100
    return t
def skip(c: int, d: int) -> int:
    n = 0
    while c == 1 or c == 3 or c == 62 or c == 40:
        c = (c * 7 + d) % 64
        n += 1
        if n > 50:
            break
    return n * 1000 + c
)");
  std::vector<int64_t> values = {INT64_MIN, INT64_MAX, -1, -64, -32, 64, 65, 96, 127, 128, 255, 1000,
                                 (int64_t{1} << 32) + 32, int64_t{1} << 63 >> 1};
  for (int64_t v = 0; v < 64; ++v) values.push_back(v);
  for (int64_t c : values) {
    for (int64_t d : {int64_t{0}, int64_t{2}, int64_t{5}}) {
      for (const char* name : {"spaces", "chosen", "skip"}) ExpectSame(*compiled, name, {IntValue(c), IntValue(d)});
    }
  }
}

// A `break` out of a rotated while loop jumped to the very next instruction
// (the loop's back edge emits nothing where it stands); the pass after
// register allocation (DropJumpsToNext) removes such jumps. No unconditional
// jump in the listing may be followed, past labels only, by its own target.
TEST_F(Jit, NoJumpGoesToTheNextInstruction) {
  auto compiled = Compile(R"(
from ppy import Buffer, u8
def words(text: Buffer[u8]) -> int:
    n = len(text)
    i = 0
    count = 0
    while i < n:
        c = text[i]
        if 97 <= c <= 122:
            i += 1
            while i < n:
                c = text[i]
                if 97 <= c <= 122 or c == 39:
                    i += 1
                else:
                    break
            count += 1
        else:
            i += 1
    return count
)");
  const FunctionCode& fn = compiled->function("words");
  jit::Blob blob;
  std::string listing, error;
  ASSERT_TRUE(jit::CompileBlob(fn, &blob, &listing, &error)) << error;
  std::vector<std::string> lines;
  std::istringstream stream(listing);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  const std::regex jump(R"(^(?:short )?(?:jmp|b) (L[0-9]+)$)");
  int jumps = 0;
  for (size_t k = 0; k < lines.size(); ++k) {
    std::smatch match;
    if (!std::regex_match(lines[k], match, jump)) continue;
    ++jumps;
    for (size_t next = k + 1; next < lines.size() && !lines[next].empty() && lines[next].back() == ':'; ++next) {
      EXPECT_NE(lines[next], match[1].str() + ":") << "line " << k << " of\n" << listing;
    }
  }
  EXPECT_GT(jumps, 0) << listing;
  BorrowedArray text("B", "b'the cat\\'s mat, 42 and  more'");
  ExpectSame(*compiled, "words", {text.value()});
}

// A while loop with no way out but its test runs to its bound: its body is
// aligned (the padding runs once per entry). One that a `break` may leave at
// any element is entered often for a few iterations: no padding on its way in.
TEST_F(Jit, AlignsTheBodyOfAWhileLoopThatRunsToItsBound) {
  auto compiled = Compile(R"(
from ppy import Buffer, u8
def strike(flags: Buffer[u8], n: int, i: int) -> int:
    j = i * i
    while j < n:
        flags[j] = 0
        j += i
    return j
def scan(flags: Buffer[u8], n: int, i: int) -> int:
    while i < n:
        if flags[i] == 0:
            break
        i += 1
    return i
)");
  // The line before the label of the loop's body: the nearest label above
  // the line `first` matches (AArch64 may materialize a constant first).
  auto line_before_body = [&](const char* name, const std::regex& first) {
    jit::Blob blob;
    std::string listing, error;
    EXPECT_TRUE(jit::CompileBlob(compiled->function(name), &blob, &listing, &error)) << error;
    std::vector<std::string> lines;
    std::istringstream stream(listing);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    for (size_t k = 0; k < lines.size(); ++k) {
      if (!std::regex_search(lines[k], first)) continue;
      for (size_t label = k; label-- > 1 && label + 3 > k;) {
        if (!lines[label].empty() && lines[label].back() == ':') return lines[label - 1];
      }
    }
    ADD_FAILURE() << "no loop body in\n" << listing;
    return std::string();
  };
  // (An element's address is two registers; the prologue reads a flag of
  // the buffer at a constant offset.)
  const std::regex store(R"(^(mov byte ptr \[\w+\+\w+\]|strb \w+, \[\w+, \w+\]))");
  const std::regex load(R"(^(movzx \w+, byte ptr \[\w+\+\w+\]|ldrb \w+, \[\w+, \w+\]))");
  EXPECT_NE(line_before_body("strike", store).find("align"), std::string::npos);
  EXPECT_EQ(line_before_body("scan", load).find("align"), std::string::npos);
  BorrowedArray flags("B", "bytes(range(1, 60)) + b'\\0' + bytes(40)");
  for (int64_t i : {1, 2, 3, 7}) {
    ExpectSame(*compiled, "strike", {flags.value(), IntValue(100), IntValue(i)});
    ExpectSame(*compiled, "scan", {flags.value(), IntValue(100), IntValue(i)});
  }
}

// ---- A property test: random typed loop programs ------------------------------------------

// Writes a random function over two ints, a float and a float buffer: loops with
// random steps and bounds (counted loops whose limits may pass the buffer's
// end, so that guards fail and the interpreter enters inner loops), branches,
// integer and float arithmetic (including the operations that raise), buffer
// reads and writes with every kind of index. Every name is typed from its first
// assignment. PPY_RANDOM_PROGRAMS=N runs N programs instead of 1,000.
std::string RandomProgram(std::mt19937_64& random) {
  auto pick = [&](int n) { return static_cast<int>(random() % n); };
  std::vector<std::string> ints = {"a", "b", "i0"}, floats = {"x", "y"};
  std::function<std::string(int)> int_expr = [&](int depth) -> std::string {
    if (depth <= 0 || pick(3) == 0) {
      return pick(3) == 0 ? std::to_string(pick(20) - 5) : ints[pick(static_cast<int>(ints.size()))];
    }
    static const char* kOps[] = {"+", "-", "*", "//", "%", "&", "|", "^"};
    return "(" + int_expr(depth - 1) + " " + kOps[pick(8)] + " " + int_expr(depth - 1) + ")";
  };
  std::function<std::string(int)> float_expr = [&](int depth) -> std::string {
    if (depth <= 0 || pick(3) == 0) {
      switch (pick(7)) {
        case 0: return std::to_string(pick(40) - 20) + ".5";
        case 1: return "xs[" + int_expr(0) + " % len(xs)]";
        // Indexes as loops write them: negative ones, past the end, int(x).
        case 2: return "xs[" + ints[pick(static_cast<int>(ints.size()))] + "]";
        case 3: return "xs[int(" + floats[pick(static_cast<int>(floats.size()))] + ")]";
        default: return floats[pick(static_cast<int>(floats.size()))];
      }
    }
    static const char* kOps[] = {"+", "-", "*", "/"};
    if (pick(6) == 0) return "float(" + int_expr(depth - 1) + ")";
    if (pick(8) == 0) return "math.sqrt(abs(" + float_expr(depth - 1) + "))";
    return "(" + float_expr(depth - 1) + " " + kOps[pick(4)] + " " + float_expr(depth - 1) + ")";
  };
  auto condition = [&]() -> std::string {
    static const char* kCmp[] = {"<", "<=", "==", "!=", ">", ">="};
    switch (pick(3)) {
      case 0: return int_expr(1) + " " + kCmp[pick(6)] + " " + int_expr(1);
      case 1: return float_expr(1) + " " + kCmp[pick(6)] + " " + float_expr(1);
      default: return float_expr(1) + " " + kCmp[pick(6)] + " " + int_expr(1);
    }
  };
  std::ostringstream body;
  std::function<void(int, int)> statements = [&](int indent, int depth) {
    std::string pad(indent * 4, ' ');
    int count = 1 + pick(3);
    for (int s = 0; s < count; ++s) {
      switch (pick(depth > 2 ? 4 : 7)) {
        case 0: body << pad << ints[pick(2)] << " = " << int_expr(2) << "\n"; break;
        case 1: body << pad << floats[pick(2)] << " = " << float_expr(2) << "\n"; break;
        case 2:
          if (pick(2) == 0) {
            body << pad << "xs[" << int_expr(1) << " % len(xs)] = " << float_expr(1) << "\n";
          } else {
            body << pad << "xs[" << int_expr(0) << "] = " << float_expr(1) << "\n";
          }
          break;
        case 3: body << pad << floats[pick(2)] << " += " << float_expr(1) << "\n"; break;
        case 4: {
          std::string var = "i" + std::to_string(depth);
          if (pick(2) == 0) {
            // A counted loop: a constant start, a limit that may pass the buffer's end.
            static const char* kLimits[] = {"a % 9", "b % 9", "len(xs)", "len(xs) - 1", "7"};
            body << pad << "for " << var << " in range(" << pick(3) << ", " << kLimits[pick(5)] << "):\n";
          } else {
            int start = pick(5) - 2, stop = pick(30), step = pick(4) == 0 ? -(1 + pick(3)) : 1 + pick(3);
            body << pad << "for " << var << " in range(" << start << ", " << stop << ", " << step << "):\n";
          }
          ints.push_back(var);
          statements(indent + 1, depth + 1);
          ints.pop_back();
          break;
        }
        case 5:
          body << pad << "if " << condition() << ":\n";
          statements(indent + 1, depth + 1);
          body << pad << "else:\n";
          statements(indent + 1, depth + 1);
          break;
        default: {
          std::string counter = "k" + std::to_string(depth);
          body << pad << counter << " = 0\n" << pad << "while " << counter << " < " << pick(20) << ":\n";
          body << pad << "    " << counter << " += 1\n";
          statements(indent + 1, depth + 1);
          break;
        }
      }
    }
  };
  statements(1, 0);
  return "import math\nfrom ppy import Buffer\n\ndef kernel(a: int, b: int, x: float, xs: Buffer[float]) -> float:\n"
         "    y = 0.0\n    i0 = 0\n" +
         body.str() + "    return x + y + float(a) + float(b) + xs[0]\n";
}

TEST_F(Jit, RandomLoopProgramsAgreeWithTheInterpreter) {
  std::mt19937_64 random(20261129);
  int compiled_programs = 0;
  const int programs = std::getenv("PPY_RANDOM_PROGRAMS") ? std::atoi(std::getenv("PPY_RANDOM_PROGRAMS")) : 1000;
  for (int program = 0; program < programs; ++program) {
    std::string source = RandomProgram(random);
    auto compiled = Compile(source);
    if (compiled->result.functions.empty() || !compiled->result.functions[0].compiled) continue;
    ++compiled_programs;
    for (int trial = 0; trial < 3; ++trial) {
      int64_t a = static_cast<int64_t>(random() % 41) - 20, b = static_cast<int64_t>(random() % 41) - 20;
      double x = static_cast<double>(random() % 1000) / 37.0 - 10.0;
      BorrowedArray x1("d", "[1.5, -2.0, 3.25, 0.0, 7.0]"), x2("d", "[1.5, -2.0, 3.25, 0.0, 7.0]");
      auto [interpreted, machine] =
          BothWaysOnCopies(*compiled, "kernel", {IntValue(a), IntValue(b), FloatValue(x), x1.value()},
                           {IntValue(a), IntValue(b), FloatValue(x), x2.value()});
      // A deoptimization (an int past 64 bits before any effect) hands the
      // call to CPython, which this harness does not run. Machine code does
      // not count its stores, and leaving at a pc some store may precede
      // counts one (FunctionCode::after_store): the interpreter then grows
      // the int instead, with CPython's semantics too, and its outcome is
      // not comparable with the bare "Deoptimize".
      if (interpreted.rfind("Deoptimize:", 0) == 0 && machine != interpreted) continue;
      ASSERT_EQ(interpreted, machine) << source << "\nwith a=" << a << " b=" << b << " x=" << x;
      ASSERT_EQ(x1.contents(), x2.contents()) << source;
    }
  }
  EXPECT_GT(compiled_programs, programs * 2 / 3);
}

// ---- Coverage: every instruction opcodes.def flags JIT has machine code ----------------

// The register kind an operand mode names, for building one instruction of
// each opcode; false for modes that name no register of their own.
bool RegisterFor(Mode mode, RegisterType* type) {
  switch (mode) {
    case Mode::krI:
    case Mode::kwI:
    case Mode::kuI: *type = {Kind::kInt}; return true;
    case Mode::krF:
    case Mode::kwF:
    case Mode::krC:
    case Mode::kwC: *type = {Kind::kFloat}; return true;
    case Mode::krU:
    case Mode::kwU:
    case Mode::krUd: *type = {Kind::kBuffer, ElemType::kF64}; return true;
    case Mode::krUq: *type = {Kind::kBuffer, ElemType::kI64}; return true;
    case Mode::krUf: *type = {Kind::kBuffer, ElemType::kF32}; return true;
    case Mode::krUi: *type = {Kind::kBuffer, ElemType::kI32}; return true;
    case Mode::krO:
    case Mode::kwO: *type = {Kind::kObject}; return true;
    default: return false;
  }
}

// A module of two functions: 0 is a typed callee (int, float) -> float, 1
// holds `op` once (operands of the kinds its modes name, jumps forward to a
// return, or back to itself for a loop instruction) and `math` for an M
// operand. Built from the opcode table alone, so a new flagged instruction is
// tested without touching this file.
std::unique_ptr<ModuleCode> OneInstruction(Op op, int math) {
  auto module = std::make_unique<ModuleCode>();
  module->filename = "coverage.ppy";
  auto callee = std::make_unique<FunctionCode>();
  callee->name = callee->qualname = "callee";
  callee->params = {{"i", ValueType::kInt}, {"x", ValueType::kFloat}};
  callee->result = ValueType::kFloat;
  callee->registers = {{Kind::kInt}, {Kind::kFloat}};
  callee->code = {{Op::RET_F, 1, 0, 0, 0}};
  callee->lines = {1};
  callee->module = module.get();
  module->functions.push_back(std::move(callee));

  auto fn = std::make_unique<FunctionCode>();
  fn->name = fn->qualname = std::string(InfoOf(op).name);
  fn->module = module.get();
  const OpInfo& info = InfoOf(op);
  Instr in{op};
  uint8_t* fields[3] = {&in.a, &in.b, &in.c};
  const Mode modes[3] = {info.a, info.b, info.c};
  if (op == Op::CALL_FN) {  // R[A] := callee(R[B], R[B+1])
    fn->registers = {{Kind::kInt}, {Kind::kFloat}, {Kind::kFloat}};
    in = {op, 2, 0, 2, 0};
  } else {
    for (int field = 0; field < 3; ++field) {
      RegisterType type;
      if (!RegisterFor(modes[field], &type)) continue;
      *fields[field] = static_cast<uint8_t>(fn->registers.size());
      fn->registers.push_back(type);
      // A complex operand names a pair of float registers.
      if (modes[field] == Mode::krC || modes[field] == Mode::kwC) fn->registers.push_back(type);
    }
    RegisterType type;
    if (RegisterFor(info.d, &type)) {
      in.d = static_cast<int32_t>(fn->registers.size());
      fn->registers.push_back(type);
    }
  }
  const bool loops = HasFlag(op, kFlagLoop);
  if (info.d == Mode::kJ) in.d = loops ? 0 : 1;
  if (info.d == Mode::kM) in.d = math;
  if (info.d == Mode::kK) fn->objects.push_back(PyUnicode_InternFromString("x"));
  if (loops) fn->loop_headers = {0};
  const uint8_t result = static_cast<uint8_t>(fn->registers.size());
  fn->registers.push_back({Kind::kInt});
  fn->code = {in, {Op::RET_I, result, 0, 0, 0}};
  fn->lines = {1, 1};
  if (op == Op::MOVE_O) {
    // (A call never enters machine code at a MOVE_O, EntersAtStart: a loop
    // of it makes the code that runs it.)
    const uint8_t flag = static_cast<uint8_t>(fn->registers.size());
    fn->registers.push_back({Kind::kInt});
    fn->code = {in, {Op::JNE_I, flag, flag, 0, 3}, {Op::LOOP, 0, 0, 0, 0}, {Op::RET_I, result, 0, 0, 0}};
    fn->lines = {1, 1, 1, 1};
    fn->loop_headers = {0};
  }
  fn->result = ValueType::kInt;
  module->functions.push_back(std::move(fn));
  return module;
}

// The math ids an M operand of `op` may take: those of the op's shape.
std::vector<int> MathIdsFor(Op op) {
  MathShape shape = op == Op::MATH_FF ? MathShape::FF
                    : op == Op::MATH_FI ? MathShape::FI
                    : op == Op::MATH_FB ? MathShape::FB
                                        : MathShape::F;
  std::vector<int> ids;
  for (int id = 0; id < kMathCount; ++id) {
    if (kMathInfo[id].shape == shape) ids.push_back(id);
  }
  return ids;
}

// Covers() is generated from the JIT flag; here CodeGen is held to it: every
// flagged instruction compiles to machine code of its own, without the default
// side exit (CompileBlob refuses code where CodeGen found no case).
TEST_F(Jit, CompilesEveryInstructionFlaggedJit) {
  int flagged = 0;
  for (int index = 0; index < kOpCount; ++index) {
    const Op op = static_cast<Op>(index);
    const std::string name(InfoOf(op).name);
    if (!HasFlag(op, kFlagJit)) {
      // The default is "not covered": an unflagged instruction is a side exit.
      Instr in{op};
      EXPECT_FALSE(jit::Covers(*OneInstruction(Op::MOVE_I, 0)->functions[1], in)) << name;
      continue;
    }
    ++flagged;
    std::vector<int> maths = InfoOf(op).d == Mode::kM ? MathIdsFor(op) : std::vector<int>{0};
    int compiled = 0;
    for (int math : maths) {
      auto module = OneInstruction(op, math);
      const FunctionCode& fn = *module->functions[1];
      if (!jit::Covers(fn, fn.code[0])) continue;  // a refinement: e.g. math CPython computes itself
      jit::Blob blob;
      std::string error;
      EXPECT_TRUE(jit::CompileBlob(fn, &blob, nullptr, &error)) << name << " (math id " << math << "): " << error;
      ++compiled;
    }
    EXPECT_GT(compiled, 0) << name << " is flagged JIT but no instance of it is covered";
  }
  EXPECT_GT(flagged, 90);
}

}  // namespace
}  // namespace ppy
