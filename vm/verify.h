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

// Checks one function of `module`: operand ranges (in both directions, for
// every operand the opcode table gives a register, a span, a target or a table
// id) and register kinds, buffer moves that keep their element type, jump
// targets, backward jumps only through the loop instructions that check for
// Ctrl-C, constants, typed calls against their callees' signatures, that no
// instruction writes a constant register, that control cannot run off the end,
// that every object or buffer register is assigned on every path before an
// instruction reads it, that FOR_ITER reads an iterator GET_ITER made on every
// path, and the shape of every FORLOOP_INC loop (entered only through its test,
// counter and limit unchanged in the body) that the interpreter's and the
// machine code's loop arithmetic rely on.
Status VerifyFunction(const ModuleCode& module, const FunctionCode& fn);

// Verifies every function of `module`.
Status VerifyModule(const ModuleCode& module);

}  // namespace ppy
