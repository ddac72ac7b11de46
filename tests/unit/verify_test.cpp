// The verifier stands between untrusted bytes and the interpreter: each test
// hands it one defect and expects a rejection that names the function and pc.
#include <gtest/gtest.h>

#include "tests/unit/test_util.h"
#include "vm/verify.h"

namespace ppy {
namespace {

// f(x: int) -> int with registers [x, const 1, temp], returning x + 1.
std::unique_ptr<ModuleCode> Sample() {
  auto module = std::make_unique<ModuleCode>();
  module->filename = "sample.ppy";
  auto fn = std::make_unique<FunctionCode>();
  fn->name = fn->qualname = "f";
  fn->params.push_back({"x", ValueType::kInt, ElemType::kNone, false});
  fn->result = ValueType::kInt;
  fn->registers = {{Kind::kInt}, {Kind::kInt}, {Kind::kInt}, {Kind::kObject}};
  fn->constants = {{Kind::kInt, 1}};
  fn->code = {{Op::ADD_I, 2, 0, 1, 0}, {Op::RET_I, 2, 0, 0, 0}};
  fn->lines = {1, 1};
  module->functions.push_back(std::move(fn));
  return module;
}

std::string Verify(const ModuleCode& module) {
  Status status = VerifyModule(module);
  return status.ok() ? "ok" : std::string(status.message());
}

TEST(Verifier, AcceptsWellFormedCode) { EXPECT_EQ(Verify(*Sample()), "ok"); }

TEST(Verifier, RejectsRegisterOutOfRange) {
  auto module = Sample();
  module->functions[0]->code[0].c = 9;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (ADD_I): register 9 is out of range");
}

TEST(Verifier, RejectsRegisterOfTheWrongKind) {
  auto module = Sample();
  module->functions[0]->code[0].b = 3;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (ADD_I): register 3 has the wrong kind");
}

TEST(Verifier, RejectsWritesToConstants) {
  auto module = Sample();
  module->functions[0]->code[0].a = 1;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (ADD_I): writes constant register 1");
}

TEST(Verifier, RejectsJumpTargetsOutsideTheCode) {
  auto module = Sample();
  module->functions[0]->code.insert(module->functions[0]->code.begin(), {Op::JMP, 0, 0, 0, 7});
  module->functions[0]->lines.push_back(1);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (JMP): jump target out of range");
}

TEST(Verifier, RejectsCodeThatRunsOffTheEnd) {
  auto module = Sample();
  module->functions[0]->code.pop_back();
  module->functions[0]->lines.pop_back();
  EXPECT_EQ(Verify(*module), "verify f: control runs off the end of the code");
}

TEST(Verifier, RejectsUnknownOpcodes) {
  auto module = Sample();
  module->functions[0]->code[0].op = static_cast<Op>(kOpCount);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (" + std::string("?") + "): unknown opcode");
}

TEST(Verifier, RejectsSetUnusedOperands) {
  auto module = Sample();
  module->functions[0]->code[1].b = 1;
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (RET_I): unused operand B is set");
}

TEST(Verifier, RejectsReadingAnObjectRegisterBeforeItIsAssigned) {
  auto module = Sample();
  FunctionCode& fn = *module->functions[0];
  fn.result = ValueType::kObject;
  fn.code = {{Op::RET_O, 3, 0, 0, 0}};
  fn.lines = {1};
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (RET_O): reads register 3 before it is assigned on every path");
}

TEST(Verifier, RejectsAReturnOfTheWrongKind) {
  auto module = Sample();
  module->functions[0]->code[1] = {Op::RET_NONE, 0, 0, 0, 0};
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (RET_NONE): returns an object from a typed function");
}

TEST(Verifier, RejectsATypedCallWithTheWrongArity) {
  auto module = Sample();
  FunctionCode& fn = *module->functions[0];
  fn.code.insert(fn.code.begin(), {Op::CALL_FN, 2, 0, 2, 0});
  fn.lines.push_back(1);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (CALL_FN): argument count does not match the callee");
}

TEST(Verifier, RejectsAMismatchedLineTable) {
  auto module = Sample();
  module->functions[0]->lines.pop_back();
  EXPECT_EQ(Verify(*module), "verify f: the line table does not match the code");
}

}  // namespace
}  // namespace ppy
