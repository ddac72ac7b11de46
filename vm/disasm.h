// The disassembler behind `ppy dis`, driven by the operand modes of
// vm/opcodes.def.
#pragma once

#include <string>

#include "vm/code.h"

namespace ppy {

// The function's signature, register kinds, constants and code, one instruction
// per line with its source line. The output is stable: golden tests compare it.
std::string Disassemble(const ModuleCode& module, const FunctionCode& fn);

// One instruction, as it appears in Disassemble's listing.
std::string DisassembleInstruction(const ModuleCode& module, const FunctionCode& fn, int pc);

// How a value type is written in a signature: int, float, Buffer[f64], ...
std::string TypeName(ValueType type, ElemType elem, int ndim = 1);

}  // namespace ppy
