// Compiled functions run on the interpreter, compared with what CPython says
// the same expression is.
#include <gtest/gtest.h>

#include "tests/unit/test_util.h"

namespace ppy {
namespace {

using testing::Call;
using testing::Compile;
using testing::FloatValue;
using testing::IntValue;
using testing::PythonEval;

TEST(Interpreter, IntegerArithmeticMatchesPython) {
  auto compiled = Compile(R"(
def ops(a: int, b: int) -> tuple:
    return (a + b, a - b, a * b, a // b, a % b, a / b, a & b, a | b, a ^ b, -a, ~a, abs(a), min(a, b), max(a, b))
)");
  for (int64_t a : {7, -7, 0, 12345, -1}) {
    for (int64_t b : {3, -3, 1, -1, 1000}) {
      std::string expected = PythonEval("(lambda a, b: (a + b, a - b, a * b, a // b, a % b, a / b, a & b, a | b, "
                                        "a ^ b, -a, ~a, abs(a), min(a, b), max(a, b)))(" +
                                        std::to_string(a) + ", " + std::to_string(b) + ")");
      EXPECT_EQ(Call(*compiled, "ops", {IntValue(a), IntValue(b)}), expected) << a << ", " << b;
    }
  }
}

TEST(Interpreter, FloatArithmeticMatchesPython) {
  auto compiled = Compile(R"(
def ops(a: float, b: float) -> tuple:
    return (a + b, a - b, a * b, a / b, a // b, a % b, a ** 2.0, -a, abs(a), min(a, b), max(a, b))
)");
  for (double a : {7.5, -7.5, 0.1, 1e10}) {
    for (double b : {3.0, -0.3, 2.5}) {
      char call[128];
      snprintf(call, sizeof call, "(float('%.17g'), float('%.17g'))", a, b);
      std::string expected = PythonEval(std::string("(lambda a, b: (a + b, a - b, a * b, a / b, a // b, a % b, "
                                                    "a ** 2.0, -a, abs(a), min(a, b), max(a, b)))") + call);
      EXPECT_EQ(Call(*compiled, "ops", {FloatValue(a), FloatValue(b)}), expected) << call;
    }
  }
}

TEST(Interpreter, DivisionByZeroRaisesCPythonsErrors) {
  auto compiled = Compile(R"(
def int_floordiv(a: int, b: int) -> int:
    return a // b
def int_mod(a: int, b: int) -> int:
    return a % b
def int_truediv(a: int, b: int) -> float:
    return a / b
def float_div(a: float, b: float) -> float:
    return a / b
def float_mod(a: float, b: float) -> float:
    return a % b
def float_floordiv(a: float, b: float) -> float:
    return a // b
)");
  EXPECT_EQ(Call(*compiled, "int_floordiv", {IntValue(1), IntValue(0)}), PythonEval("1 // 0"));
  EXPECT_EQ(Call(*compiled, "int_mod", {IntValue(1), IntValue(0)}), PythonEval("1 % 0"));
  EXPECT_EQ(Call(*compiled, "int_truediv", {IntValue(1), IntValue(0)}), PythonEval("1 / 0"));
  EXPECT_EQ(Call(*compiled, "float_div", {FloatValue(1), FloatValue(0)}), PythonEval("1.0 / 0.0"));
  EXPECT_EQ(Call(*compiled, "float_mod", {FloatValue(1), FloatValue(0)}), PythonEval("1.0 % 0.0"));
  EXPECT_EQ(Call(*compiled, "float_floordiv", {FloatValue(1), FloatValue(0)}), PythonEval("1.0 // 0.0"));
}

TEST(Interpreter, IntOverflowNamesTheFileAndLine) {
  // An annotated local is 64-bit: OverflowError.
  auto compiled = Compile("def grow(a: int) -> int:\n    b: int = a * 2\n    return b\n");
  EXPECT_EQ(Call(*compiled, "grow", {IntValue(INT64_MAX)}),
            "OverflowError: test.ppy:2: int result of * does not fit in 64 bits (Python ints are unbounded, "
            "ppy's are 64-bit)");
}

TEST(Interpreter, AnUnannotatedIntThatOutgrows64BitsDeoptimizesAPureCall) {
  // Deoptimize asks the call boundary to run the Python code instead (here,
  // with no boundary, it reaches the caller).
  auto compiled = Compile(R"(
def grow(a: int):
    b = a * 2
    return b
)");
  EXPECT_EQ(Call(*compiled, "grow", {IntValue(INT64_MAX)}),
            "Deoptimize: test.ppy:3: int result of * does not fit in 64 bits (Python ints are unbounded, "
            "ppy's are 64-bit)");
  EXPECT_EQ(Call(*compiled, "grow", {IntValue(5)}), "10");
}

TEST(Interpreter, RangeLoopsFollowPythonForEveryStep) {
  auto compiled = Compile(R"(
def total(start: int, stop: int, step: int) -> int:
    s = 0
    n = 0
    for i in range(start, stop, step):
        s += i * (n + 1)
        n += 1
    return s * 1000 + n
)");
  for (int64_t start : {-5, 0, 3}) {
    for (int64_t stop : {-4, 0, 7, 10}) {
      for (int64_t step : {1, 2, -1, -3, 5}) {
        std::string args = std::to_string(start) + ", " + std::to_string(stop) + ", " + std::to_string(step);
        std::string expected = PythonEval(
            "(lambda a, b, c: (lambda r: sum(v * (k + 1) for k, v in enumerate(r)) * 1000 + len(r))(range(a, b, c)))(" +
            args + ")");
        EXPECT_EQ(Call(*compiled, "total", {IntValue(start), IntValue(stop), IntValue(step)}), expected) << args;
      }
    }
  }
  EXPECT_EQ(Call(*compiled, "total", {IntValue(0), IntValue(5), IntValue(0)}), "ValueError: range() arg 3 must not be zero");
}

TEST(Interpreter, RangeLoopsReachTheEndsOf64Bits) {
  auto compiled = Compile(R"(
def last(start: int, stop: int, step: int) -> int:
    x = 0
    for i in range(start, stop, step):
        x = i
    return x
)");
  const int64_t max = INT64_MAX;
  EXPECT_EQ(Call(*compiled, "last", {IntValue(max - 3), IntValue(max), IntValue(1)}), std::to_string(max - 1));
  EXPECT_EQ(Call(*compiled, "last", {IntValue(max - 10), IntValue(max), IntValue(4)}), std::to_string(max - 2));
  EXPECT_EQ(Call(*compiled, "last", {IntValue(INT64_MIN + 10), IntValue(INT64_MIN), IntValue(-4)}),
            std::to_string(INT64_MIN + 2));
}

TEST(Interpreter, MixedComparisonsBranchExactly) {
  auto compiled = Compile(R"(
def below(f: float, i: int) -> bool:
    if f < i:
        return True
    return False
def not_below(f: float, i: int) -> bool:
    if not (f < i):
        return True
    return False
)");
  const int64_t big = (int64_t{1} << 53) + 1;
  EXPECT_EQ(Call(*compiled, "below", {FloatValue(9007199254740992.0), IntValue(big)}), "True");
  EXPECT_EQ(Call(*compiled, "below", {FloatValue(NAN), IntValue(0)}), "False");
  EXPECT_EQ(Call(*compiled, "not_below", {FloatValue(NAN), IntValue(0)}), "True");
}

TEST(Interpreter, MaybeUnboundLocalsRaiseUnboundLocalError) {
  auto compiled = Compile(R"(
def pick(flag: bool) -> int:
    if flag:
        x = 1
    return x
)");
  EXPECT_EQ(Call(*compiled, "pick", {IntValue(1)}), "1");
  EXPECT_EQ(Call(*compiled, "pick", {IntValue(0)}),
            "UnboundLocalError: cannot access local variable 'x' where it is not associated with a value");
}

TEST(Interpreter, TypedCallsPassValuesAndDefaults) {
  auto compiled = Compile(R"(
def scale(x: float, factor: float = 2.0) -> float:
    return x * factor
def gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
def use(x: float) -> float:
    return scale(x) + scale(x, factor=3.0) + gcd(84, 36)
)");
  EXPECT_EQ(Call(*compiled, "use", {FloatValue(1.5)}), "19.5");
}

TEST(Interpreter, ObjectModeRunsThroughTheCApi) {
  auto compiled = Compile(R"(
def describe(n: int) -> str:
    parts = []
    for i in range(n):
        parts.append(f"{i}:{i * i:03d}")
    return ", ".join(parts) + f" {len(parts)!r} {dict(a=n)}"
)");
  EXPECT_EQ(Call(*compiled, "describe", {IntValue(3)}), "\"0:000, 1:001, 2:004 3 {'a': 3}\"");
}

}  // namespace
}  // namespace ppy
