#include "asmjit-backend/emit_x86.h"

#include "asmjit-backend/asmjit_api.h"

#include <cstring>

namespace ppy::jit {

using namespace asmjit;
using x86::CondCode;

namespace {

CondCode IntCondition(IntCond cond) {
  switch (cond) {
    case IntCond::kEq: return CondCode::kE;
    case IntCond::kNe: return CondCode::kNE;
    case IntCond::kLt: return CondCode::kL;
    case IntCond::kLe: return CondCode::kLE;
    case IntCond::kGt: return CondCode::kG;
    case IntCond::kGe: return CondCode::kGE;
    case IntCond::kUlt: return CondCode::kB;
    case IntCond::kUle: return CondCode::kBE;
    case IntCond::kUgt: return CondCode::kA;
    case IntCond::kUge: return CondCode::kAE;
  }
  return CondCode::kE;
}

bool FitsInt32(int64_t value) { return value >= INT32_MIN && value <= INT32_MAX; }

}  // namespace

void X86Backend::Begin(Int* regs, Int* result, Int* context, Int* entry_pc) {
  entry_ = BeginFunction(cc_, regs, result, context, entry_pc);
  prologue_ = cc_.cursor();
}

// The register whose upper lane each AVX conversion to a double copies
// (vcvtss2sd dst, base, m32; vcvtsi2sd dst, base, r64): one the function
// clears once, in its prologue (made at the first conversion), so that no
// conversion waits for anything (with dst there, each waited for the last
// value of its register, unless cleared first: one more instruction).
const X86Backend::Float& X86Backend::ConversionBase() {
  if (!conversion_base_.isValid()) {
    conversion_base_ = NewFloat();
    asmjit::BaseNode* const end = prologue_;
    asmjit::BaseNode* const here = cc_.setCursor(end);
    cc_.vxorpd(conversion_base_, conversion_base_, conversion_base_);
    prologue_ = cc_.cursor();
    cc_.setCursor(here == end ? prologue_ : here);  // (emitting at the prologue's end: after the clear)
  }
  return conversion_base_;
}

void X86Backend::End() { cc_.endFunc(); }

void X86Backend::Return(const Int& value) { cc_.ret(value); }

void X86Backend::ReturnImm(int64_t value) {
  Int r = NewInt();
  MovImm(r, value);
  cc_.ret(r);
}

void X86Backend::MovImm(const Int& dst, int64_t value) {
  if (value == 0) {
    cc_.xor_(dst.r32(), dst.r32());
  } else {
    cc_.mov(dst, value);
  }
}

void X86Backend::Mov(const Int& dst, const Int& src) {
  if (dst.id() != src.id()) cc_.mov(dst, src);
}

void X86Backend::Mov(const Float& dst, const Float& src) {
  if (dst.id() != src.id()) cc_.movapd(dst, src);
}

void X86Backend::FloatFromBits(const Float& dst, uint64_t bits) {
  if (bits == 0) {
    cc_.xorpd(dst, dst);
    return;
  }
  Int t = NewInt();
  cc_.mov(t, bits);
  cc_.movq(dst, t);
}

void X86Backend::LoadInt(const Int& dst, const Int& base, int32_t offset) { cc_.mov(dst, x86::qword_ptr(base, offset)); }
void X86Backend::StoreInt(const Int& src, const Int& base, int32_t offset) { cc_.mov(x86::qword_ptr(base, offset), src); }
void X86Backend::LoadFloat(const Float& dst, const Int& base, int32_t offset) {
  cc_.movsd(dst, x86::qword_ptr(base, offset));
}
void X86Backend::StoreFloat(const Float& src, const Int& base, int32_t offset) {
  cc_.movsd(x86::qword_ptr(base, offset), src);
}
void X86Backend::LoadU8(const Int& dst, const Int& base, int32_t offset) {
  cc_.movzx(dst.r32(), x86::byte_ptr(base, offset));
}

void X86Backend::LoadElement(ElemType elem, const Int& dst, const Int& data, const Int& index, int32_t offset) {
  switch (elem) {
    case ElemType::kI64:
    case ElemType::kU64: cc_.mov(dst, x86::qword_ptr(data, index, 3, offset)); break;
    case ElemType::kI32: cc_.movsxd(dst, x86::dword_ptr(data, index, 2, offset)); break;
    case ElemType::kU32: cc_.mov(dst.r32(), x86::dword_ptr(data, index, 2, offset)); break;
    case ElemType::kI16: cc_.movsx(dst, x86::word_ptr(data, index, 1, offset)); break;
    case ElemType::kU16: cc_.movzx(dst.r32(), x86::word_ptr(data, index, 1, offset)); break;
    case ElemType::kI8: cc_.movsx(dst, x86::byte_ptr(data, index, 0, offset)); break;
    case ElemType::kU8:
    case ElemType::kBool: cc_.movzx(dst.r32(), x86::byte_ptr(data, index, 0, offset)); break;
    default: break;
  }
}

void X86Backend::LoadElement(ElemType elem, const Float& dst, const Int& data, const Int& index, int32_t offset) {
  if (elem == ElemType::kF32) {
    // cvtss2sd writes only the low lane: the upper one comes from a register
    // set once (ConversionBase) under AVX, else from dst cleared first.
    // Without that, each load would wait for the last value of its register
    // (matmul's loop ran at the latency of that chain, a third slower than C).
    if (avx_) return void(cc_.vcvtss2sd(dst, ConversionBase(), x86::dword_ptr(data, index, 2, offset)));
    cc_.xorpd(dst, dst);
    cc_.cvtss2sd(dst, x86::dword_ptr(data, index, 2, offset));
  } else {
    cc_.movsd(dst, x86::qword_ptr(data, index, 3, offset));
  }
}

void X86Backend::FArithElement(FloatOp op, const Float& dst, const Float& a, const Int& data, const Int& index,
                               int32_t offset) {
  // The two-operand SSE form even with AVX: Intel cores split a
  // three-operand VEX instruction with an indexed memory operand into two
  // uops at rename ("unlamination"), where the SSE form stays one; in an
  // unrolled loop of elements (matmul's) that was an eighth of the time.
  // Every VEX instruction here is 128-bit and clears the upper lanes, so
  // mixing the encodings costs no transition. (The copy is usually
  // coalesced away: dst and a get the same register.)
  const x86::Mem element = x86::qword_ptr(data, index, 3, offset);
  Mov(dst, a);
  if (op == FloatOp::kAdd) cc_.addsd(dst, element);
  if (op == FloatOp::kSub) cc_.subsd(dst, element);
  if (op == FloatOp::kMul) cc_.mulsd(dst, element);
}

void X86Backend::AddElementChecked(const Int& dst, const Int& a, const Int& data, const Int& index, int32_t offset,
                                   const Label& overflow) {
  Mov(dst, a);
  cc_.add(dst, x86::qword_ptr(data, index, 3, offset));
  cc_.jo(overflow);
}

void X86Backend::SubElementChecked(const Int& dst, const Int& a, const Int& data, const Int& index, int32_t offset,
                                   const Label& overflow) {
  Mov(dst, a);
  cc_.sub(dst, x86::qword_ptr(data, index, 3, offset));
  cc_.jo(overflow);
}

void X86Backend::StoreElement(ElemType elem, const Int& src, const Int& data, const Int& index, int32_t offset) {
  switch (elem) {
    case ElemType::kI64:
    case ElemType::kU64: cc_.mov(x86::qword_ptr(data, index, 3, offset), src); break;
    case ElemType::kI32:
    case ElemType::kU32: cc_.mov(x86::dword_ptr(data, index, 2, offset), src.r32()); break;
    case ElemType::kI16:
    case ElemType::kU16: cc_.mov(x86::word_ptr(data, index, 1, offset), src.r16()); break;
    case ElemType::kI8:
    case ElemType::kU8:
    case ElemType::kBool: cc_.mov(x86::byte_ptr(data, index, 0, offset), src.r8()); break;
    default: break;
  }
}

void X86Backend::StoreElementImm(ElemType elem, int32_t value, const Int& data, const Int& index,
                                 int32_t offset) {
  switch (elem) {
    case ElemType::kI64:
    case ElemType::kU64: cc_.mov(x86::qword_ptr(data, index, 3, offset), value); break;  // (sign-extended)
    case ElemType::kI32:
    case ElemType::kU32: cc_.mov(x86::dword_ptr(data, index, 2, offset), value); break;
    case ElemType::kI16:
    case ElemType::kU16: cc_.mov(x86::word_ptr(data, index, 1, offset), value & 0xffff); break;
    case ElemType::kI8:
    case ElemType::kU8:
    case ElemType::kBool: cc_.mov(x86::byte_ptr(data, index, 0, offset), value & 0xff); break;
    default: break;
  }
}

void X86Backend::AddToElementChecked(const Int& data, const Int& index, int32_t offset, const Int& value,
                                     const Label& overflow) {
  cc_.add(x86::qword_ptr(data, index, 3, offset), value);
  cc_.jo(overflow);
}

void X86Backend::AddToElementCheckedImm(const Int& data, const Int& index, int32_t offset, int32_t value,
                                        const Label& overflow) {
  cc_.add(x86::qword_ptr(data, index, 3, offset), value);  // (sign-extended)
  cc_.jo(overflow);
}

void X86Backend::AddToElementImm(const Int& data, const Int& index, int32_t offset, int32_t value) {
  cc_.add(x86::qword_ptr(data, index, 3, offset), value);
}

void X86Backend::StoreElement(ElemType elem, const Float& src, const Int& data, const Int& index,
                              int32_t offset) {
  if (elem == ElemType::kF32) {
    Float narrow = NewFloat();
    cc_.cvtsd2ss(narrow, src);
    cc_.movss(x86::dword_ptr(data, index, 2, offset), narrow);
  } else {
    cc_.movsd(x86::qword_ptr(data, index, 3, offset), src);
  }
}

int X86Backend::NewSlot() {
  slots_.push_back(cc_.newStack(8, 8));
  return static_cast<int>(slots_.size()) - 1;
}

void X86Backend::StoreSlot(const Int& src, int slot) { cc_.mov(slots_[slot], src); }
void X86Backend::LoadSlot(const Int& dst, int slot) { cc_.mov(dst, slots_[slot]); }

template <typename Reg, typename Emit>
void X86Backend::Binary(const Reg& dst, const Reg& a, const Reg& b, bool commutative, Emit emit) {
  if (dst.id() == b.id() && dst.id() != a.id()) {
    if (commutative) {
      emit(dst, a);
      return;
    }
    Reg t = NewLike(a);
    Mov(t, a);
    emit(t, b);
    Mov(dst, t);
    return;
  }
  Mov(dst, a);
  emit(dst, b);
}

void X86Backend::AddChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow) {
  Binary(dst, a, b, true, [&](const Int& d, const Int& s) { cc_.add(d, s); });
  cc_.jo(overflow);
}

void X86Backend::SubChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow) {
  if (dst.id() == b.id() && dst.id() != a.id()) {  // the flags must come from the sub itself
    Int t = NewInt();
    cc_.mov(t, a);
    cc_.sub(t, b);
    cc_.jo(overflow);
    cc_.mov(dst, t);
    return;
  }
  Mov(dst, a);
  cc_.sub(dst, b);
  cc_.jo(overflow);
}

void X86Backend::MulChecked(const Int& dst, const Int& a, const Int& b, const Label& overflow) {
  Binary(dst, a, b, true, [&](const Int& d, const Int& s) { cc_.imul(d, s); });
  cc_.jo(overflow);
}

void X86Backend::MulCheckedImm(const Int& dst, const Int& a, int32_t imm, const Label& overflow) {
  cc_.imul(dst, a, imm);
  cc_.jo(overflow);
}

void X86Backend::Mul(const Int& dst, const Int& a, const Int& b) {
  Binary(dst, a, b, true, [&](const Int& d, const Int& s) { cc_.imul(d, s); });
}

void X86Backend::MulImm(const Int& dst, const Int& a, int32_t imm) { cc_.imul(dst, a, imm); }

// Unchecked adds set no flag anyone reads: into a third register, one lea
// instead of a move and an add.
void X86Backend::Add(const Int& dst, const Int& a, const Int& b) {
  if (dst.id() != a.id() && dst.id() != b.id()) {
    cc_.lea(dst, x86::ptr(a, b));
    return;
  }
  Binary(dst, a, b, true, [&](const Int& d, const Int& s) { cc_.add(d, s); });
}

void X86Backend::Sub(const Int& dst, const Int& a, const Int& b) {
  Binary(dst, a, b, false, [&](const Int& d, const Int& s) { cc_.sub(d, s); });
}

void X86Backend::AddScaled(const Int& dst, const Int& a, const Int& b, int shift) {
  cc_.lea(dst, x86::ptr(a, b, shift));
}

void X86Backend::AddImm(const Int& dst, const Int& a, int32_t imm) {
  if (dst.id() != a.id()) {
    cc_.lea(dst, x86::ptr(a, imm));
    return;
  }
  cc_.add(dst, imm);
}

void X86Backend::AddPlusImm(const Int& dst, const Int& a, const Int& b, int32_t imm) {
  cc_.lea(dst, x86::ptr(a, b, 0, imm));
}

void X86Backend::AddCheckedImm(const Int& dst, const Int& a, int32_t imm, const Label& overflow) {
  Mov(dst, a);
  cc_.add(dst, imm);
  cc_.jo(overflow);
}

void X86Backend::And(const Int& dst, const Int& a, const Int& b) {
  Binary(dst, a, b, true, [&](const Int& d, const Int& s) { cc_.and_(d, s); });
}
void X86Backend::Or(const Int& dst, const Int& a, const Int& b) {
  Binary(dst, a, b, true, [&](const Int& d, const Int& s) { cc_.or_(d, s); });
}
void X86Backend::Xor(const Int& dst, const Int& a, const Int& b) {
  Binary(dst, a, b, true, [&](const Int& d, const Int& s) { cc_.xor_(d, s); });
}
void X86Backend::AndImm(const Int& dst, const Int& a, int32_t imm) {
  Mov(dst, a);
  cc_.and_(dst, imm);
}
void X86Backend::XorImm(const Int& dst, const Int& a, int32_t imm) {
  Mov(dst, a);
  cc_.xor_(dst, imm);
}
void X86Backend::Neg(const Int& dst, const Int& a) {
  Mov(dst, a);
  cc_.neg(dst);
}
void X86Backend::Not(const Int& dst, const Int& a) {
  Mov(dst, a);
  cc_.not_(dst);
}

void X86Backend::Shl(const Int& dst, const Int& a, const Int& count) {
  // The count must be in cl; the Compiler assigns it when the operand is a vreg.
  Int shifted = NewInt();
  Int c = NewInt();
  cc_.mov(shifted, a);
  cc_.mov(c, count);
  cc_.shl(shifted, c.r8());
  cc_.mov(dst, shifted);
}

void X86Backend::Sar(const Int& dst, const Int& a, const Int& count) {
  Int shifted = NewInt();
  Int c = NewInt();
  cc_.mov(shifted, a);
  cc_.mov(c, count);
  cc_.sar(shifted, c.r8());
  cc_.mov(dst, shifted);
}

void X86Backend::SarImm(const Int& dst, const Int& a, int imm) {
  Mov(dst, a);
  cc_.sar(dst, imm);
}

void X86Backend::DivMod(const Int& quotient, const Int& remainder, const Int& a, const Int& b) {
  Int low = NewInt();
  Int high = NewInt();
  cc_.mov(low, a);
  cc_.cqo(high, low);
  cc_.idiv(high, low, b);
  cc_.mov(quotient, low);
  cc_.mov(remainder, high);
}

void X86Backend::MulHighUnsigned(const Int& dst, const Int& a, const Int& b) {
  Int low = NewInt();
  Int high = NewInt();
  cc_.mov(low, a);
  cc_.mul(high, low, b);  // high:low = low * b (rdx:rax)
  cc_.mov(dst, high);
}

void X86Backend::FAdd(const Float& dst, const Float& a, const Float& b) {
  if (avx_) return void(cc_.vaddsd(dst, a, b));
  Binary(dst, a, b, true, [&](const Float& d, const Float& s) { cc_.addsd(d, s); });
}
void X86Backend::FSub(const Float& dst, const Float& a, const Float& b) {
  if (avx_) return void(cc_.vsubsd(dst, a, b));
  Binary(dst, a, b, false, [&](const Float& d, const Float& s) { cc_.subsd(d, s); });
}
void X86Backend::FMul(const Float& dst, const Float& a, const Float& b) {
  if (avx_) return void(cc_.vmulsd(dst, a, b));
  Binary(dst, a, b, true, [&](const Float& d, const Float& s) { cc_.mulsd(d, s); });
}
void X86Backend::FDiv(const Float& dst, const Float& a, const Float& b) {
  if (avx_) return void(cc_.vdivsd(dst, a, b));
  Binary(dst, a, b, false, [&](const Float& d, const Float& s) { cc_.divsd(d, s); });
}
void X86Backend::FSqrt(const Float& dst, const Float& a) {
  // Both forms take the upper lane from an operand; naming `a` there keeps dst's
  // old value out of the dependency chain.
  if (avx_) return void(cc_.vsqrtsd(dst, a, a));
  cc_.sqrtsd(dst, a);
}

void X86Backend::FNeg(const Float& dst, const Float& a) {
  Float mask = NewFloat();
  FloatFromBits(mask, 0x8000000000000000ull);
  if (avx_) return void(cc_.vxorpd(dst, a, mask));
  Float t = NewFloat();
  cc_.movapd(t, a);
  cc_.xorpd(t, mask);
  cc_.movapd(dst, t);
}

void X86Backend::FAbs(const Float& dst, const Float& a) {
  Float mask = NewFloat();
  FloatFromBits(mask, 0x7FFFFFFFFFFFFFFFull);
  if (avx_) return void(cc_.vandpd(dst, a, mask));
  Float t = NewFloat();
  cc_.movapd(t, a);
  cc_.andpd(t, mask);
  cc_.movapd(dst, t);
}

void X86Backend::IntToFloat(const Float& dst, const Int& src) {
  // cvtsi2sd writes only the low lane: the upper one comes from the
  // register set once under AVX (ConversionBase), else from dst cleared
  // first, so that the conversion does not wait for dst's last value.
  if (avx_) return void(cc_.vcvtsi2sd(dst, ConversionBase(), src));
  cc_.xorpd(dst, dst);
  cc_.cvtsi2sd(dst, src);
}

void X86Backend::FloatToIntChecked(const Int& dst, const Float& src, const Label& fail) {
  // cvttsd2si gives INT64_MIN for a NaN or an out-of-range value.
  cc_.cvttsd2si(dst, src);
  cc_.cmp(dst, 1);  // overflows exactly for INT64_MIN
  cc_.jo(fail);
}

void X86Backend::FloatToIntTruncate(const Int& dst, const Float& src) { cc_.cvttsd2si(dst, src); }

void X86Backend::DecrementAndBranchPositive(const Int& reg, const Label& target) {
  cc_.sub(reg, 1);
  cc_.jg(target);
}

void X86Backend::BranchInt(IntCond cond, const Int& a, const Int& b, const Label& target) {
  cc_.cmp(a, b);
  cc_.j(IntCondition(cond), target);
}

void X86Backend::BranchBit(const Int& mask, const Int& bit, bool set, const Label& target) {
  cc_.bt(mask, bit);
  if (set) cc_.jc(target);
  else cc_.jnc(target);
}

void X86Backend::BranchIntImm(IntCond cond, const Int& a, int64_t imm, const Label& target) {
  if (FitsInt32(imm)) {
    cc_.cmp(a, imm);
  } else {
    Int t = NewInt();
    cc_.mov(t, imm);
    cc_.cmp(a, t);
  }
  cc_.j(IntCondition(cond), target);
}

void X86Backend::BranchSignsAgree(const Int& a, const Int& b, const Label& target) {
  Int t = NewInt();
  cc_.mov(t, a);
  cc_.xor_(t, b);  // (sets SF to the sign of a ^ b)
  cc_.jns(target);
}

void X86Backend::BranchFloatZero(const Float& a, const Label& target) {
  // (Not `movq bits, a; add bits, bits; jz`: where the allocator spills a,
  // asmjit rewrites that movq into a load into an xmm register.)
  Float zero = NewFloat();
  FloatFromBits(zero, 0);
  BranchFloat(FloatCond::kEq, a, zero, target);
}

void X86Backend::BranchFloat(FloatCond cond, const Float& a, const Float& b, const Label& target) {
  // ucomisd sets ZF, PF and CF all for an unordered pair. "Above" and "above or
  // equal" are false then, so a < b is tested as b > a.
  switch (cond) {
    case FloatCond::kGt: cc_.ucomisd(a, b); cc_.ja(target); break;
    case FloatCond::kGe: cc_.ucomisd(a, b); cc_.jae(target); break;
    case FloatCond::kLt: cc_.ucomisd(b, a); cc_.ja(target); break;
    case FloatCond::kLe: cc_.ucomisd(b, a); cc_.jae(target); break;
    case FloatCond::kNotGt: cc_.ucomisd(a, b); cc_.jbe(target); break;
    case FloatCond::kNotGe: cc_.ucomisd(a, b); cc_.jb(target); break;
    case FloatCond::kNotLt: cc_.ucomisd(b, a); cc_.jbe(target); break;
    case FloatCond::kNotLe: cc_.ucomisd(b, a); cc_.jb(target); break;
    case FloatCond::kEq: {
      Label skip = NewLabel();
      cc_.ucomisd(a, b);
      cc_.jp(skip);
      cc_.je(target);
      cc_.bind(skip);
      break;
    }
    case FloatCond::kNe:
      cc_.ucomisd(a, b);
      cc_.jp(target);
      cc_.jne(target);
      break;
  }
}

void X86Backend::BranchUnordered(const Float& a, const Float& b, const Label& target) {
  cc_.ucomisd(a, b);
  cc_.jp(target);
}

void X86Backend::SetInt(IntCond cond, const Int& dst, const Int& a, const Int& b) {
  Int t = NewInt();
  cc_.xor_(t.r32(), t.r32());
  cc_.cmp(a, b);
  cc_.set(IntCondition(cond), t.r8());
  cc_.mov(dst, t);
}

void X86Backend::SetFloat(FloatCond cond, const Int& dst, const Float& a, const Float& b) {
  Int t = NewInt();
  Int u = NewInt();
  cc_.xor_(t.r32(), t.r32());
  switch (cond) {
    case FloatCond::kGt: cc_.ucomisd(a, b); cc_.seta(t.r8()); break;
    case FloatCond::kGe: cc_.ucomisd(a, b); cc_.setae(t.r8()); break;
    case FloatCond::kLt: cc_.ucomisd(b, a); cc_.seta(t.r8()); break;
    case FloatCond::kLe: cc_.ucomisd(b, a); cc_.setae(t.r8()); break;
    case FloatCond::kNotGt: cc_.ucomisd(a, b); cc_.setbe(t.r8()); break;
    case FloatCond::kNotGe: cc_.ucomisd(a, b); cc_.setb(t.r8()); break;
    case FloatCond::kNotLt: cc_.ucomisd(b, a); cc_.setbe(t.r8()); break;
    case FloatCond::kNotLe: cc_.ucomisd(b, a); cc_.setb(t.r8()); break;
    case FloatCond::kEq:
      cc_.xor_(u.r32(), u.r32());
      cc_.ucomisd(a, b);
      cc_.sete(t.r8());
      cc_.setnp(u.r8());
      cc_.and_(t, u);
      break;
    case FloatCond::kNe:
      cc_.xor_(u.r32(), u.r32());
      cc_.ucomisd(a, b);
      cc_.setne(t.r8());
      cc_.setp(u.r8());
      cc_.or_(t, u);
      break;
  }
  cc_.mov(dst, t);
}

template <typename Result, typename Arg, typename Reg>
Reg X86Backend::CallHelper(const Int& table, int32_t offset, std::initializer_list<Reg> args, Reg result) {
  Int target = NewInt();
  LoadInt(target, table, offset);
  InvokeHelper<Result, Arg>(cc_, target, args, result);
  return result;
}

X86Backend::Int X86Backend::CallIntHelper(const Int& table, int32_t offset, std::initializer_list<Int> args) {
  return CallHelper<int64_t, int64_t>(table, offset, args, NewInt());
}

X86Backend::Float X86Backend::CallFloatHelper(const Int& table, int32_t offset, std::initializer_list<Float> args) {
  return CallHelper<double, double>(table, offset, args, NewFloat());
}

namespace {

// Whether `op` names general register `reg`: itself, or as a memory
// operand's base or index.
bool MentionsGp(const asmjit::Operand& op, uint32_t reg) {
  if (op.isReg()) {
    const asmjit::BaseReg& r = op.as<asmjit::BaseReg>();
    return r.isGp() && r.id() == reg;
  }
  if (op.isMem()) {
    const asmjit::BaseMem& mem = op.as<asmjit::BaseMem>();
    return (mem.hasBaseReg() && mem.baseId() == reg) || (mem.hasIndexReg() && mem.indexId() == reg);
  }
  return false;
}

// A general register of 32 or 64 bits: a write to either replaces all 64.
bool IsWholeGp(const asmjit::Operand& op) {
  return op.isReg() && op.as<asmjit::BaseReg>().isGp() && op.as<asmjit::BaseReg>().size() >= 4;
}

// The instructions that write their first operand without reading it: a
// move, an address, an extension or a conversion.
bool WritesFirstOnly(asmjit::InstId id) {
  namespace x = asmjit::x86;
  switch (id) {
    case x::Inst::kIdMov: case x::Inst::kIdLea: case x::Inst::kIdMovzx: case x::Inst::kIdMovsx:
    case x::Inst::kIdMovsxd: case x::Inst::kIdCvttsd2si:
      return true;
    default: return false;
  }
}

}  // namespace

bool X86Backend::IsRegisterMove(const asmjit::InstNode& inst, uint32_t* reg) {
  if (inst.id() != asmjit::x86::Inst::kIdMov || inst.opCount() != 2 || !IsWholeGp(inst.op(0))) return false;
  const asmjit::Operand& source = inst.op(1);
  // (A load too: what the code reads is its frame's, or elements whose
  // bounds it checked before.)
  if (!source.isImm() && !source.isMem() && !(source.isReg() && source.as<asmjit::BaseReg>().isGp())) return false;
  *reg = inst.op(0).id();
  return true;
}

RegisterUse X86Backend::UseOf(const asmjit::InstNode& inst, uint32_t reg) {
  namespace x = asmjit::x86;
  switch (inst.id()) {
    // These (and WritesFirstOnly's) name every register they read or write
    // as an operand (no implicit one: imul's one-operand form, which writes
    // rdx:rax, is left out below), and write no general register except
    // their first.
    case x::Inst::kIdAdd: case x::Inst::kIdSub: case x::Inst::kIdAnd: case x::Inst::kIdOr: case x::Inst::kIdXor:
    case x::Inst::kIdCmp: case x::Inst::kIdTest: case x::Inst::kIdImul:
    case x::Inst::kIdMovsd: case x::Inst::kIdMovss: case x::Inst::kIdMovapd: case x::Inst::kIdMovaps:
    case x::Inst::kIdMovq:
    case x::Inst::kIdAddsd: case x::Inst::kIdSubsd: case x::Inst::kIdMulsd: case x::Inst::kIdDivsd:
    case x::Inst::kIdVaddsd: case x::Inst::kIdVsubsd: case x::Inst::kIdVmulsd: case x::Inst::kIdVdivsd:
    case x::Inst::kIdXorpd: case x::Inst::kIdVxorpd: case x::Inst::kIdAndpd: case x::Inst::kIdVandpd:
    case x::Inst::kIdSqrtsd: case x::Inst::kIdVsqrtsd: case x::Inst::kIdUcomisd: case x::Inst::kIdVucomisd:
    case x::Inst::kIdCvtss2sd: case x::Inst::kIdVcvtss2sd: case x::Inst::kIdCvtsd2ss: case x::Inst::kIdVcvtsd2ss:
    case x::Inst::kIdCvtsi2sd: case x::Inst::kIdVcvtsi2sd:
      break;
    default:
      if (!WritesFirstOnly(inst.id())) return RegisterUse::kUnknown;
  }
  if (inst.id() == x::Inst::kIdImul && inst.opCount() < 2) return RegisterUse::kUnknown;
  bool read = false;
  for (uint32_t i = 0; i < inst.opCount(); ++i) read |= MentionsGp(inst.op(i), reg) && i != 0;
  const asmjit::Operand& first = inst.op(0);
  if (!MentionsGp(first, reg)) return read ? RegisterUse::kReads : RegisterUse::kNone;
  // Written whole without being read: into a 32- or 64-bit register (the
  // others read their first operand).
  return WritesFirstOnly(inst.id()) && IsWholeGp(first) && !read ? RegisterUse::kOverwrites : RegisterUse::kReads;
}

}  // namespace ppy::jit
