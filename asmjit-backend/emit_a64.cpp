#include "asmjit-backend/emit_a64.h"

#include "asmjit-backend/asmjit_api.h"

namespace ppy::jit {

using namespace asmjit;
using a64::CondCode;

namespace {

CondCode IntCondition(IntCond cond) {
  switch (cond) {
    case IntCond::kEq: return CondCode::kEQ;
    case IntCond::kNe: return CondCode::kNE;
    case IntCond::kLt: return CondCode::kLT;
    case IntCond::kLe: return CondCode::kLE;
    case IntCond::kGt: return CondCode::kGT;
    case IntCond::kGe: return CondCode::kGE;
    case IntCond::kUlt: return CondCode::kLO;
    case IntCond::kUle: return CondCode::kLS;
    case IntCond::kUgt: return CondCode::kHI;
    case IntCond::kUge: return CondCode::kHS;
  }
  return CondCode::kEQ;
}

// After fcmp an unordered pair sets C and V (NZCV = 0011). These conditions are
// false for it in the ordered forms and true in the negated ones, as IEEE asks.
CondCode FloatCondition(FloatCond cond) {
  switch (cond) {
    case FloatCond::kLt: return CondCode::kMI;
    case FloatCond::kLe: return CondCode::kLS;
    case FloatCond::kGt: return CondCode::kGT;
    case FloatCond::kGe: return CondCode::kGE;
    case FloatCond::kEq: return CondCode::kEQ;
    case FloatCond::kNe: return CondCode::kNE;
    case FloatCond::kNotLt: return CondCode::kPL;
    case FloatCond::kNotLe: return CondCode::kHI;
    case FloatCond::kNotGt: return CondCode::kLE;
    case FloatCond::kNotGe: return CondCode::kLT;
  }
  return CondCode::kEQ;
}

// add/sub/cmp take a 12-bit unsigned immediate.
bool FitsArithmetic(int64_t value) { return value >= 0 && value <= 4095; }

}  // namespace

void A64Backend::Begin(Int* regs, Int* result, Int* context, Int* entry_pc) {
  entry_ = BeginFunction(cc_, regs, result, context, entry_pc);
}

void A64Backend::End() { cc_.endFunc(); }

void A64Backend::Return(const Int& value) { cc_.ret(value); }

void A64Backend::ReturnImm(int64_t value) { cc_.ret(Constant(value)); }

void A64Backend::MovImm(const Int& dst, int64_t value) {
  // movz/movn plus movk for each further 16-bit chunk: every constant, no pool.
  uint64_t bits = static_cast<uint64_t>(value);
  bool inverted = value < 0;
  uint64_t base = inverted ? ~bits : bits;
  bool first = true;
  for (uint32_t shift = 0; shift < 64; shift += 16) {
    uint64_t chunk = (base >> shift) & 0xFFFF;
    if (chunk == 0 && !(first && shift == 48)) continue;
    if (first) {
      if (inverted) {
        cc_.movn(dst, Imm(chunk), Imm(arm::lsl(shift)));
      } else {
        cc_.movz(dst, Imm(chunk), Imm(arm::lsl(shift)));
      }
      first = false;
    } else {
      cc_.movk(dst, Imm((bits >> shift) & 0xFFFF), Imm(arm::lsl(shift)));
    }
  }
}

A64Backend::Int A64Backend::Constant(int64_t value) {
  Int r = NewInt();
  MovImm(r, value);
  return r;
}

// data + offset, for an element address with a constant folded in (the
// register-offset loads and stores take no displacement).
A64Backend::Int A64Backend::Offset(const Int& data, int32_t offset) {
  if (offset == 0) return data;
  Int base = NewInt();
  AddImm(base, data, offset);
  return base;
}

void A64Backend::Mov(const Int& dst, const Int& src) {
  if (dst.id() != src.id()) cc_.mov(dst, src);
}

void A64Backend::Mov(const Float& dst, const Float& src) {
  if (dst.id() != src.id()) cc_.fmov(dst, src);
}

void A64Backend::FloatFromBits(const Float& dst, uint64_t bits) {
  cc_.fmov(dst, Constant(static_cast<int64_t>(bits)));
}

void A64Backend::LoadInt(const Int& dst, const Int& base, int32_t offset) { cc_.ldr(dst, a64::ptr(base, offset)); }
void A64Backend::StoreInt(const Int& src, const Int& base, int32_t offset) { cc_.str(src, a64::ptr(base, offset)); }
void A64Backend::LoadFloat(const Float& dst, const Int& base, int32_t offset) { cc_.ldr(dst, a64::ptr(base, offset)); }
void A64Backend::StoreFloat(const Float& src, const Int& base, int32_t offset) { cc_.str(src, a64::ptr(base, offset)); }
void A64Backend::LoadU8(const Int& dst, const Int& base, int32_t offset) { cc_.ldrb(dst.w(), a64::ptr(base, offset)); }

void A64Backend::LoadElement(ElemType elem, const Int& dst, const Int& data_, const Int& index, int32_t offset) {
  const Int data = Offset(data_, offset);
  switch (elem) {
    case ElemType::kI64:
    case ElemType::kU64: cc_.ldr(dst, a64::ptr(data, index, arm::lsl(3))); break;
    case ElemType::kI32: cc_.ldrsw(dst, a64::ptr(data, index, arm::lsl(2))); break;
    case ElemType::kU32: cc_.ldr(dst.w(), a64::ptr(data, index, arm::lsl(2))); break;
    case ElemType::kI16: cc_.ldrsh(dst, a64::ptr(data, index, arm::lsl(1))); break;
    case ElemType::kU16: cc_.ldrh(dst.w(), a64::ptr(data, index, arm::lsl(1))); break;
    case ElemType::kI8: cc_.ldrsb(dst, a64::ptr(data, index)); break;
    case ElemType::kU8:
    case ElemType::kBool: cc_.ldrb(dst.w(), a64::ptr(data, index)); break;
    default: break;
  }
}

void A64Backend::LoadElement(ElemType elem, const Float& dst, const Int& data_, const Int& index, int32_t offset) {
  const Int data = Offset(data_, offset);
  if (elem == ElemType::kF32) {
    a64::Vec narrow = cc_.newVecS();
    cc_.ldr(narrow, a64::ptr(data, index, arm::lsl(2)));
    cc_.fcvt(dst, narrow);
  } else {
    cc_.ldr(dst, a64::ptr(data, index, arm::lsl(3)));
  }
}

// No memory operands here: the element is loaded, then combined.
void A64Backend::FArithElement(FloatOp op, const Float& dst, const Float& a, const Int& data, const Int& index,
                               int32_t offset) {
  Float element = NewFloat();
  LoadElement(ElemType::kF64, element, data, index, offset);
  if (op == FloatOp::kAdd) FAdd(dst, a, element);
  if (op == FloatOp::kSub) FSub(dst, a, element);
  if (op == FloatOp::kMul) FMul(dst, a, element);
}

void A64Backend::AddElementChecked(const Int& dst, const Int& a, const Int& data, const Int& index, int32_t offset,
                                   const Label& overflow) {
  Int element = NewInt();
  LoadElement(ElemType::kI64, element, data, index, offset);
  AddChecked(dst, a, element, overflow);
}

void A64Backend::SubElementChecked(const Int& dst, const Int& a, const Int& data, const Int& index, int32_t offset,
                                   const Label& overflow) {
  Int element = NewInt();
  LoadElement(ElemType::kI64, element, data, index, offset);
  SubChecked(dst, a, element, overflow);
}

void A64Backend::StoreElement(ElemType elem, const Int& src, const Int& data_, const Int& index, int32_t offset) {
  const Int data = Offset(data_, offset);
  switch (elem) {
    case ElemType::kI64:
    case ElemType::kU64: cc_.str(src, a64::ptr(data, index, arm::lsl(3))); break;
    case ElemType::kI32:
    case ElemType::kU32: cc_.str(src.w(), a64::ptr(data, index, arm::lsl(2))); break;
    case ElemType::kI16:
    case ElemType::kU16: cc_.strh(src.w(), a64::ptr(data, index, arm::lsl(1))); break;
    case ElemType::kI8:
    case ElemType::kU8:
    case ElemType::kBool: cc_.strb(src.w(), a64::ptr(data, index)); break;
    default: break;
  }
}

void A64Backend::StoreElementImm(ElemType elem, int32_t value, const Int& data, const Int& index,
                                 int32_t offset) {
  StoreElement(elem, Constant(value), data, index, offset);  // (no store of an immediate)
}

void A64Backend::AddToElementChecked(const Int& data, const Int& index, int32_t offset, const Int& value,
                                     const Label& overflow) {
  Int sum = NewInt();
  LoadElement(ElemType::kI64, sum, data, index, offset);
  cc_.adds(sum, sum, value);
  StoreElement(ElemType::kI64, sum, data, index, offset);  // (str leaves the flags alone)
  cc_.b_vs(overflow);
}

void A64Backend::AddToElementCheckedImm(const Int& data, const Int& index, int32_t offset, int32_t value,
                                        const Label& overflow) {
  Int sum = NewInt();
  LoadElement(ElemType::kI64, sum, data, index, offset);
  if (FitsArithmetic(value)) cc_.adds(sum, sum, value);
  else if (FitsArithmetic(-static_cast<int64_t>(value))) cc_.subs(sum, sum, -static_cast<int64_t>(value));
  else cc_.adds(sum, sum, Constant(value));
  StoreElement(ElemType::kI64, sum, data, index, offset);
  cc_.b_vs(overflow);
}

void A64Backend::AddToElementImm(const Int& data, const Int& index, int32_t offset, int32_t value) {
  Int sum = NewInt();
  LoadElement(ElemType::kI64, sum, data, index, offset);
  if (FitsArithmetic(value)) cc_.add(sum, sum, value);
  else cc_.add(sum, sum, Constant(value));
  StoreElement(ElemType::kI64, sum, data, index, offset);
}

void A64Backend::StoreElement(ElemType elem, const Float& src, const Int& data_, const Int& index,
                              int32_t offset) {
  const Int data = Offset(data_, offset);
  if (elem == ElemType::kF32) {
    a64::Vec narrow = cc_.newVecS();
    cc_.fcvt(narrow, src);  // rounds to nearest even, as the interpreter's cast does
    cc_.str(narrow, a64::ptr(data, index, arm::lsl(2)));
  } else {
    cc_.str(src, a64::ptr(data, index, arm::lsl(3)));
  }
}

int A64Backend::NewSlot() {
  slots_.push_back(cc_.newStack(8, 8));
  return static_cast<int>(slots_.size()) - 1;
}

void A64Backend::StoreSlot(const Int& src, int slot) { cc_.str(src, slots_[slot]); }
void A64Backend::LoadSlot(const Int& dst, int slot) { cc_.ldr(dst, slots_[slot]); }

void A64Backend::AddChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow) {
  cc_.adds(dst, a, b);
  cc_.b_vs(overflow);
}

void A64Backend::SubChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow) {
  cc_.subs(dst, a, b);
  cc_.b_vs(overflow);
}

void A64Backend::MulChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow) {
  // The product fits when its high half is the sign extension of its low half.
  Int high = NewInt();
  Int sign = NewInt();
  cc_.smulh(high, a, b);
  cc_.mul(dst, a, b);
  cc_.asr(sign, dst, 63);
  cc_.cmp(high, sign);
  cc_.b_ne(overflow);
}

void A64Backend::MulCheckedImm(const Int& dst, const Int& a, int32_t imm, const Label& overflow) {
  MulChecked(dst, a, Constant(imm), overflow);  // (no multiply by an immediate)
}

void A64Backend::Mul(const Int& dst, const Int& a, const Int& b) { cc_.mul(dst, a, b); }

void A64Backend::MulImm(const Int& dst, const Int& a, int32_t imm) { cc_.mul(dst, a, Constant(imm)); }

void A64Backend::Add(const Int& dst, const Int& a, const Int& b) { cc_.add(dst, a, b); }

void A64Backend::Sub(const Int& dst, const Int& a, const Int& b) { cc_.sub(dst, a, b); }

void A64Backend::AddScaled(const Int& dst, const Int& a, const Int& b, int shift) {
  cc_.add(dst, a, b, Imm(arm::lsl(shift)));
}

void A64Backend::AddPlusImm(const Int& dst, const Int& a, const Int& b, int32_t imm) {
  Add(dst, a, b);
  AddImm(dst, dst, imm);
}

void A64Backend::AddImm(const Int& dst, const Int& a, int32_t imm) {
  if (FitsArithmetic(imm)) {
    cc_.add(dst, a, imm);
  } else if (FitsArithmetic(-static_cast<int64_t>(imm))) {
    cc_.sub(dst, a, -imm);
  } else {
    cc_.add(dst, a, Constant(imm));
  }
}

void A64Backend::AddCheckedImm(const Int& dst, const Int& a, int32_t imm, const Label& overflow) {
  if (FitsArithmetic(imm)) {
    cc_.adds(dst, a, imm);
  } else if (FitsArithmetic(-static_cast<int64_t>(imm))) {
    cc_.subs(dst, a, -static_cast<int64_t>(imm));
  } else {
    cc_.adds(dst, a, Constant(imm));
  }
  cc_.b_vs(overflow);
}

void A64Backend::And(const Int& dst, const Int& a, const Int& b) { cc_.and_(dst, a, b); }
void A64Backend::Or(const Int& dst, const Int& a, const Int& b) { cc_.orr(dst, a, b); }
void A64Backend::Xor(const Int& dst, const Int& a, const Int& b) { cc_.eor(dst, a, b); }
// Logical immediates have a restricted encoding; a register always works.
void A64Backend::AndImm(const Int& dst, const Int& a, int32_t imm) { cc_.and_(dst, a, Constant(imm)); }
void A64Backend::XorImm(const Int& dst, const Int& a, int32_t imm) { cc_.eor(dst, a, Constant(imm)); }
void A64Backend::Neg(const Int& dst, const Int& a) { cc_.neg(dst, a); }
void A64Backend::Not(const Int& dst, const Int& a) { cc_.mvn(dst, a); }
// The count is in 0..63 here (the code generator checks); lslv/asrv use it mod 64.
void A64Backend::Shl(const Int& dst, const Int& a, const Int& count) { cc_.lsl(dst, a, count); }
void A64Backend::Sar(const Int& dst, const Int& a, const Int& count) { cc_.asr(dst, a, count); }
void A64Backend::SarImm(const Int& dst, const Int& a, int imm) { cc_.asr(dst, a, imm); }

void A64Backend::MulHighUnsigned(const Int& dst, const Int& a, const Int& b) { cc_.umulh(dst, a, b); }

void A64Backend::DivMod(const Int& quotient, const Int& remainder, const Int& a, const Int& b) {
  // Temporaries keep the result right when an output register is also an input.
  Int q = NewInt();
  Int r = NewInt();
  cc_.sdiv(q, a, b);
  cc_.msub(r, q, b, a);  // r = a - q * b
  cc_.mov(quotient, q);
  cc_.mov(remainder, r);
}

void A64Backend::FAdd(const Float& dst, const Float& a, const Float& b) { cc_.fadd(dst, a, b); }
void A64Backend::FSub(const Float& dst, const Float& a, const Float& b) { cc_.fsub(dst, a, b); }
void A64Backend::FMul(const Float& dst, const Float& a, const Float& b) { cc_.fmul(dst, a, b); }
void A64Backend::FDiv(const Float& dst, const Float& a, const Float& b) { cc_.fdiv(dst, a, b); }
void A64Backend::FSqrt(const Float& dst, const Float& a) { cc_.fsqrt(dst, a); }
void A64Backend::FNeg(const Float& dst, const Float& a) { cc_.fneg(dst, a); }
void A64Backend::FAbs(const Float& dst, const Float& a) { cc_.fabs(dst, a); }
void A64Backend::IntToFloat(const Float& dst, const Int& src) { cc_.scvtf(dst, src); }

void A64Backend::FloatToIntChecked(const Int& dst, const Float& src, const Label& fail) {
  // fcvtzs gives 0 for a NaN and saturates out-of-range values to INT64_MAX or
  // INT64_MIN. No double equals INT64_MAX, so either extreme means "outside".
  cc_.fcmp(src, src);
  cc_.b_vs(fail);
  cc_.fcvtzs(dst, src);
  cc_.cmp(dst, 1);  // overflows exactly for INT64_MIN
  cc_.b_vs(fail);
  cc_.cmn(dst, 1);  // overflows exactly for INT64_MAX
  cc_.b_vs(fail);
}

void A64Backend::FloatToIntTruncate(const Int& dst, const Float& src) { cc_.fcvtzs(dst, src); }

void A64Backend::DecrementAndBranchPositive(const Int& reg, const Label& target) {
  cc_.subs(reg, reg, 1);
  cc_.b_gt(target);
}

void A64Backend::CompareImm(const Int& a, int64_t imm) {
  if (FitsArithmetic(imm)) {
    cc_.cmp(a, imm);
  } else if (imm < 0 && FitsArithmetic(-imm)) {
    cc_.cmn(a, -imm);
  } else {
    cc_.cmp(a, Constant(imm));
  }
}

void A64Backend::BranchInt(IntCond cond, const Int& a, const Int& b, const Label& target) {
  cc_.cmp(a, b);
  cc_.b(IntCondition(cond), target);
}

void A64Backend::BranchBit(const Int& mask, const Int& bit, bool set, const Label& target) {
  Int shifted = cc_.newGpx();
  cc_.lsr(shifted, mask, bit);
  if (set) cc_.tbnz(shifted, 0, target);
  else cc_.tbz(shifted, 0, target);
}

void A64Backend::BranchIntImm(IntCond cond, const Int& a, int64_t imm, const Label& target) {
  if (imm == 0 && cond == IntCond::kEq) {
    cc_.cbz(a, target);
  } else if (imm == 0 && cond == IntCond::kNe) {
    cc_.cbnz(a, target);
  } else {
    CompareImm(a, imm);
    cc_.b(IntCondition(cond), target);
  }
}

void A64Backend::BranchSignsAgree(const Int& a, const Int& b, const Label& target) {
  Int t = NewInt();
  cc_.eor(t, a, b);
  cc_.cmp(t, 0);
  cc_.b(IntCondition(IntCond::kGe), target);
}

void A64Backend::BranchFloatZero(const Float& a, const Label& target) {
  cc_.fcmp(a, asmjit::Imm(0));  // `fcmp d, #0.0`: equal for either zero, unordered for a NaN
  cc_.b(CondCode::kEQ, target);
}

void A64Backend::BranchFloat(FloatCond cond, const Float& a, const Float& b, const Label& target) {
  cc_.fcmp(a, b);
  cc_.b(FloatCondition(cond), target);
}

void A64Backend::BranchUnordered(const Float& a, const Float& b, const Label& target) {
  cc_.fcmp(a, b);
  cc_.b(CondCode::kVS, target);  // unordered sets V
}

void A64Backend::SetInt(IntCond cond, const Int& dst, const Int& a, const Int& b) {
  cc_.cmp(a, b);
  cc_.cset(dst, IntCondition(cond));
}

void A64Backend::SetFloat(FloatCond cond, const Int& dst, const Float& a, const Float& b) {
  cc_.fcmp(a, b);
  cc_.cset(dst, FloatCondition(cond));
}

template <typename Result, typename Arg, typename Reg>
Reg A64Backend::CallHelper(const Int& table, int32_t offset, std::initializer_list<Reg> args, Reg result) {
  Int target = NewInt();
  LoadInt(target, table, offset);
  InvokeHelper<Result, Arg>(cc_, target, args, result);
  return result;
}

A64Backend::Int A64Backend::CallIntHelper(const Int& table, int32_t offset, std::initializer_list<Int> args) {
  return CallHelper<int64_t, int64_t>(table, offset, args, NewInt());
}

A64Backend::Float A64Backend::CallFloatHelper(const Int& table, int32_t offset, std::initializer_list<Float> args) {
  return CallHelper<double, double>(table, offset, args, NewFloat());
}

}  // namespace ppy::jit
