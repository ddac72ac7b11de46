// The x86-64 backend: the primitives of backend.h on asmjit's x86::Compiler.
// Baseline x86-64 (SSE2) instructions, and where the CPU has AVX, its
// three-operand (VEX) forms of the float arithmetic, which need no copy of an
// operand; cached code is keyed by which (jit::Target()).
#pragma once

#include <asmjit/x86.h>

#include <initializer_list>
#include <vector>

#include "asmjit-backend/backend.h"
#include "vm/code.h"

namespace ppy::jit {

class X86Backend {
 public:
  using Int = asmjit::x86::Gp;
  using Float = asmjit::x86::Xmm;
  using Label = asmjit::Label;

  static constexpr const char* kArchitecture = "x86_64";
  // cvttsd2si gives INT64_MIN for a NaN or a value outside int64.
  static constexpr bool kTruncationGivesMinWhenInvalid = true;
  static constexpr uint32_t kJumpInstId = asmjit::x86::Inst::kIdJmp;

  // For DropDeadMoves (jit.cpp), after register allocation: whether `inst`
  // is a move into a general register that has no effect but that register
  // (`mov r, imm`, `mov r, r2` or a load), and which one; and what an instruction
  // does to general register `reg`, where every register it uses is an
  // explicit operand (kUnknown for anything else, which ends the search).
  static bool IsRegisterMove(const asmjit::InstNode& inst, uint32_t* reg);
  static RegisterUse UseOf(const asmjit::InstNode& inst, uint32_t reg);

  X86Backend(asmjit::CodeHolder* code, bool avx) : cc_(code), avx_(avx) {}
  asmjit::BaseCompiler& compiler() { return cc_; }
  const Label& entry_label() const { return entry_; }

  Int NewInt() { return cc_.newInt64(); }
  Float NewFloat() { return cc_.newXmmSd(); }
  Label NewLabel() { return cc_.newLabel(); }
  void Bind(const Label& label) { cc_.bind(label); }
  // Aligns the next instruction for a loop's head, as C compilers do.
  void AlignLoop() { cc_.align(asmjit::AlignMode::kCode, 16); }
  void Jump(const Label& label) { cc_.jmp(label); }

  PPY_JIT_BACKEND_PRIMITIVES

 private:
  // dst := a op b for a two-operand instruction, safe when dst aliases b; for
  // either register kind (Reg is Int or Float).
  template <typename Reg, typename Emit>
  void Binary(const Reg& dst, const Reg& a, const Reg& b, bool commutative, Emit emit);
  Int NewLike(const Int&) { return NewInt(); }
  Float NewLike(const Float&) { return NewFloat(); }
  // Calls the helper whose address is at table + offset; Result and Arg are the
  // C types of its result and arguments.
  template <typename Result, typename Arg, typename Reg>
  Reg CallHelper(const Int& table, int32_t offset, std::initializer_list<Reg> args, Reg result);

  const Float& ConversionBase();

  asmjit::x86::Compiler cc_;
  bool avx_;
  Label entry_;
  asmjit::BaseNode* prologue_ = nullptr;  // where the function's setup ends (ConversionBase)
  Float conversion_base_;
  std::vector<asmjit::x86::Mem> slots_;
};

}  // namespace ppy::jit
