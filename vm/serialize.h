// The cache entry format: a module's compiled code on disk.
//
//   entry    := header section* trailer
//   header   := magic[8] format:u32 ppy_version:str abi:str key:str
//   section  := tag[4] length:u64 payload[length]
//   trailer  := "END!" checksum:u64        (over every byte before the checksum)
//   str      := length:varint utf8[length]
//
// Integers are little-endian; varints are LEB128, signed ones zigzag-encoded.
// The sections ppy writes for a module:
//
//   FUNC  per function: names, first line, signature, register kinds, constant
//         registers, and how many objects and instructions it has
//   CODE  per function, its instructions: the opcode byte, then each operand its
//         modes in vm/opcodes.def say it has (A, B, C one byte each, D a signed
//         varint), so the table drives the encoding as it drives the verifier
//   KONS  per function, its object constants, tagged (see ObjectTag)
//   LINE  per function, the source line of each instruction, delta-encoded
//
// and any number of sections the caller supplies (the hook stores the module's
// own Python code object and metadata this way). Reading checks, in order: the
// magic, the format version, the checksum, then every section's structure, and
// finally runs the verifier over every function. Nothing read is trusted before
// that.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "vm/code.h"
#include "vm/math_table.h"
#include "vm/status.h"

namespace ppy {

inline constexpr char kEntryMagic[8] = {'P', 'P', 'Y', 'C', '\0', '\r', '\n', '\x1a'};
// The entry's format version: a hash of the instruction table (every line of
// vm/opcodes.def, so that inserting, removing or changing an instruction
// moves it without anyone remembering to) and of the math table (whose ids
// MATH_* instructions hold), mixed with kEncodingVersion, which is bumped by
// hand when the encoding of sections changes.
inline constexpr uint32_t kEncodingVersion = 6;
inline constexpr char kInstructionTable[] =
#define PPY_OPCODE(name, a, b, c, d, flags, meaning) #name " " #a " " #b " " #c " " #d " " #flags ";"
#include "vm/opcodes.def"
#undef PPY_OPCODE
    "";
constexpr uint32_t HashOfText(const char* text, uint32_t seed) {
  uint32_t hash = seed;  // FNV-1a
  for (; *text != '\0'; ++text) hash = (hash ^ static_cast<uint8_t>(*text)) * 16777619u;
  return hash;
}
inline constexpr char kMathTableText[] =
#define PPY_MATH_TEXT(id, name, shape, fn) #id " " name " " #shape ";"
    PPY_MATH_FUNCTIONS(PPY_MATH_TEXT)
#undef PPY_MATH_TEXT
    "";
inline constexpr uint32_t kBytecodeVersion =
    HashOfText(kMathTableText, HashOfText(kInstructionTable, 2166136261u ^ kEncodingVersion));

struct EntryHeader {
  uint32_t format = 0;
  std::string ppy_version;
  std::string abi;
  std::string key;
};

struct Entry {
  EntryHeader header;
  std::unique_ptr<ModuleCode> module;
  std::map<std::string, std::string> extra_sections;  // tag -> payload
};

// Why an entry was rejected: the cache reports a version change and a corrupt
// entry differently.
enum class EntryProblem { kNone, kCorrupt, kVersion };

std::string SerializeEntry(const EntryHeader& header, const ModuleCode& module,
                           const std::map<std::string, std::string>& extra_sections);

// Parses and verifies an entry. `ppy_version` is this build's; an entry of
// another version or bytecode format is reported as kVersion before anything
// past the header is read.
StatusOr<Entry> ParseEntry(std::string_view data, std::string_view ppy_version, EntryProblem* problem);

// Reads only the header (ParseEntry checks it first; fuzz_entry checks it alone).
StatusOr<EntryHeader> ParseEntryHeader(std::string_view data);

// A 64-bit checksum in which any change to a single 8-byte word always changes
// the result (every step is a bijection of the state).
uint64_t Checksum64(std::string_view data);

// 32 hex digits: two independent 64-bit checksums of `data`. The cache keys its
// entries by digests of sources; this is not a cryptographic hash (the cache
// folder is the user's own), but no accidental change goes unnoticed.
std::string Digest128(std::string_view data);

}  // namespace ppy
