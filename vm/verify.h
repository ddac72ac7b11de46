// The bytecode verifier.
//
// Everything the VM runs passes through here first, whether the compiler just
// produced it or it was read back from the cache: code read from disk is
// untrusted. The checks are driven by the operand modes of vm/opcodes.def, and
// an error names the function, the pc and the instruction.
#pragma once

#include <string>

#include "vm/code.h"
#include "vm/status.h"

namespace ppy {

// Checks one function of `module`: operand ranges and register kinds, jump
// targets, constants, typed calls against their callees' signatures, that no
// instruction writes a constant register, that control cannot run off the end,
// and that every object or buffer register is assigned on every path before an
// instruction reads it.
Status VerifyFunction(const ModuleCode& module, const FunctionCode& fn);

// Verifies every function of `module`.
Status VerifyModule(const ModuleCode& module);

}  // namespace ppy
