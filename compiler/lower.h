// Lowering: a checked function to register bytecode.
//
// Works on virtual registers (parameters, then locals and temporaries in the
// order they are allocated, and constants on the side), and lays them out as
// vm/code.h describes once the function is complete. Chooses the fused
// instructions: compare-and-branch for conditions, counted range loops, and
// index-plus-access for buf[base + i].
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/typecheck.h"
#include "vm/code.h"

namespace ppy {

// Lowers `fn`, which the checker compiled. Fails only for limits of the
// instruction format (more than kMaxRegisters registers).
absl::StatusOr<std::unique_ptr<FunctionCode>> LowerFunction(const ModuleInfo& module, const FunctionInfo& fn);

}  // namespace ppy
