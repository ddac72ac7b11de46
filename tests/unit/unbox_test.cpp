// Floats unboxed by speculation (vm/unbox.h): the rewrite of an object
// function's code, the frames that run it, the guards that send them back to
// the object code, and the verifier's refusal of what only the run time makes.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "asmjit-backend/jit.h"
#include "tests/unit/test_util.h"
#include "vm/tiering.h"
#include "vm/unbox.h"
#include "vm/verify.h"

namespace ppy {
namespace {

using testing::Call;
using testing::Compile;
using testing::IntValue;
using testing::PythonEval;

// Builds a list of n floats (i * 0.5, with an int 7 at `bad` unless it is
// negative), then sums 2.0 * each item over a loop that subscripts it by a
// typed int: object code whose floats the rewrite unboxes.
constexpr const char* kSource = R"(
def total(n: int, bad: int):
    xs = []
    for i in range(n):
        xs.append(i * 0.5)
    if bad >= 0:
        xs[bad] = 7
    s = 0.0
    for i in range(n):
        s += xs[i] * 2.0
    return s
)";

int Count(const std::vector<Instr>& code, Op op) {
  return static_cast<int>(std::count_if(code.begin(), code.end(), [&](const Instr& in) { return in.op == op; }));
}

int FirstPcOf(const std::vector<Instr>& code, Op op) {
  for (size_t pc = 0; pc < code.size(); ++pc) {
    if (code[pc].op == op) return static_cast<int>(pc);
  }
  return -1;
}

class Unbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { jit::Install(); }
  void SetUp() override {
    mode_ = g_tiering.mode;
    g_tiering.mode = JitMode::kEager;  // (unboxed code is built at a function's first loop check)
  }
  void TearDown() override { g_tiering.mode = mode_; }

 private:
  JitMode mode_ = JitMode::kOff;
};

TEST_F(Unbox, RewritesTheFloatWebsPcForPc) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  ASSERT_GT(fn.unbox_slots, 0);
  auto unboxed = BuildUnboxedCode(fn, {});
  ASSERT_NE(unboxed, nullptr);
  ASSERT_EQ(unboxed->code.size(), fn.code.size());
  // xs[i] is read into a slot; `* 2.0` multiplies it by the constant's slot,
  // `s +=` adds two slots, and `return s` boxes.
  EXPECT_EQ(Count(unboxed->code, Op::GETITEM_I_GF), 1);
  EXPECT_EQ(Count(unboxed->code, Op::ADD_F), 1);
  EXPECT_EQ(Count(unboxed->code, Op::RET_UF), 1);
  EXPECT_GE(unboxed->slot_register.size(), 2u);
  // The list's appends and the int store keep their object instructions, and
  // jumps keep their targets.
  for (size_t pc = 0; pc < fn.code.size(); ++pc) {
    const Instr& in = fn.code[pc];
    if (HasFlag(in.op, kFlagJump)) {
      EXPECT_EQ(unboxed->code[pc].d, in.d) << pc;
    }
    if (in.op == Op::CALL_METHOD || in.op == Op::SETITEM) {
      EXPECT_EQ(unboxed->code[pc].op, in.op) << pc;
    }
  }
  // `s` is live around the loop (its back edge unboxes it, on entry there).
  const int add = FirstPcOf(unboxed->code, Op::ADD_F);
  EXPECT_NE(unboxed->live[add], 0u);
}

TEST_F(Unbox, AFailedGuardKeepsItsInstruction) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  const int getitem = FirstPcOf(fn.code, Op::GETITEM_I);
  ASSERT_GE(getitem, 0);
  std::vector<bool> failed(fn.code.size());
  failed[getitem] = true;
  auto unboxed = BuildUnboxedCode(fn, failed);
  ASSERT_NE(unboxed, nullptr);  // (s is still a float)
  EXPECT_EQ(unboxed->code[getitem].op, Op::GETITEM_I);
  EXPECT_EQ(Count(unboxed->code, Op::GETITEM_I_GF), 0);
  EXPECT_GE(Count(unboxed->code, Op::BINARY_UF), 1);  // (xs[i] * 2.0, from an object)
}

TEST_F(Unbox, FramesRunItAndLeaveItWhereAGuardFails) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  // (Sums of whole numbers: exact in any order.)
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(-1)}), PythonEval("float(sum(range(1000)))"));
  EXPECT_GE(static_cast<uint64_t>(fn.runtime->unboxed_entries), 1u);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 0u);
  // An int item halfway: the guard fails there, the rest of the call runs as
  // object code (7 * 2.0 is 14.0, as CPython makes it), and the pc is kept.
  const std::string with_int = PythonEval("float(sum(range(1000)) - 600 + 14)");
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(600)}), with_int);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 1u);
  const int getitem = FirstPcOf(fn.code, Op::GETITEM_I);
  ASSERT_GT(fn.runtime->unbox_failed.size(), static_cast<size_t>(getitem));
  EXPECT_TRUE(fn.runtime->unbox_failed[getitem]);
  // The next call runs a version without that guard.
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(600)}), with_int);
  EXPECT_EQ(fn.runtime->unboxed_versions.size(), 2u);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 1u);
}

// The second loop of kSource reads items by a typed index and multiplies by
// a constant: its unboxed version is all machine code runs (GETITEM_I_GF,
// slots, a constant's slot), so machine code runs it, and leaves for the
// interpreter, which deoptimizes, at the item that is an int.
TEST_F(Unbox, MachineCodeRunsAnUnboxedLoop) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(-1)}), PythonEval("float(sum(range(1000)))"));
  ASSERT_EQ(fn.runtime->unboxed_versions.size(), 1u);
  const FunctionCode* machine = fn.runtime->unboxed_versions[0]->machine.get();
  ASSERT_NE(machine, nullptr);
  EXPECT_EQ(machine->runtime->jit_state.load(), JitState::kCompiled);
  EXPECT_EQ(Count(machine->code, Op::GETITEM_I_GF), 1);
  EXPECT_FALSE(fn.runtime->unboxed_versions[0]->constant_slots.empty());
  const uint64_t entries = fn.runtime->jit_entries;
  EXPECT_GE(entries, 1u);
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(999)}), PythonEval("float(sum(range(999)) + 14)"));
  EXPECT_GT(static_cast<uint64_t>(fn.runtime->jit_entries), entries);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 1u);
}

TEST_F(Unbox, TheVerifierRejectsWhatOnlyTheRunTimeMakes) {
  auto compiled = Compile(kSource);
  ModuleCode& module = *compiled->result.code;
  FunctionCode& fn = *module.functions[0];
  auto unboxed = BuildUnboxedCode(fn, {});
  ASSERT_NE(unboxed, nullptr);
  // (A slot is a register past the function's: the verifier sees the frame
  // grown by them, so that only the instruction itself is refused.)
  for (size_t k = 0; k < unboxed->slot_register.size(); ++k) fn.registers.push_back({Kind::kFloat});
  fn.code = unboxed->code;
  Status status = VerifyModule(module);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("an instruction made at run time only"), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace ppy
