// The math module functions typed code calls, defined once.
//
// Each entry: the id, the name in Python's math module, the shape (F: float ->
// float, FF: (float, float) -> float, FI: float -> int, FB: float -> bool) and
// the C function that computes it on the fast path, or nullptr where CPython
// computes it itself (hypot, gamma, lgamma and remainder are CPython's own code,
// not libm's, and differ from libm in the last bit).
//
// The fast path keeps a result only when it is finite, or non-finite for a
// non-finite argument in the way CPython would also return. Every other case goes
// to CPython's math module with the same arguments, so domain errors, range
// errors and special values are exactly CPython's. That libm and CPython agree
// bit for bit on finite results is checked by tests/unit/math_table_test.cpp.
#pragma once

#include <cmath>

namespace ppy {

#define PPY_MATH_FUNCTIONS(X)          \
  X(SQRT, "sqrt", F, std::sqrt)        \
  X(EXP, "exp", F, std::exp)           \
  X(EXP2, "exp2", F, std::exp2)        \
  X(EXPM1, "expm1", F, std::expm1)     \
  X(LOG, "log", F, std::log)           \
  X(LOG2, "log2", F, std::log2)        \
  X(LOG10, "log10", F, std::log10)     \
  X(LOG1P, "log1p", F, std::log1p)     \
  X(SIN, "sin", F, std::sin)           \
  X(COS, "cos", F, std::cos)           \
  X(TAN, "tan", F, std::tan)           \
  X(ASIN, "asin", F, std::asin)        \
  X(ACOS, "acos", F, std::acos)        \
  X(ATAN, "atan", F, std::atan)        \
  X(SINH, "sinh", F, std::sinh)        \
  X(COSH, "cosh", F, std::cosh)        \
  X(TANH, "tanh", F, std::tanh)        \
  X(ASINH, "asinh", F, std::asinh)     \
  X(ACOSH, "acosh", F, std::acosh)     \
  X(ATANH, "atanh", F, std::atanh)     \
  X(FABS, "fabs", F, std::fabs)        \
  X(ERF, "erf", F, std::erf)           \
  X(ERFC, "erfc", F, std::erfc)        \
  X(CBRT, "cbrt", F, std::cbrt)        \
  X(DEGREES, "degrees", F, MathDegrees) \
  X(RADIANS, "radians", F, MathRadians) \
  X(GAMMA, "gamma", F, nullptr)        \
  X(LGAMMA, "lgamma", F, nullptr)      \
  X(ATAN2, "atan2", FF, std::atan2)    \
  X(POW, "pow", FF, std::pow)          \
  X(COPYSIGN, "copysign", FF, std::copysign) \
  X(FMOD, "fmod", FF, std::fmod)       \
  X(HYPOT, "hypot", FF, nullptr)       \
  X(REMAINDER, "remainder", FF, nullptr) \
  X(LOG_BASE, "log", FF, nullptr)      \
  X(FLOOR, "floor", FI, std::floor)    \
  X(CEIL, "ceil", FI, std::ceil)       \
  X(TRUNC, "trunc", FI, std::trunc)    \
  X(ROUND, "round", FI, std::nearbyint) \
  X(ISNAN, "isnan", FB, nullptr)       \
  X(ISINF, "isinf", FB, nullptr)       \
  X(ISFINITE, "isfinite", FB, nullptr)

// ROUND is the builtin round(x) of a float, not a math function (there is no
// math.round): the nearest integer, ties to even, as CPython's float.__round__
// gives (nearbyint rounds so in the default rounding mode, which Python never
// changes), then int()'s conversion and errors. IsMathModuleFunction says so.

// CPython computes these as one multiplication by a rounded constant.
inline double MathDegrees(double x) { return x * (180.0 / 3.141592653589793); }
inline double MathRadians(double x) { return x * (3.141592653589793 / 180.0); }

enum class MathFn : uint8_t {
#define PPY_MATH_ENUM(id, name, shape, fn) id,
  PPY_MATH_FUNCTIONS(PPY_MATH_ENUM)
#undef PPY_MATH_ENUM
};

enum class MathShape : uint8_t { F, FF, FI, FB };

struct MathInfo {
  const char* name;
  MathShape shape;
  double (*fast1)(double);          // F and FI shapes
  double (*fast2)(double, double);  // FF shape
};

// The casts pick the double overload of each <cmath> function.
#define PPY_MATH_FAST1_F(fn) static_cast<double (*)(double)>(fn)
#define PPY_MATH_FAST1_FI(fn) static_cast<double (*)(double)>(fn)
#define PPY_MATH_FAST1_FF(fn) nullptr
#define PPY_MATH_FAST1_FB(fn) nullptr
#define PPY_MATH_FAST2_F(fn) nullptr
#define PPY_MATH_FAST2_FI(fn) nullptr
#define PPY_MATH_FAST2_FF(fn) static_cast<double (*)(double, double)>(fn)
#define PPY_MATH_FAST2_FB(fn) nullptr

inline constexpr MathInfo kMathInfo[] = {
#define PPY_MATH_INFO(id, name, shape, fn) \
  {name, MathShape::shape, PPY_MATH_FAST1_##shape(fn), PPY_MATH_FAST2_##shape(fn)},
    PPY_MATH_FUNCTIONS(PPY_MATH_INFO)
#undef PPY_MATH_INFO
};
inline constexpr int kMathCount = sizeof(kMathInfo) / sizeof(kMathInfo[0]);

// Whether table entry `id` is a function of the math module (all but ROUND).
inline constexpr bool IsMathModuleFunction(int id) { return id != static_cast<int>(MathFn::ROUND); }

// The constants of the math module that typed code folds.
inline constexpr struct {
  const char* name;
  double value;
} kMathConstants[] = {
    {"pi", 3.141592653589793},
    {"e", 2.718281828459045},
    {"tau", 6.283185307179586},
    {"inf", HUGE_VAL},
    {"nan", NAN},
};

}  // namespace ppy
