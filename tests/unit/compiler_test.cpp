// What the checker decides: which functions compile, why others fall back, and
// the diagnostics for type errors.
#include <gtest/gtest.h>

#include "compiler/ast_reader.h"
#include "compiler/compile.h"
#include "tests/unit/test_util.h"

namespace ppy {
namespace {

std::vector<std::string> Messages(const CompileResult& result) {
  std::vector<std::string> messages;
  for (const Diagnostic& diagnostic : result.diagnostics) {
    messages.push_back(std::to_string(diagnostic.loc.line) + ":" + std::to_string(diagnostic.loc.col + 1) + " " +
                       diagnostic.message);
  }
  return messages;
}

const FunctionReport& Report(const CompileResult& result, const std::string& name) {
  for (const FunctionReport& report : result.functions) {
    if (report.name == name) return report;
  }
  static FunctionReport missing;
  ADD_FAILURE() << "no function " << name;
  return missing;
}

TEST(Compiler, ReportsEveryTypeErrorWithItsPosition) {
  auto compiled = testing::Compile(R"(
def f(n: int) -> int:
    total: int = 0
    total += 0.5
    flag: bool = n
    return "text"
)");
  EXPECT_EQ(Messages(compiled->result),
            (std::vector<std::string>{
                "4:5 'total' is int (from its first assignment at line 3); += makes it float",
                "5:18 cannot assign int to 'flag' (bool, from its first assignment at line 5)",
                "6:12 'f' is annotated to return int but this returns str",
            }));
  EXPECT_FALSE(Report(compiled->result, "f").compiled);
  EXPECT_EQ(Report(compiled->result, "f").reason, "type errors");
}

// An unannotated local's type joins all its assignments: where they
// disagree it holds a dynamic value, as Python's name would, instead of an
// error or an unboxing that raises.
TEST(Compiler, UnannotatedLocalsWhoseAssignmentsDisagreeAreDynamic) {
  auto compiled = testing::Compile(R"(
def f(n: int, xs: list):
    total = 0
    total += 0.5
    count = 0
    count += 1
    item = 0.0
    for item in xs:
        pass
    flag = 0
    if n > 1:
        flag = True
    return total, count, item, flag
)");
  EXPECT_TRUE(compiled->result.diagnostics.empty()) << Messages(compiled->result).front();
  const FunctionReport& f = Report(compiled->result, "f");
  EXPECT_TRUE(f.compiled);
  EXPECT_EQ(f.dynamic_locals, (std::vector<std::string>{"total (int at line 3, float at line 4)",
                                                        "item (float at line 7, object at line 8)",
                                                        "flag (int at line 10, bool at line 12)"}));
}

TEST(Compiler, FallsBackWithTheConstructAndItsLine) {
  auto compiled = testing::Compile(R"(
def uses_lambda(xs: list) -> list:
    return sorted(xs, key=lambda x: -x)

def uses_try() -> int:
    try:
        return 1
    except ValueError:
        return 2

def fine(x: int) -> int:
    return x + 1
)");
  const FunctionReport& lambda = Report(compiled->result, "uses_lambda");
  EXPECT_FALSE(lambda.compiled);
  EXPECT_EQ(lambda.reason, "a lambda");
  EXPECT_EQ(lambda.reason_loc.line, 3);
  EXPECT_EQ(Report(compiled->result, "uses_try").reason, "a try statement");
  EXPECT_TRUE(Report(compiled->result, "fine").compiled);
  EXPECT_TRUE(compiled->result.diagnostics.empty());
}

TEST(Compiler, NativeTurnsAFallbackIntoAnError) {
  auto compiled = testing::Compile(R"(
import ppy

@ppy.native
def must(xs: list) -> int:
    return len([x for x in xs])
)");
  EXPECT_EQ(Messages(compiled->result),
            (std::vector<std::string>{"6:16 @ppy.native function 'must' cannot be compiled: it uses a comprehension"}));
}

TEST(Compiler, InfersLocalsFromTheirFirstAssignment) {
  auto compiled = testing::Compile(R"(
def f(n: int) -> float:
    scale = 0.5
    count = n
    for i in range(n):
        count += i
    return scale * count
)");
  EXPECT_TRUE(Report(compiled->result, "f").compiled);
  EXPECT_EQ(testing::Call(*compiled, "f", {testing::IntValue(4)}), "5.0");
}

TEST(Compiler, CallsFallbackFunctionsAsObjects) {
  auto compiled = testing::Compile(R"(
def helper(x: int) -> int:
    return sum([i for i in range(x)])

def caller(x: int) -> int:
    return helper(x) + 1
)");
  EXPECT_FALSE(Report(compiled->result, "helper").compiled);
  EXPECT_TRUE(Report(compiled->result, "caller").compiled);
}

// The "never slower" rule (compile.cpp, ObjectCodeAsPython): a function whose
// loops do object operations and (almost) nothing typed runs as Python, unless
// @ppy.native asks for it; typed work, even beside object operations, keeps
// a function compiled, and so does a subscript by a typed int (`indexed`).
// So does a function of glue alone over objects (`identity`, `nothing`), but
// not one with a typed parameter or result (`typed_identity`, `one`).
// testing::Compile turns the rule off, as the import hook never does.
TEST(Compiler, FunctionsOfMostlyObjectOperationsRunAsPython) {
  const char* source = R"(
import ppy

def objects(xs):
    total = 0
    for x in xs:
        total += x
    return total

def counted(rows, key, n: int):
    total = 0
    for i in range(n):
        total += rows[key]
    return total

def indexed(xs, n: int):
    total = 0
    for i in range(n):
        total += xs[i]
    return total

def typed(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total

def mixed(xs, n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7 + (i >> 1) + (i & 3)
        xs.append(i)
    return total

@ppy.native
def forced(xs):
    return xs[0] + xs[1]

def identity(p):
    return p

def nothing(p, q):
    pass

def typed_identity(n: int) -> int:
    return n

def one() -> int:
    return 1
)";
  for (bool rule : {true, false}) {
    PyObject* tree = ParseSource(source, "test.ppy");
    ASSERT_NE(tree, nullptr);
    CompileResult result = CompileModule(tree, "test.ppy", "test", /*regions=*/false, rule);
    Py_DECREF(tree);
    for (const char* name : {"objects", "counted"}) {
      const FunctionReport& report = Report(result, name);
      EXPECT_EQ(report.compiled, !rule) << name;
      if (rule) {
        EXPECT_NE(report.reason.find("mostly object operations"), std::string::npos) << report.reason;
        EXPECT_EQ(report.reason_loc.line, 0) << name;
      }
    }
    for (const char* name : {"identity", "nothing"}) {
      const FunctionReport& report = Report(result, name);
      EXPECT_EQ(report.compiled, !rule) << name;
      if (rule) {
        EXPECT_NE(report.reason.find("no operation but moving objects"), std::string::npos) << report.reason;
      }
    }
    for (const char* name : {"typed", "mixed", "indexed", "forced", "typed_identity", "one"}) {
      EXPECT_TRUE(Report(result, name).compiled) << name;
    }
  }
}

}  // namespace
}  // namespace ppy
