// What the code generator asks of a machine backend.
//
// asmjit-backend/codegen.h turns bytecode into calls of these primitives: Python's
// semantics are written once, there; each backend (emit_x86.cpp, emit_a64.cpp)
// only says how a primitive looks on its machine. Values live in virtual
// registers that asmjit's Compiler allocates.
//
// The primitives are declared once, below (PPY_JIT_BACKEND_PRIMITIVES, inside
// each backend class, whose types Int, Float and Label they use); each backend
// defines NewInt(), NewFloat(), NewLabel(), Bind(L), AlignLoop() and Jump(L)
// inline. Notes on their contracts:
//
//   AddChecked/SubChecked/MulChecked(d, a, b, overflow): d may be written
//     before the jump, so d must be fresh, or a register the interpreter does
//     not read at that exit (MUL_I's R[A], which it writes without reading).
//   AddCheckedImm(d, a, imm, overflow): d := a + imm, jumping to overflow when
//     that leaves int64; d may be a (the caller undoes the wrapped sum).
//   MulCheckedImm(d, a, imm, overflow): d := a * imm, d fresh as for MulChecked.
//   Mul(d, a, b), MulImm(d, a, imm): d := a * b, wrapping (for products known
//     to fit).
//   AddScaled(d, a, b, shift): d := a + (b << shift), wrapping (addresses).
//   AddPlusImm(d, a, b, imm): d := a + b + imm, wrapping (x86-64: one lea).
//   DivMod(q, r, a, b): C's truncating division; b is not 0, and not -1
//     unless a cannot be INT64_MIN (the one quotient that overflows).
//   BranchSignsAgree(a, b, L): jumps to L when a and b are both negative or
//     both >= 0 (x86-64: the sign of a ^ b, no compare).
//   FloatToIntChecked(d, f, L): truncates; jumps to L for a NaN or a value
//     outside int64, and may for exactly INT64_MIN.
//   FloatToIntTruncate(d, f): truncates, with no check: f is a number inside
//     int64, or (x86-64 only) the caller checks d (INT64_MIN for any other).
//   LoadElement/StoreElement/StoreElementImm(elem, ..., data, index, offset):
//     the element at data + index * size + offset (offset in bytes: a
//     constant the index had added, folded into the address).
//   StoreElementImm(elem, value, data, index, offset): an int element set to
//     a value that fits it.
//   FArithElement(op, d, a, data, index, offset): d := a <op> the float64
//     element at that address, read as the operand itself (x86-64: a memory
//     operand, no load of its own).
//   AddElementChecked/SubElementChecked(d, a, data, index, offset,
//     overflow): d := a +/- the int64 element at that address (x86-64: a
//     memory operand), jumping to overflow when that leaves int64; d may
//     be a (the caller undoes the wrapped result), never data or index.
//   AddToElementChecked(data, index, offset, value, overflow), and
//   AddToElementCheckedImm with a value that is not INT32_MIN: the int64
//     element at that address += value, jumping to overflow with the element
//     holding the wrapped sum (the caller undoes it); x86-64 adds to memory.
//   AddToElementImm(data, index, offset, value): the same add, known not to
//     overflow (no check).
//   MulHighUnsigned(d, a, b): the high 64 bits of the unsigned 128-bit a * b.
//   BranchBit(mask, bit, set, L): jumps to L when bit `bit` (0..63) of mask
//     is set (or clear, !set); x86-64: bt and jc (jnc).
//   SetInt/SetFloat(cond, d, a, b): d := 1 or 0.
//   CallIntHelper/CallFloatHelper(table, offset, {args}): the helper's address
//     is read from table + offset, so the code stays position-independent and
//     calls whatever the mapping process's table holds.
//   NewSlot/StoreSlot/LoadSlot: a stack slot per value, for values that must
//     not hold a register across loops.
#pragma once

#include <cstdint>

namespace ppy::jit {

// Integer conditions; the U forms compare unsigned.
enum class IntCond : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kUlt, kUle, kUgt, kUge };

// Float conditions with IEEE semantics: the ordered forms (kLt .. kEq) are false
// when either operand is a NaN; kNe and the kNot forms are true.
enum class FloatCond : uint8_t { kLt, kLe, kGt, kGe, kEq, kNe, kNotLt, kNotLe, kNotGt, kNotGe };

// The float arithmetic that can take an element straight from memory.
enum class FloatOp : uint8_t { kAdd, kSub, kMul };

// What an instruction of finished code (registers allocated) does to one
// general register (a backend's UseOf, for jit.cpp's DropDeadMoves):
// nothing, reads it (or may), writes all of it without reading it, or
// unknown (an instruction the backend does not describe).
enum class RegisterUse : uint8_t { kNone, kReads, kOverwrites, kUnknown };

// The out-of-line primitives every backend class defines.
#define PPY_JIT_BACKEND_PRIMITIVES                                                                      \
  /* int64 f(Value* regs, Value* result, const JitCallContext* context, int64 entry_pc) */             \
  void Begin(Int* regs, Int* result, Int* context, Int* entry_pc);                                     \
  void End();                                                                                          \
  void Return(const Int& value);                                                                       \
  void ReturnImm(int64_t value);                                                                       \
                                                                                                       \
  void MovImm(const Int& dst, int64_t value);                                                          \
  void Mov(const Int& dst, const Int& src);                                                            \
  void Mov(const Float& dst, const Float& src);                                                        \
  void FloatFromBits(const Float& dst, uint64_t bits);                                                 \
                                                                                                       \
  void LoadInt(const Int& dst, const Int& base, int32_t offset);                                       \
  void StoreInt(const Int& src, const Int& base, int32_t offset);                                      \
  void LoadFloat(const Float& dst, const Int& base, int32_t offset);                                   \
  void StoreFloat(const Float& src, const Int& base, int32_t offset);                                  \
  void LoadU8(const Int& dst, const Int& base, int32_t offset);                                        \
  void LoadElement(ElemType elem, const Int& dst, const Int& data, const Int& index, int32_t offset);  \
  void LoadElement(ElemType elem, const Float& dst, const Int& data, const Int& index, int32_t offset);\
  void StoreElement(ElemType elem, const Int& src, const Int& data, const Int& index, int32_t offset); \
  void StoreElement(ElemType elem, const Float& src, const Int& data, const Int& index,                \
                    int32_t offset);                                                                   \
  void StoreElementImm(ElemType elem, int32_t value, const Int& data, const Int& index,                 \
                       int32_t offset);                                                                \
  void FArithElement(FloatOp op, const Float& dst, const Float& a, const Int& data, const Int& index,    \
                     int32_t offset);                                                                  \
  void AddElementChecked(const Int& dst, const Int& a, const Int& data, const Int& index, int32_t offset,\
                         const Label& overflow);                                                      \
  void SubElementChecked(const Int& dst, const Int& a, const Int& data, const Int& index, int32_t offset,\
                         const Label& overflow);                                                      \
  void AddToElementChecked(const Int& data, const Int& index, int32_t offset, const Int& value,         \
                           const Label& overflow);                                                     \
  void AddToElementCheckedImm(const Int& data, const Int& index, int32_t offset, int32_t value,         \
                              const Label& overflow);                                                  \
  void AddToElementImm(const Int& data, const Int& index, int32_t offset, int32_t value);               \
  int NewSlot();                                                                                       \
  void StoreSlot(const Int& src, int slot);                                                            \
  void LoadSlot(const Int& dst, int slot);                                                             \
                                                                                                       \
  void AddChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow);                  \
  void SubChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow);                  \
  void MulChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow);                  \
  void MulCheckedImm(const Int& dst, const Int& a, int32_t imm, const Label& overflow);                \
  void Mul(const Int& dst, const Int& a, const Int& b);                                                \
  void MulImm(const Int& dst, const Int& a, int32_t imm);                                              \
  void Add(const Int& dst, const Int& a, const Int& b);                                                \
  void Sub(const Int& dst, const Int& a, const Int& b);                                                \
  void AddImm(const Int& dst, const Int& a, int32_t imm);                                              \
  void AddPlusImm(const Int& dst, const Int& a, const Int& b, int32_t imm);                            \
  void AddCheckedImm(const Int& dst, const Int& a, int32_t imm, const Label& overflow);                \
  void AddScaled(const Int& dst, const Int& a, const Int& b, int shift);                               \
  void And(const Int& dst, const Int& a, const Int& b);                                                \
  void Or(const Int& dst, const Int& a, const Int& b);                                                 \
  void Xor(const Int& dst, const Int& a, const Int& b);                                                \
  void AndImm(const Int& dst, const Int& a, int32_t imm);                                              \
  void XorImm(const Int& dst, const Int& a, int32_t imm);                                              \
  void Neg(const Int& dst, const Int& a);                                                              \
  void Not(const Int& dst, const Int& a);                                                              \
  void Shl(const Int& dst, const Int& a, const Int& count);                                            \
  void Sar(const Int& dst, const Int& a, const Int& count);                                            \
  void SarImm(const Int& dst, const Int& a, int imm);                                                  \
  void DivMod(const Int& quotient, const Int& remainder, const Int& a, const Int& b);                  \
  void MulHighUnsigned(const Int& dst, const Int& a, const Int& b);                                    \
                                                                                                       \
  void FAdd(const Float& dst, const Float& a, const Float& b);                                         \
  void FSub(const Float& dst, const Float& a, const Float& b);                                         \
  void FMul(const Float& dst, const Float& a, const Float& b);                                         \
  void FDiv(const Float& dst, const Float& a, const Float& b);                                         \
  void FSqrt(const Float& dst, const Float& a);                                                        \
  void FNeg(const Float& dst, const Float& a);                                                         \
  void FAbs(const Float& dst, const Float& a);                                                         \
  void IntToFloat(const Float& dst, const Int& src);                                                   \
  void FloatToIntChecked(const Int& dst, const Float& src, const Label& fail);                         \
  void FloatToIntTruncate(const Int& dst, const Float& src);                                           \
                                                                                                       \
  /* reg -= 1; if reg > 0 then goto target */                                                          \
  void DecrementAndBranchPositive(const Int& reg, const Label& target);                                \
  void BranchInt(IntCond cond, const Int& a, const Int& b, const Label& target);                       \
  void BranchIntImm(IntCond cond, const Int& a, int64_t imm, const Label& target);                     \
  void BranchBit(const Int& mask, const Int& bit, bool set, const Label& target);                      \
  void BranchSignsAgree(const Int& a, const Int& b, const Label& target);                              \
  void BranchFloat(FloatCond cond, const Float& a, const Float& b, const Label& target);               \
  /* if a or b is a NaN then goto target */                                                             \
  void BranchUnordered(const Float& a, const Float& b, const Label& target);                           \
  /* if a == 0.0 (either sign; not a NaN) then goto target */                                          \
  void BranchFloatZero(const Float& a, const Label& target);                                           \
  void SetInt(IntCond cond, const Int& dst, const Int& a, const Int& b);                               \
  void SetFloat(FloatCond cond, const Int& dst, const Float& a, const Float& b);                       \
                                                                                                       \
  Int CallIntHelper(const Int& table, int32_t offset, std::initializer_list<Int> args);                \
  Float CallFloatHelper(const Int& table, int32_t offset, std::initializer_list<Float> args);

}  // namespace ppy::jit
