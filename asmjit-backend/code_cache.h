// Machine code in the project cache: what `ppy build --warm` writes and every
// process that imports the module maps, so that no rank compiles anything.
//
//   file     := magic[8] format:u32 ppy_version:str target:str key:str count:varint function* trailer
//   function := index:varint entry:varint size:varint bytes[size]
//   trailer  := "END!" checksum:u64        (over every byte before the checksum)
//
// `key` is the key of the bytecode entry the code was compiled from, and
// `target` the architecture and CPU features (jit::Target()): code is only ever
// mapped for the exact bytecode, ppy build and machine it was made for.
#pragma once

#include <string>
#include <string_view>

#include "vm/code.h"
#include "vm/status.h"

namespace ppy::jit {

inline constexpr char kMachineCodeMagic[8] = {'P', 'P', 'Y', 'J', '\0', '\r', '\n', '\x1a'};
inline constexpr uint32_t kMachineCodeFormat = 1;

// Compiles every function of `module` (which must be prepared) and serializes
// the code. Functions that cannot be compiled are left out.
StatusOr<std::string> BuildMachineCode(const ModuleCode& module, std::string_view ppy_version,
                                       std::string_view key);

// Checks `data` against this build, target and key, then maps its code as the
// module's functions' machine code. Returns how many functions got code.
StatusOr<int> LoadMachineCode(const ModuleCode& module, std::string_view data, std::string_view ppy_version,
                              std::string_view key);

}  // namespace ppy::jit
