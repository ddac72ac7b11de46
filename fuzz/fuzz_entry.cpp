// fuzz_entry: bytes -> a cache entry, read as ppy._ppy.load(data, version) reads
// it (vm/serialize.cpp: header, checksum, sections, function table, code,
// constants, line table, then the verifier over every function), and then used
// as the hook uses a loaded module (attach, binder, region, dis, ...; see
// embedded_python.h). No input may crash, leak or trip ASan or UBSan; a verified
// entry must also survive everything the hook and the CLI do with it.
//
// Every input is read twice:
//   1. as it is, with a fixed version string, exactly as the hook would;
//   2. repaired: its own header's version string as "this build's", and the
//      trailer's checksum recomputed (an "END!" trailer added if it has none),
//      so that mutations reach the sections behind the checksum.
// Seeds are real entries (scripts/fuzz.sh: fuzz_compiler --make-seeds).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/embedded_python.h"
#include "vm/serialize.h"

namespace {

constexpr std::string_view kVersion = "fuzz";
constexpr size_t kTrailerSize = 12;  // "END!" + checksum

void LoadLikeTheHook(std::string_view data, std::string_view version) {
  ppy::EntryProblem problem = ppy::EntryProblem::kNone;
  ppy::StatusOr<ppy::Entry> entry = ppy::ParseEntry(data, version, &problem);
  if (!entry.ok()) {
    // The hook clears any stray exception and raises EntryError; a rejected
    // entry must say why.
    PyErr_Clear();
    if (problem == ppy::EntryProblem::kNone) ppy::fuzz::Fail("a rejected entry reports no problem", "");
    if (entry.status().message().empty()) ppy::fuzz::Fail("a rejected entry without a message", "");
    return;
  }
  if (PyErr_Occurred()) ppy::fuzz::Fail("ParseEntry accepted an entry with an exception set", ppy::fuzz::TakeException());
  if (problem != ppy::EntryProblem::kNone) ppy::fuzz::Fail("an accepted entry reports a problem", "");
  ppy::fuzz::ExerciseEntry(*entry);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ppy::fuzz::InitEmbeddedPython();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  std::string_view data(reinterpret_cast<const char*>(bytes), size);
  LoadLikeTheHook(data, kVersion);

  // The repaired copy: past the version check and the checksum.
  ppy::StatusOr<ppy::EntryHeader> header = ppy::ParseEntryHeader(data);
  if (!header.ok()) return 0;
  std::string repaired(data);
  if (repaired.size() < kTrailerSize || repaired.compare(repaired.size() - kTrailerSize, 4, "END!") != 0) {
    repaired.append("END!").append(8, '\0');
  }
  uint64_t checksum = ppy::Checksum64(std::string_view(repaired).substr(0, repaired.size() - 8));
  for (int i = 0; i < 8; ++i) repaired[repaired.size() - 8 + i] = static_cast<char>(checksum >> (8 * i));
  if (repaired == data && header->ppy_version == kVersion) return 0;  // read already
  LoadLikeTheHook(repaired, header->ppy_version);
  return 0;
}
