// The instruction word and the tables generated from vm/opcodes.def.
//
// An instruction is one 64-bit word:
//
//    63                             32 31      24 23      16 15       8 7        0
//   +---------------------------------+----------+----------+----------+----------+
//   |                D                |    C     |    B     |    A     |    OP    |
//   +---------------------------------+----------+----------+----------+----------+
//
// A, B and C are register numbers (or a small count); D is a fourth register, a
// jump target, a constant or function index, or a table id. Registers are typed:
// each function declares the kind of every register once, and the verifier checks
// each operand against it, so the interpreter never asks what a register holds.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ppy {

// Registers are addressed by 8-bit operands.
inline constexpr int kMaxRegisters = 256;

enum class Op : uint8_t {
#define PPY_OPCODE(name, a, b, c, d, flags, meaning) name,
#include "vm/opcodes.def"
#undef PPY_OPCODE
};

inline constexpr int kOpCount = 0
#define PPY_OPCODE(name, a, b, c, d, flags, meaning) +1
#include "vm/opcodes.def"
#undef PPY_OPCODE
    ;
static_assert(kOpCount <= 256, "an opcode is one byte");

struct Instr {
  Op op;
  uint8_t a = 0;
  uint8_t b = 0;
  uint8_t c = 0;
  int32_t d = 0;
};
static_assert(sizeof(Instr) == 8, "an instruction is one 64-bit word");

// What an operand field holds. The letters are the ones used in opcodes.def.
enum class Mode : uint8_t {
  k__,  // unused, must be zero
  krI, kwI, kuI,  // int register: read, write, read-write
  krF, kwF,       // float register
  krC, kwC,       // a pair of float registers: a complex value's real and imaginary parts
  krO, kwO,       // object register
  krU, kwU,       // buffer register
  krUd, krUq,     // float64 or int64 buffer register
  krUf, krUi,     // buffer register of any float or any int element type
  krX, kwX,       // registers whose kinds a call fixes
  ksO, ktO,       // span of C object registers, read or written
  kcO,            // callable register followed by C argument registers
  kJ, kK, kP,     // jump target, object constant, function index
  kN,             // a count
  kM, kY, kE, kQ, kV,  // ids in the math, binary, unary, compare, conversion tables
};

enum OpFlags : uint32_t {
  kFlagRaise = 1u << 0,
  kFlagJump = 1u << 1,
  kFlagEnd = 1u << 2,
  kFlagCall = 1u << 3,
  kFlagLoop = 1u << 4,
  kFlagObj = 1u << 5,
  kFlagStore = 1u << 6,
  kFlagJit = 1u << 7,
  kFlagRuntime = 1u << 8,
};

struct OpInfo {
  std::string_view name;
  Mode a, b, c, d;
  uint32_t flags;
  std::string_view meaning;
};

namespace opinfo_detail {
inline constexpr Mode __ = Mode::k__;
inline constexpr Mode rI = Mode::krI, wI = Mode::kwI, uI = Mode::kuI;
inline constexpr Mode rF = Mode::krF, wF = Mode::kwF;
inline constexpr Mode rC = Mode::krC, wC = Mode::kwC;
inline constexpr Mode rO = Mode::krO, wO = Mode::kwO;
inline constexpr Mode rU = Mode::krU, wU = Mode::kwU;
inline constexpr Mode rUd = Mode::krUd, rUq = Mode::krUq, rUf = Mode::krUf, rUi = Mode::krUi;
inline constexpr Mode rX = Mode::krX, wX = Mode::kwX;
inline constexpr Mode sO = Mode::ksO, tO = Mode::ktO, cO = Mode::kcO;
inline constexpr Mode J = Mode::kJ, K = Mode::kK, P = Mode::kP, N = Mode::kN;
inline constexpr Mode M = Mode::kM, Y = Mode::kY, E = Mode::kE, Q = Mode::kQ, V = Mode::kV;
inline constexpr uint32_t RAISE = kFlagRaise, JUMP = kFlagJump, END = kFlagEnd, CALL = kFlagCall,
                          LOOP = kFlagLoop, OBJ = kFlagObj, STORE = kFlagStore, JIT = kFlagJit,
                          RUNTIME = kFlagRuntime;
}  // namespace opinfo_detail

inline constexpr std::array<OpInfo, kOpCount> kOpInfo = [] {
  using namespace opinfo_detail;
  return std::array<OpInfo, kOpCount>{{
#define PPY_OPCODE(name, a, b, c, d, flags, meaning) {#name, a, b, c, d, flags, meaning},
#include "vm/opcodes.def"
#undef PPY_OPCODE
  }};
}();

// Machine code runs no object-mode instruction. It reads objects without
// taking references (GETITEM_I_GF), and the only references it moves are an
// object register's (MOVE_O, FOR_ITER_L), which it takes and releases in
// place, leaving for the interpreter wherever a release would free an object
// (whose destructor could run any code). An object-mode instruction flagged
// JIT is a mistake in opcodes.def.
static_assert([] {
  for (const OpInfo& info : kOpInfo) {
    if ((info.flags & kFlagJit) && (info.flags & kFlagObj)) return false;
  }
  return true;
}(), "an OBJ instruction cannot be flagged JIT");

inline const OpInfo& InfoOf(Op op) { return kOpInfo[static_cast<uint8_t>(op)]; }
inline bool HasFlag(Op op, uint32_t flag) { return (InfoOf(op).flags & flag) != 0; }

// Whether an operand field of `op` names an object register.
inline constexpr bool NamesObjectRegister(Op op) {
  const OpInfo& info = kOpInfo[static_cast<uint8_t>(op)];
  for (Mode mode : {info.a, info.b, info.c}) {
    if (mode == Mode::krO || mode == Mode::kwO || mode == Mode::ksO || mode == Mode::ktO || mode == Mode::kcO) {
      return true;
    }
  }
  return false;
}

// Whether `op` needs the GIL: one machine code does not run, or one that
// names an object register (MOVE_O, which machine code runs, moves
// references). The one rule for what a @ppy.nogil frame takes the GIL back
// for (vm/interpreter.cpp), what its loops may hold (compiler/compile.cpp),
// and what a prange loop may hold (vm/verify.cpp).
inline constexpr bool NeedsGil(Op op) {
  return (kOpInfo[static_cast<uint8_t>(op)].flags & kFlagJit) == 0 || NamesObjectRegister(op);
}

// The registers one operand field names, from its mode in vm/opcodes.def: one
// register, a span of them, or none (count 0). The one definition of what a
// mode means for registers: the verifier's dataflow and the JIT's liveness
// both read it.
struct OperandRegisters {
  int64_t first = 0;
  int count = 0;
  bool reads = false;
  bool writes = false;
};

// Every mode is listed, so that a new one cannot be added without saying which
// registers it names (the switch has no default: -Wswitch flags a missing mode).
inline OperandRegisters RegistersNamedBy(Mode mode, int64_t value, const Instr& in) {
  switch (mode) {
    case Mode::krI:
    case Mode::krF:
    case Mode::krO:
    case Mode::krU:
    case Mode::krUd:
    case Mode::krUq:
    case Mode::krUf:
    case Mode::krUi: return {value, 1, true, false};
    case Mode::kwI:
    case Mode::kwF:
    case Mode::kwO:
    case Mode::kwU:
    case Mode::kwX: return {value, 1, false, true};
    case Mode::kuI: return {value, 1, true, true};
    case Mode::krC: return {value, 2, true, false};
    case Mode::kwC: return {value, 2, false, true};
    case Mode::krX:
    case Mode::ksO: return {value, in.c, true, false};
    case Mode::kcO: return {value, in.c + 1, true, false};
    case Mode::ktO: return {value, in.c, false, true};
    case Mode::k__:
    case Mode::kJ:
    case Mode::kK:
    case Mode::kP:
    case Mode::kN:
    case Mode::kM:
    case Mode::kY:
    case Mode::kE:
    case Mode::kQ:
    case Mode::kV: return {};
  }
  return {};
}

// Calls visit(reg, reads, writes) for every register `in` names, field by
// field. A crafted instruction may name registers out of range: callers that
// run before the verifier's range checks bound them.
template <typename Visit>
void ForEachRegister(const Instr& in, Visit&& visit) {
  const OpInfo& info = InfoOf(in.op);
  const Mode modes[4] = {info.a, info.b, info.c, info.d};
  const int64_t values[4] = {in.a, in.b, in.c, in.d};
  for (int field = 0; field < 4; ++field) {
    OperandRegisters named = RegistersNamedBy(modes[field], values[field], in);
    for (int64_t reg = named.first; reg < named.first + named.count; ++reg) visit(reg, named.reads, named.writes);
  }
}

// ---- Small tables that instructions index ----------------------------------------

// Binary operators on objects (BINARY_O's D): the number protocol function, in
// plain and in-place ("+=") forms, so that `x += y` on a list extends it.
#define PPY_BINARY_OPS(X)                                      \
  X(ADD, "+", PyNumber_Add, PyNumber_InPlaceAdd)                \
  X(SUB, "-", PyNumber_Subtract, PyNumber_InPlaceSubtract)      \
  X(MUL, "*", PyNumber_Multiply, PyNumber_InPlaceMultiply)      \
  X(TRUEDIV, "/", PyNumber_TrueDivide, PyNumber_InPlaceTrueDivide) \
  X(FLOORDIV, "//", PyNumber_FloorDivide, PyNumber_InPlaceFloorDivide) \
  X(MOD, "%", PyNumber_Remainder, PyNumber_InPlaceRemainder)    \
  X(LSHIFT, "<<", PyNumber_Lshift, PyNumber_InPlaceLshift)      \
  X(RSHIFT, ">>", PyNumber_Rshift, PyNumber_InPlaceRshift)      \
  X(AND, "&", PyNumber_And, PyNumber_InPlaceAnd)                \
  X(OR, "|", PyNumber_Or, PyNumber_InPlaceOr)                   \
  X(XOR, "^", PyNumber_Xor, PyNumber_InPlaceXor)                \
  X(MATMUL, "@", PyNumber_MatrixMultiply, PyNumber_InPlaceMatrixMultiply) \
  X(POW, "**", PyNumber_Power, PyNumber_InPlacePower)

enum class BinaryOp : uint8_t {
#define PPY_BINARY_ENUM(name, symbol, plain, inplace) name,
  PPY_BINARY_OPS(PPY_BINARY_ENUM)
#undef PPY_BINARY_ENUM
};
inline constexpr int kBinaryOpCount = 0
#define PPY_BINARY_COUNT(name, symbol, plain, inplace) +1
    PPY_BINARY_OPS(PPY_BINARY_COUNT)
#undef PPY_BINARY_COUNT
    ;
// BINARY_O's D is the operator, plus kBinaryInPlace for the augmented form.
inline constexpr int kBinaryInPlace = 32;
static_assert(kBinaryOpCount < kBinaryInPlace);

inline constexpr std::array<std::string_view, kBinaryOpCount> kBinaryOpSymbols = {
#define PPY_BINARY_SYMBOL(name, symbol, plain, inplace) symbol,
    PPY_BINARY_OPS(PPY_BINARY_SYMBOL)
#undef PPY_BINARY_SYMBOL
};

// UNARY_O's D.
enum class UnaryOp : uint8_t { kNegative = 0, kPositive = 1, kInvert = 2 };
inline constexpr int kUnaryOpCount = 3;

// COMPARE_O's D uses CPython's own numbering: Py_LT 0, Py_LE 1, Py_EQ 2, Py_NE 3,
// Py_GT 4, Py_GE 5.
inline constexpr int kCompareOpCount = 6;

// FORMAT's C: the f-string conversion.
inline constexpr int kFormatConversionCount = 4;

}  // namespace ppy
