// Every call whose shape depends on the asmjit version lives here.
//
// ppy builds against the asmjit of Debian's source package (library version
// 1.9 on Debian 12). Where a newer asmjit renames something, only this file
// changes.
#pragma once

#include <asmjit/core.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ppy::jit {

// Position-independent bytes of finalized code and the offset of its entry.
struct Blob {
  std::vector<uint8_t> bytes;
  uint64_t entry = 0;
};

// Flattens `code`, resolves its internal links and relocates it to address 0,
// so that the bytes run wherever they are mapped (calls go through a helper
// table; there are no absolute addresses).
inline bool CopyRelocatable(asmjit::CodeHolder& code, const asmjit::Label& entry, Blob* out, std::string* error) {
  using asmjit::kErrorOk;
  if (code.flatten() != kErrorOk || code.resolveUnresolvedLinks() != kErrorOk || code.relocateToBase(0) != kErrorOk) {
    *error = "asmjit could not relocate the code";
    return false;
  }
  if (code.hasUnresolvedLinks() || code.hasAddressTable()) {
    *error = "the code is not position-independent";
    return false;
  }
  out->bytes.resize(code.codeSize());
  if (code.copyFlattenedData(out->bytes.data(), out->bytes.size(), asmjit::CopySectionFlags::kPadTargetBuffer) !=
      kErrorOk) {
    *error = "asmjit could not copy the code";
    return false;
  }
  out->entry = code.labelOffsetFromBase(entry);
  return true;
}

}  // namespace ppy::jit
