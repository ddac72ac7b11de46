// The math fast paths call libm; they are correct only because libm and
// CPython's math module agree bit for bit on finite results. Check that on a
// spread of arguments, so a libm that disagrees fails here, not in a kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/unit/test_util.h"
#include "vm/math_table.h"

namespace ppy {
namespace {

double CallPythonMath(const char* name, double x, double y, bool two, bool* raised) {
  PyObject* math = PyImport_ImportModule("math");
  PyObject* function = PyObject_GetAttrString(math, name);
  PyObject* result = two ? PyObject_CallFunction(function, "dd", x, y) : PyObject_CallFunction(function, "d", x);
  Py_DECREF(function);
  Py_DECREF(math);
  *raised = result == nullptr;
  if (result == nullptr) {
    PyErr_Clear();
    return 0.0;
  }
  double value = PyFloat_AsDouble(result);
  Py_DECREF(result);
  return value;
}

TEST(MathTable, FastPathsAgreeWithCPythonOnFiniteResults) {
  std::mt19937_64 random(12345);
  std::uniform_real_distribution<double> small(-5.0, 5.0);
  std::uniform_int_distribution<int> exponent(-300, 300);
  for (int id = 0; id < kMathCount; ++id) {
    const MathInfo& info = kMathInfo[id];
    if (info.fast1 == nullptr && info.fast2 == nullptr) continue;
    if (info.shape == MathShape::FI) continue;  // floor/ceil/trunc are exact
    int checked = 0;
    for (int trial = 0; trial < 4000; ++trial) {
      double x = trial % 2 ? small(random) : small(random) * std::pow(10.0, exponent(random));
      double y = small(random);
      bool raised;
      double expected = CallPythonMath(info.name, x, y, info.shape == MathShape::FF, &raised);
      if (raised) continue;
      double actual = info.shape == MathShape::FF ? info.fast2(x, y) : info.fast1(x);
      if (!std::isfinite(actual)) continue;  // the slow path handles these
      ++checked;
      ASSERT_EQ(std::memcmp(&expected, &actual, sizeof(double)), 0)
          << "math." << info.name << "(" << x << ", " << y << "): CPython " << expected << ", libm " << actual;
    }
    EXPECT_GT(checked, 100) << info.name;
  }
}

}  // namespace
}  // namespace ppy
