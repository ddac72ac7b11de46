// Golden disassembly: a change to code generation shows up as a diff of
// tests/unit/golden/*.txt. Run with PPY_UPDATE_GOLDEN=1 to rewrite them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/unit/test_util.h"
#include "vm/disasm.h"

namespace ppy {
namespace {

void ExpectGolden(const std::string& name, const std::string& actual) {
  std::string path = std::string(PPY_GOLDEN_DIR) + "/" + name;
  if (std::getenv("PPY_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << "missing golden file " << path << " (run with PPY_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << file.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden " << path << " differs";
}

TEST(Disassembler, FeaturesKernels) {
  std::ifstream file(std::string(PPY_GOLDEN_DIR) + "/../../../examples/31_torchrun/features.ppy");
  std::stringstream source;
  source << file.rdbuf();
  auto compiled = testing::Compile(source.str());
  const ModuleCode& module = *compiled->result.code;
  ExpectGolden("standardize.txt", Disassemble(module, compiled->function("standardize")));
  ExpectGolden("bucketize.txt", Disassemble(module, compiled->function("bucketize")));
}

TEST(Disassembler, ObjectModeAndCalls) {
  auto compiled = testing::Compile(R"(
def scale(x: float, factor: float = 2.0) -> float:
    return x * factor

def report(values: list, n: int) -> str:
    total = 0.0
    for v in values:
        total += scale(v)
    return f"{n} values, total {total:.3f}"
)");
  ExpectGolden("report.txt", Disassemble(*compiled->result.code, compiled->function("report")));
}

}  // namespace
}  // namespace ppy
