// The AArch64 backend: the primitives of backend.h on asmjit's a64::Compiler.
// Only ARMv8.0 base and FP/SIMD instructions are used, so that code saved in
// the cache runs on every AArch64 machine.
#pragma once

// Debian's asmjit package omits asmjit/a64.h; these two headers are in both it
// and the source tree.
#include <asmjit/core.h>
#include <asmjit/arm/a64compiler.h>

#include <initializer_list>
#include <vector>

#include "asmjit-backend/backend.h"
#include "vm/code.h"

namespace ppy::jit {

class A64Backend {
 public:
  using Int = asmjit::a64::Gp;
  using Float = asmjit::a64::Vec;
  using Label = asmjit::Label;

  static constexpr const char* kArchitecture = "aarch64";
  // fcvtzs gives 0 for a NaN: failed conversions need their own check.
  static constexpr bool kTruncationGivesMinWhenInvalid = false;
  static constexpr uint32_t kJumpInstId = asmjit::a64::Inst::kIdB;  // (with no condition: `b`)

  // DropDeadMoves (jit.cpp) has no table for AArch64 yet: it finds nothing.
  static bool IsRegisterMove(const asmjit::InstNode&, uint32_t*) { return false; }
  static RegisterUse UseOf(const asmjit::InstNode&, uint32_t) { return RegisterUse::kUnknown; }

  explicit A64Backend(asmjit::CodeHolder* code) : cc_(code) {}
  asmjit::BaseCompiler& compiler() { return cc_; }
  const Label& entry_label() const { return entry_; }

  Int NewInt() { return cc_.newGpx(); }
  Float NewFloat() { return cc_.newVecD(); }
  Label NewLabel() { return cc_.newLabel(); }
  void Bind(const Label& label) { cc_.bind(label); }
  void AlignLoop() { cc_.align(asmjit::AlignMode::kCode, 16); }
  void Jump(const Label& label) { cc_.b(label); }

  PPY_JIT_BACKEND_PRIMITIVES

 private:
  // Sets the flags for a - imm, with the immediate in a register when no
  // compare instruction encodes it.
  void CompareImm(const Int& a, int64_t imm);
  Int Constant(int64_t value);
  Int Offset(const Int& data, int32_t offset);
  // Calls the helper whose address is at table + offset; Result and Arg are the
  // C types of its result and arguments.
  template <typename Result, typename Arg, typename Reg>
  Reg CallHelper(const Int& table, int32_t offset, std::initializer_list<Reg> args, Reg result);

  asmjit::a64::Compiler cc_;
  Label entry_;
  std::vector<asmjit::a64::Mem> slots_;
};

}  // namespace ppy::jit
