// The region format: the op table parses, sections round-trip, and the
// verifier rejects what a corrupt or hostile cache entry could hold.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "regions/region_code.h"

namespace ppy::regions {
namespace {

// relu(x @ w) as the compiler would write it.
RegionCode SmallRegion() {
  RegionCode code;
  code.name = "f";
  code.filename = "f.ppy";
  code.line = 3;
  code.params = {{"x", true, ScalarType::kInt, 0}, {"w", true, ScalarType::kInt, 1}, {"k", false, ScalarType::kInt, 0}};
  code.num_tensor_slots = 4;
  code.num_scalar_slots = 1;
  code.slot_names = {"x", "w", "%2", "out"};
  Instruction matmul;
  matmul.op = AtenOp::kMatmul;
  matmul.line = 4;
  matmul.operands = {Operand{Operand::Kind::kTensor, 0}, Operand{Operand::Kind::kTensor, 1}};
  matmul.outputs = {2};
  matmul.release = {0, 1};
  Instruction mul;
  mul.op = AtenOp::kMul;
  mul.line = 5;
  mul.operands = {Operand{Operand::Kind::kTensor, 2}, Operand{Operand::Kind::kScalar, 0}};
  mul.outputs = {3};
  mul.release = {2};
  code.instructions = {matmul, mul};
  code.results = {3};
  return code;
}

TEST(RegionOps, EverySignatureAndSpellingIsWellFormed) {
  std::set<std::string> spellings;
  for (const AtenOpInfo& info : AtenOps()) {
    EXPECT_FALSE(info.params.empty()) << info.name;
    EXPECT_GE(info.outputs, 1) << info.name;
    std::istringstream words(info.spellings);
    std::string word;
    while (words >> word) {
      bool known = word.rfind("torch.", 0) == 0 || word.rfind("F.", 0) == 0 || word[0] == '.' ||
                   std::set<std::string>{"+", "-", "*", "/", "@", "**", "==", "!=", "<", "<=", ">", ">=", "unary-",
                                         "r+", "r-", "r*", "r/", "r**"}
                       .count(word);
      EXPECT_TRUE(known) << info.name << ": " << word;
    }
    bool keyword_only = false;
    for (const SignatureParam& param : info.params) {
      EXPECT_FALSE(param.name.empty()) << info.name;
      keyword_only = keyword_only || param.keyword_only;
      EXPECT_EQ(param.keyword_only, keyword_only) << info.name << ": keyword-only parameters come last";
      if (param.kind == ParamKind::kFixed) {
        EXPECT_TRUE(param.has_default) << info.name;
      }
    }
  }
  EXPECT_EQ(AtenOps().size(), static_cast<size_t>(AtenOp::kCount));
}

TEST(RegionCode, RoundTripsThroughTheSection) {
  RegionCode code = SmallRegion();
  ASSERT_TRUE(VerifyRegion(code).ok()) << VerifyRegion(code);
  StatusOr<std::vector<RegionCode>> parsed = ParseRegions(SerializeRegions({code, code}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ(DescribeRegion((*parsed)[1]), DescribeRegion(code));
  EXPECT_NE(DescribeRegion(code).find("out = Mul(%2, k)"), std::string::npos) << DescribeRegion(code);
}

TEST(RegionCode, RejectsEveryTruncation) {
  std::string data = SerializeRegions({SmallRegion()});
  for (size_t size = 0; size < data.size(); ++size) {
    EXPECT_FALSE(ParseRegions(data.substr(0, size)).ok()) << size;
  }
}

TEST(RegionCode, VerifierRejectsBadSlotsKindsAndCounts) {
  auto rejects = [](auto mutate, const char* what) {
    RegionCode code = SmallRegion();
    mutate(code);
    EXPECT_FALSE(VerifyRegion(code).ok()) << what;
    EXPECT_FALSE(ParseRegions(SerializeRegions({code})).ok()) << what;
  };
  rejects([](RegionCode& c) { c.instructions[0].operands[1].slot = 9; }, "slot out of range");
  rejects([](RegionCode& c) { c.instructions[1].operands[0].slot = 3; }, "read before written");
  rejects([](RegionCode& c) { c.instructions[1].operands[0].slot = 0; }, "read after release");
  rejects([](RegionCode& c) { c.instructions[0].operands.pop_back(); }, "operand count");
  rejects([](RegionCode& c) { c.instructions[0].operands[0].kind = Operand::Kind::kInt; }, "number for a tensor");
  rejects([](RegionCode& c) { c.instructions[1].operands[1].slot = 4; }, "scalar slot out of range");
  rejects([](RegionCode& c) { c.instructions[0].op = AtenOp::kCount; }, "unknown op");
  rejects([](RegionCode& c) { c.instructions[0].outputs = {3, 3}; }, "output count");
  rejects([](RegionCode& c) { c.instructions[1].outputs = {0}; }, "output over a live slot");
  rejects([](RegionCode& c) { c.results = {2}; }, "result released");
  rejects([](RegionCode& c) { c.results.clear(); }, "no result");
  rejects([](RegionCode& c) { c.slot_names.pop_back(); }, "slot names");
  // Found by fuzz_regions: two int32 counts whose sum overflowed past the check.
  rejects([](RegionCode& c) { c.num_posonly = 2147483647, c.num_kwonly = 115343360; }, "parameter kinds overflow");
}

// Every name of a region reaches Python or C code as text: one that is not
// UTF-8 (or holds a NUL) makes the section corrupt (found by fuzz_entry: ppy
// dis raised UnicodeDecodeError).
TEST(RegionCode, RejectsNamesThatAreNotText) {
  for (auto mutate : std::initializer_list<void (*)(RegionCode&)>{
           [](RegionCode& c) { c.name = "f\xff"; },
           [](RegionCode& c) { c.filename = std::string("a\0b", 3); },
           [](RegionCode& c) { c.params[0].name = "\xc0\x80"; },
           [](RegionCode& c) { c.slot_names[0] = "\xed\xa0\x80"; },
       }) {
    RegionCode code = SmallRegion();
    mutate(code);
    EXPECT_FALSE(ParseRegions(SerializeRegions({code})).ok()) << DescribeRegion(code);
  }
}

// A count larger than the bytes left is corrupt before anything is allocated
// for it (found by fuzz_regions: 11 bytes asked for 192 MiB).
TEST(RegionCode, RejectsCountsPastTheEndBeforeAllocating) {
  const std::string amplified("REGN\x01\x00\x00\x00\x80\x80\x40", 11);
  StatusOr<std::vector<RegionCode>> parsed = ParseRegions(amplified);
  EXPECT_FALSE(parsed.ok());
}

}  // namespace
}  // namespace ppy::regions
