// The x86-64 backend: the primitives of backend.h on asmjit's x86::Compiler.
// Only baseline x86-64 (SSE2) instructions are used, so that code saved in the
// cache runs on every x86-64 machine.
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

  explicit X86Backend(asmjit::CodeHolder* code) : cc_(code) {}
  asmjit::BaseCompiler& compiler() { return cc_; }
  const Label& entry_label() const { return entry_; }

  // int64 f(Value* regs, Value* result, const JitCallContext* context, int64 entry_pc)
  void Begin(Int* regs, Int* result, Int* context, Int* entry_pc);
  void End();
  void Return(const Int& value);
  void ReturnImm(int64_t value);

  Int NewInt() { return cc_.newInt64(); }
  Float NewFloat() { return cc_.newXmmSd(); }
  Label NewLabel() { return cc_.newLabel(); }
  void Bind(const Label& label) { cc_.bind(label); }
  // Aligns the next instruction for a loop's head, as C compilers do.
  void AlignLoop() { cc_.align(asmjit::AlignMode::kCode, 16); }
  void Jump(const Label& label) { cc_.jmp(label); }

  void MovImm(const Int& dst, int64_t value);
  void Mov(const Int& dst, const Int& src);
  void Mov(const Float& dst, const Float& src);
  void FloatFromBits(const Float& dst, uint64_t bits);

  void LoadInt(const Int& dst, const Int& base, int32_t offset);
  void StoreInt(const Int& src, const Int& base, int32_t offset);
  void LoadFloat(const Float& dst, const Int& base, int32_t offset);
  void StoreFloat(const Float& src, const Int& base, int32_t offset);
  void LoadU8(const Int& dst, const Int& base, int32_t offset);
  void LoadElement(ElemType elem, const Int& dst, const Int& data, const Int& index);
  void LoadElement(ElemType elem, const Float& dst, const Int& data, const Int& index);
  void StoreElement(ElemType elem, const Int& src, const Int& data, const Int& index);
  void StoreElement(ElemType elem, const Float& src, const Int& data, const Int& index);
  // A stack slot for a value that must not occupy a register across loops.
  int NewSlot();
  void StoreSlot(const Int& src, int slot);
  void LoadSlot(const Int& dst, int slot);

  void AddChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow);
  void SubChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow);
  void MulChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow);
  void Add(const Int& dst, const Int& a, const Int& b);
  void Sub(const Int& dst, const Int& a, const Int& b);
  void AddImm(const Int& dst, const Int& a, int32_t imm);
  void AddScaled(const Int& dst, const Int& a, const Int& b, int shift);
  void And(const Int& dst, const Int& a, const Int& b);
  void Or(const Int& dst, const Int& a, const Int& b);
  void Xor(const Int& dst, const Int& a, const Int& b);
  void AndImm(const Int& dst, const Int& a, int32_t imm);
  void XorImm(const Int& dst, const Int& a, int32_t imm);
  void Neg(const Int& dst, const Int& a);
  void Not(const Int& dst, const Int& a);
  void Shl(const Int& dst, const Int& a, const Int& count);
  void Sar(const Int& dst, const Int& a, const Int& count);
  void SarImm(const Int& dst, const Int& a, int imm);
  void DivMod(const Int& quotient, const Int& remainder, const Int& a, const Int& b);

  void FAdd(const Float& dst, const Float& a, const Float& b);
  void FSub(const Float& dst, const Float& a, const Float& b);
  void FMul(const Float& dst, const Float& a, const Float& b);
  void FDiv(const Float& dst, const Float& a, const Float& b);
  void FSqrt(const Float& dst, const Float& a);
  void FNeg(const Float& dst, const Float& a);
  void FAbs(const Float& dst, const Float& a);
  void IntToFloat(const Float& dst, const Int& src);
  void FloatToIntChecked(const Int& dst, const Float& src, const Label& fail);

  // reg -= 1; if reg != 0 then goto target.
  void DecrementAndBranchNonZero(const Int& reg, const Label& target);
  void BranchInt(IntCond cond, const Int& a, const Int& b, const Label& target);
  void BranchIntImm(IntCond cond, const Int& a, int64_t imm, const Label& target);
  void BranchFloat(FloatCond cond, const Float& a, const Float& b, const Label& target);
  void SetInt(IntCond cond, const Int& dst, const Int& a, const Int& b);
  void SetFloat(FloatCond cond, const Int& dst, const Float& a, const Float& b);

  Int CallIntHelper(const Int& table, int32_t offset, std::initializer_list<Int> args);
  Float CallFloatHelper(const Int& table, int32_t offset, std::initializer_list<Float> args);

 private:
  // dst := a op b for a two-operand instruction, safe when dst aliases b.
  template <typename Emit>
  void Binary(const Int& dst, const Int& a, const Int& b, bool commutative, Emit emit);
  template <typename Emit>
  void BinaryFloat(const Float& dst, const Float& a, const Float& b, bool commutative, Emit emit);

  asmjit::x86::Compiler cc_;
  Label entry_;
  std::vector<asmjit::x86::Mem> slots_;
};

}  // namespace ppy::jit
