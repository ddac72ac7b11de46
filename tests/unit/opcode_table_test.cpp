// The instruction table is the single source of truth; these tests pin the
// invariants the generated parts rely on.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "vm/instr.h"

namespace ppy {
namespace {

bool IsRegisterMode(Mode mode) {
  switch (mode) {
    case Mode::krI: case Mode::kwI: case Mode::kuI: case Mode::krF: case Mode::kwF: case Mode::krC: case Mode::kwC: case Mode::krO:
    case Mode::kwO: case Mode::krU: case Mode::kwU: case Mode::krUd: case Mode::krUq: case Mode::krUf:
    case Mode::krUi: case Mode::krX: case Mode::kwX: case Mode::ksO: case Mode::ktO: case Mode::kcO:
      return true;
    default:
      return false;
  }
}

TEST(OpcodeTable, NamesAreUniqueAndInOrder) {
  std::set<std::string> names;
  for (int i = 0; i < kOpCount; ++i) {
    std::string name(kOpInfo[i].name);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(InfoOf(static_cast<Op>(i)).name, kOpInfo[i].name);
  }
  EXPECT_EQ(InfoOf(Op::MOVE_I).name, "MOVE_I");
  EXPECT_EQ(InfoOf(Op::IMPORT).name, "IMPORT");
}

TEST(OpcodeTable, TableIdsAndTargetsLiveInTheWideField) {
  for (const OpInfo& info : kOpInfo) {
    for (Mode mode : {info.a, info.b, info.c}) {
      EXPECT_NE(mode, Mode::kJ) << info.name;
      EXPECT_NE(mode, Mode::kK) << info.name;
      EXPECT_NE(mode, Mode::kP) << info.name;
      EXPECT_NE(mode, Mode::kM) << info.name;
      EXPECT_NE(mode, Mode::kY) << info.name;
    }
    // (Besides counts and registers, C holds only the ids of the smallest
    // tables: a format conversion, or a comparison where D is a jump target.)
    EXPECT_TRUE(info.c == Mode::kN || info.c == Mode::kV || info.c == Mode::kQ || info.c == Mode::k__ ||
                IsRegisterMode(info.c))
        << info.name;
    EXPECT_NE(info.a, Mode::kN) << info.name;
    EXPECT_NE(info.b, Mode::kN) << info.name;
  }
}

TEST(OpcodeTable, JumpsAndOnlyJumpsHaveTargets) {
  for (const OpInfo& info : kOpInfo) {
    bool jumps = (info.flags & kFlagJump) != 0;
    EXPECT_EQ(jumps, info.d == Mode::kJ) << info.name;
    if (info.flags & kFlagLoop) {
      EXPECT_TRUE(jumps) << info.name;
    }
  }
}

TEST(OpcodeTable, SpansCountWithC) {
  for (const OpInfo& info : kOpInfo) {
    bool span = info.b == Mode::ksO || info.b == Mode::kcO || info.b == Mode::krX || info.a == Mode::ktO;
    if (span) {
      EXPECT_EQ(info.c, Mode::kN) << info.name;
    }
  }
}

TEST(OpcodeTable, EveryInstructionSaysWhatItMeans) {
  for (const OpInfo& info : kOpInfo) EXPECT_FALSE(info.meaning.empty()) << info.name;
}

}  // namespace
}  // namespace ppy
