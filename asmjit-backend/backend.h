// What the code generator asks of a machine backend.
//
// asmjit-backend/codegen.h turns bytecode into calls of these primitives: Python's
// semantics are written once, there; each backend (emit_x86.cpp, emit_a64.cpp)
// only says how a primitive looks on its machine. Values live in virtual
// registers that asmjit's Compiler allocates.
//
// The primitives, for a backend class B (B::Int, B::Float, B::Label):
//
//   function   Begin(&regs, &result, &context, &entry_pc)  End()  Return(Int)  ReturnImm(i64)
//   registers  NewInt()  NewFloat()  NewLabel()  Bind(L)  AlignLoop()  Jump(L)
//   moves      MovImm(d, i64)  Mov(d, s)  FloatFromBits(d, u64)
//   memory     LoadInt/StoreInt/LoadFloat/StoreFloat(r, base, offset)  LoadU8(d, base, offset)
//              LoadElement(elem, d, data, index)  StoreElement(elem, s, data, index)
//              NewSlot()  StoreSlot(s, slot)  LoadSlot(d, slot)  (a stack slot per value)
//   integers   AddChecked/SubChecked/MulChecked(d, a, b, overflow)  (d is fresh: on overflow
//              nothing is written)  Add(d, a, b)  Sub(d, a, b)  AddImm(d, a, i32)
//              AddScaled(d, a, b, shift)  (d := a + (b << shift), wrapping)  And/Or/Xor(d, a, b)
//              AndImm/XorImm(d, a, i32)  Neg(d, a)  Not(d, a)  Shl/Sar(d, a, count)
//              SarImm(d, a, n)  DivMod(q, r, a, b)  (C's truncating division; b is neither 0
//              nor -1)
//   floats     FAdd FSub FMul FDiv (d, a, b)  FSqrt FNeg FAbs (d, a)
//              IntToFloat(d, i)  FloatToIntChecked(d, f, L)  (truncates; jumps to L for a NaN
//              or a value outside int64, and may for exactly INT64_MIN)
//   branches   DecrementAndBranchNonZero(r, L)  BranchInt(cond, a, b, L)  BranchIntImm(cond, a, i64, L)  BranchFloat(cond, a, b, L)
//              SetInt(cond, d, a, b)  SetFloat(cond, d, a, b)   (d := 1 or 0)
//   calls      CallIntHelper(table, offset, {int args}) -> Int
//              CallFloatHelper(table, offset, {float args}) -> Float
//              (the helper's address is read from table + offset: the code stays position-
//              independent and calls whatever the mapping process's table holds)
#pragma once

#include <cstdint>

namespace ppy::jit {

// Integer conditions; the U forms compare unsigned.
enum class IntCond : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kUlt, kUle, kUgt, kUge };

// Float conditions with IEEE semantics: the ordered forms (kLt .. kEq) are false
// when either operand is a NaN; kNe and the kNot forms are true.
enum class FloatCond : uint8_t { kLt, kLe, kGt, kGe, kEq, kNe, kNotLt, kNotLe, kNotGt, kNotGe };

}  // namespace ppy::jit
