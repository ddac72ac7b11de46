// Cache entries are read back untrusted: every truncation and every flipped bit
// must be rejected cleanly, never crash, and a good entry must round-trip.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/unit/test_util.h"
#include "vm/disasm.h"
#include "vm/serialize.h"

namespace ppy {
namespace {

constexpr const char* kSource = R"(
import math
from ppy import Buffer

SCALE: float = 2.0

def norm(xs: Buffer[float], n: int) -> float:
    total = 0.0
    for i in range(n):
        total += xs[i] * xs[i] * SCALE
    return math.sqrt(total)

def describe(x: int) -> str:
    return f"{x!r:>6} {[x, 'two', 3.5, None, (1, 2)]}"
)";

std::string SampleEntry() {
  auto compiled = testing::Compile(kSource);
  EntryHeader header{kBytecodeVersion, "test-version", "cpython-311", "key123"};
  return SerializeEntry(header, *compiled->result.code, {{"META", "hello"}});
}

// The format version moves by rule, not by memory: it is a hash of every
// instruction of vm/opcodes.def (name, operand modes, flags) mixed with
// kEncodingVersion. Recomputed here from the file itself, so that the version
// cannot be pinned to a number that a change to the table leaves behind.
TEST(Serialize, BytecodeVersionIsTheHashOfOpcodesDef) {
  std::ifstream file(std::string(PPY_GOLDEN_DIR) + "/../../../vm/opcodes.def");
  ASSERT_TRUE(file.good());
  std::string table, line;
  int instructions = 0;
  while (std::getline(file, line)) {
    if (line.rfind("PPY_OPCODE(", 0) != 0) continue;
    // PPY_OPCODE(name, a, b, c, d, flags, "meaning"): the six fields as the
    // preprocessor's # stringizes them.
    std::string fields = line.substr(std::strlen("PPY_OPCODE("), line.find(", \"") - std::strlen("PPY_OPCODE("));
    std::stringstream parts(fields);
    std::string part, joined;
    while (std::getline(parts, part, ',')) {
      std::string word, spaced;
      std::stringstream words(part);
      while (words >> word) spaced += (spaced.empty() ? "" : " ") + word;
      joined += (joined.empty() ? "" : " ") + spaced;
    }
    table += joined + ";";
    ++instructions;
  }
  EXPECT_EQ(instructions, kOpCount);
  EXPECT_EQ(table, std::string(kInstructionTable));
  EXPECT_NE(std::string(kMathTableText).find("ROUND round FI;"), std::string::npos) << kMathTableText;
  EXPECT_EQ(HashOfText(kMathTableText, HashOfText(table.c_str(), 2166136261u ^ kEncodingVersion)), kBytecodeVersion)
      << "kBytecodeVersion must be the hash of vm/opcodes.def and the math table";
}

TEST(Serialize, RoundTripsCodeConstantsAndLines) {
  auto compiled = testing::Compile(kSource);
  EntryHeader header{kBytecodeVersion, "test-version", "cpython-311", "key123"};
  std::string data = SerializeEntry(header, *compiled->result.code, {{"META", "hello"}});
  EntryProblem problem;
  StatusOr<Entry> entry = ParseEntry(data, "test-version", &problem);
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(problem, EntryProblem::kNone);
  EXPECT_EQ(entry->header.key, "key123");
  EXPECT_EQ(entry->extra_sections.at("META"), "hello");
  const ModuleCode& original = *compiled->result.code;
  const ModuleCode& read = *entry->module;
  ASSERT_EQ(read.functions.size(), original.functions.size());
  for (size_t i = 0; i < read.functions.size(); ++i) {
    EXPECT_EQ(Disassemble(read, *read.functions[i]), Disassemble(original, *original.functions[i]));
  }
}

// A section tag becomes a key of the module's extras dict: one that is not
// printable ASCII is a corrupt entry (found by fuzz_entry: _ppy.load raised
// SystemError, which the hook did not take for a corrupt entry).
TEST(Serialize, RejectsSectionTagsThatAreNotPrintableAscii) {
  auto compiled = testing::Compile(kSource);
  EntryHeader header{kBytecodeVersion, "test-version", "cpython-311", "key123"};
  for (const char* tag : {"\xff\xfeXY", "AB\x01C", "A\x7f"}) {
    std::string data = SerializeEntry(header, *compiled->result.code, {{tag, "payload"}});
    EntryProblem problem;
    StatusOr<Entry> entry = ParseEntry(data, "test-version", &problem);
    EXPECT_FALSE(entry.ok()) << tag;
    EXPECT_EQ(problem, EntryProblem::kCorrupt);
  }
}

TEST(Serialize, ReportsAnotherVersionBeforeReadingFurther) {
  std::string data = SampleEntry();
  EntryProblem problem;
  StatusOr<Entry> entry = ParseEntry(data, "another-version", &problem);
  EXPECT_FALSE(entry.ok());
  EXPECT_EQ(problem, EntryProblem::kVersion);
}

TEST(Serialize, RejectsEveryTruncation) {
  std::string data = SampleEntry();
  for (size_t size = 0; size < data.size(); ++size) {
    EntryProblem problem;
    StatusOr<Entry> entry = ParseEntry(std::string_view(data).substr(0, size), "test-version", &problem);
    ASSERT_FALSE(entry.ok()) << "truncated to " << size;
    EXPECT_EQ(problem, EntryProblem::kCorrupt) << size;
  }
}

TEST(Serialize, RejectsEveryFlippedBit) {
  std::string data = SampleEntry();
  for (size_t byte = 0; byte < data.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string corrupt = data;
      corrupt[byte] ^= static_cast<char>(1 << bit);
      EntryProblem problem;
      StatusOr<Entry> entry = ParseEntry(corrupt, "test-version", &problem);
      ASSERT_FALSE(entry.ok()) << "bit " << bit << " of byte " << byte;
    }
  }
}

TEST(Serialize, ChecksumSeesEveryWordChange) {
  std::string data(64, '\0');
  uint64_t base = Checksum64(data);
  for (size_t i = 0; i < data.size(); ++i) {
    std::string changed = data;
    changed[i] = 1;
    EXPECT_NE(Checksum64(changed), base) << i;
  }
}

}  // namespace
}  // namespace ppy
