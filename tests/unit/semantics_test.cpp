// Python's numeric semantics on 64-bit ints and doubles, checked value by value
// against CPython itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"
#include "vm/runtime.h"

namespace ppy {
namespace {

using testing::PythonEval;

std::string Repr(double value) {
  PyObject* boxed = PyFloat_FromDouble(value);
  PyObject* repr = PyObject_Repr(boxed);
  std::string text = PyUnicode_AsUTF8(repr);
  Py_DECREF(repr);
  Py_DECREF(boxed);
  return text;
}

std::string PyFloatLiteral(double value) {
  if (std::isnan(value)) return "float('nan')";
  if (std::isinf(value)) return value > 0 ? "float('inf')" : "float('-inf')";
  return "float('" + Repr(value) + "')";
}

const std::vector<int64_t> kInts = {0, 1, -1, 2, -2, 3, -3, 7, -7, 10, -10, 100, -100, INT64_MAX, INT64_MIN + 1,
                                    (int64_t{1} << 53) + 1, -(int64_t{1} << 53) - 1, (int64_t{1} << 62)};

TEST(Semantics, FloorDivisionAndModuloOfInts) {
  for (int64_t x : kInts) {
    for (int64_t y : kInts) {
      if (y == 0) continue;
      std::string expr = std::to_string(x) + ", " + std::to_string(y);
      int64_t quotient;
      FloorDivInt(x, y, &quotient);
      EXPECT_EQ(PythonEval("divmod(" + expr + ")[0]"), std::to_string(quotient)) << expr;
      EXPECT_EQ(PythonEval("divmod(" + expr + ")[1]"), std::to_string(ModInt(x, y))) << expr;
    }
  }
}

TEST(Semantics, FloorDivisionAndModuloOfFloats) {
  const std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, -7.0, 0.1, -0.1, 1e300, -1e-300,
                                      INFINITY, -INFINITY};
  for (double x : values) {
    for (double y : values) {
      if (y == 0.0) continue;
      std::string expr = PyFloatLiteral(x) + ", " + PyFloatLiteral(y);
      EXPECT_EQ(PythonEval("(" + PyFloatLiteral(x) + ") // (" + PyFloatLiteral(y) + ")"), Repr(FloorDivFloat(x, y)))
          << expr;
      EXPECT_EQ(PythonEval("(" + PyFloatLiteral(x) + ") % (" + PyFloatLiteral(y) + ")"), Repr(ModFloat(x, y))) << expr;
    }
  }
}

TEST(Semantics, TrueDivisionOfIntsIsCorrectlyRounded) {
  for (int64_t x : kInts) {
    for (int64_t y : kInts) {
      if (y == 0) continue;
      double quotient;
      ASSERT_TRUE(TrueDivideInt(x, y, &quotient));
      EXPECT_EQ(PythonEval(std::to_string(x) + " / " + std::to_string(y)), Repr(quotient)) << x << " / " << y;
    }
  }
}

TEST(Semantics, PowersOfIntsOverflowExactlyWhenPythonLeaves64Bits) {
  for (int64_t base : std::vector<int64_t>{0, 1, -1, 2, -2, 3, 10, -10}) {
    for (int64_t exponent : std::vector<int64_t>{0, 1, 2, 3, 31, 62, 63, 64, 100}) {
      int64_t result = 0;
      bool fits = PowInt(base, exponent, &result);
      std::string power = "(" + std::to_string(base) + ") ** " + std::to_string(exponent);
      std::string python = PythonEval(power);
      std::string in_range = PythonEval("-2**63 <= " + power + " < 2**63");
      EXPECT_EQ(fits, in_range == "True") << base << " ** " << exponent;
      if (fits) {
        EXPECT_EQ(python, std::to_string(result));
      }
    }
  }
}

TEST(Semantics, IntFloatComparisonsCompareExactValues) {
  const std::vector<double> floats = {0.0, -0.0, 0.5, -0.5, 1.0, 9007199254740992.0, 9007199254740993.0,
                                      9223372036854775808.0, -9223372036854775808.0, 1e19, -1e19, NAN, INFINITY,
                                      -INFINITY, 4611686018427387904.5};
  for (double f : floats) {
    for (int64_t i : kInts) {
      int c = CompareFloatInt(f, i);
      std::string lt = PythonEval(PyFloatLiteral(f) + " < " + std::to_string(i));
      std::string eq = PythonEval(PyFloatLiteral(f) + " == " + std::to_string(i));
      std::string gt = PythonEval(PyFloatLiteral(f) + " > " + std::to_string(i));
      EXPECT_EQ(lt, c == -1 ? "True" : "False") << f << " < " << i;
      EXPECT_EQ(eq, c == 0 ? "True" : "False") << f << " == " << i;
      EXPECT_EQ(gt, c == 1 ? "True" : "False") << f << " > " << i;
    }
  }
}

TEST(Semantics, ShiftsFollowPython) {
  for (int64_t x : std::vector<int64_t>{0, 1, -1, 5, -5, INT64_MAX, INT64_MIN}) {
    for (int64_t y : std::vector<int64_t>{0, 1, 2, 62, 63, 64, 200}) {
      EXPECT_EQ(PythonEval(std::to_string(x) + " >> " + std::to_string(y)), std::to_string(ShiftRightInt(x, y)));
      int64_t shifted;
      if (ShiftLeftInt(x, y, &shifted)) {
        EXPECT_EQ(PythonEval(std::to_string(x) + " << " + std::to_string(y)), std::to_string(shifted));
      } else {
        EXPECT_EQ(PythonEval("-2**63 <= (" + std::to_string(x) + " << " + std::to_string(y) + ") < 2**63"), "False");
      }
    }
  }
}

}  // namespace
}  // namespace ppy
