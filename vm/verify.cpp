#include "vm/verify.h"

#include <bitset>
#include <deque>
#include <vector>

#include "vm/math_table.h"
#include "vm/status.h"

namespace ppy {
namespace {

using RegisterSet = std::bitset<kMaxRegisters>;

class Verifier {
 public:
  Verifier(const ModuleCode& module, const FunctionCode& fn) : module_(module), fn_(fn) {}

  Status Run() {
    if (Status s = CheckShape(); !s.ok()) return s;
    for (pc_ = 0; pc_ < static_cast<int>(fn_.code.size()); ++pc_) {
      if (Status s = CheckInstruction(fn_.code[pc_]); !s.ok()) return s;
    }
    return CheckAssignedBeforeRead();
  }

 private:
  Status Fail(const std::string& message) const {
    return Status::Error(Format("verify %s: %s", fn_.qualname.c_str(), message.c_str()));
  }
  Status FailAt(const std::string& message) const {
    const Instr& in = fn_.code[pc_];
    std::string name = static_cast<int>(in.op) < kOpCount ? std::string(InfoOf(in.op).name) : "?";
    return Status::Error(Format("verify %s: pc %d (%s): %s", fn_.qualname.c_str(), pc_, name.c_str(), message.c_str()));
  }

  Status CheckShape() {
    if (fn_.registers.size() > static_cast<size_t>(kMaxRegisters)) return Fail("too many registers");
    if (fn_.end_of_constants() > fn_.num_registers()) return Fail("parameters and constants exceed the registers");
    if (fn_.code.empty()) return Fail("no code");
    if (fn_.lines.size() != fn_.code.size()) return Fail("the line table does not match the code");
    if (fn_.num_posonly + fn_.num_kwonly > fn_.num_params()) return Fail("bad parameter counts");
    if (static_cast<int>(fn_.result) > static_cast<int>(ValueType::kBuffer) || fn_.result == ValueType::kBuffer) {
      return Fail("bad result type");
    }
    for (int i = 0; i < fn_.num_params(); ++i) {
      const Param& param = fn_.params[i];
      RegisterType expected{KindOf(param.type), param.type == ValueType::kBuffer ? param.elem : ElemType::kNone};
      if (fn_.registers[i] != expected) return Fail(Cat("parameter ", param.name, " has the wrong register"));
      if (param.type == ValueType::kBuffer &&
          (param.elem == ElemType::kNone || static_cast<int>(param.elem) >= kElemTypeCount)) {
        return Fail(Cat("parameter ", param.name, " has a bad element type"));
      }
    }
    for (const RegisterType& reg : fn_.registers) {
      if (static_cast<int>(reg.kind) >= kKindCount) return Fail("a register has a bad kind");
      if (reg.kind == Kind::kBuffer
              ? (reg.elem == ElemType::kNone || static_cast<int>(reg.elem) >= kElemTypeCount)
              : reg.elem != ElemType::kNone) {
        return Fail("a register has a bad element type");
      }
    }
    for (size_t i = 0; i < fn_.constants.size(); ++i) {
      const ConstantValue& constant = fn_.constants[i];
      const RegisterType& reg = fn_.registers[fn_.first_constant() + i];
      if (reg.kind != constant.kind || constant.kind == Kind::kBuffer) return Fail("a constant has the wrong kind");
      if (constant.kind == Kind::kObject &&
          (constant.bits < 0 || constant.bits >= static_cast<int64_t>(fn_.objects.size()))) {
        return Fail("an object constant is out of range");
      }
    }
    for (PyObject* object : fn_.objects) {
      if (object == nullptr) return Fail("a missing object constant");
    }
    if (!HasFlag(fn_.code.back().op, kFlagEnd)) return Fail("control runs off the end of the code");
    return Status();
  }

  Status CheckRegister(int reg, Kind kind, bool writes) const {
    if (reg >= fn_.num_registers()) return FailAt(Cat("register ", reg, " is out of range"));
    if (fn_.registers[reg].kind != kind) return FailAt(Cat("register ", reg, " has the wrong kind"));
    if (writes && fn_.IsConstantRegister(reg)) return FailAt(Cat("writes constant register ", reg));
    return Status();
  }

  Status CheckSpan(int first, int count, Kind kind, bool writes) const {
    for (int i = 0; i < count; ++i) {
      if (Status s = CheckRegister(first + i, kind, writes); !s.ok()) return s;
    }
    return Status();
  }

  Status CheckBuffer(int reg, Mode mode) const {
    if (Status s = CheckRegister(reg, Kind::kBuffer, mode == Mode::kwU); !s.ok()) return s;
    ElemType elem = fn_.registers[reg].elem;
    const ElemInfo& info = InfoOf(elem);
    bool fits = true;
    switch (mode) {
      case Mode::krUd: fits = elem == ElemType::kF64; break;
      case Mode::krUq: fits = elem == ElemType::kI64; break;
      case Mode::krUf: fits = info.is_float; break;
      case Mode::krUi: fits = !info.is_float; break;
      default: break;
    }
    return fits ? Status() : FailAt(Cat("buffer register ", reg, " has the wrong element type"));
  }

  Status CheckObjectConstant(int index, bool must_be_str) const {
    if (index < 0 || index >= static_cast<int>(fn_.objects.size())) return FailAt("constant index out of range");
    if (must_be_str && !PyUnicode_CheckExact(fn_.objects[index])) return FailAt("a name constant is not a str");
    return Status();
  }

  // Checks one operand field. `value` is the field; `count` is C, which spans use.
  Status CheckOperand(Mode mode, int64_t value, const Instr& in, char field) const {
    const int count = in.c;
    switch (mode) {
      case Mode::k__:
        return value == 0 ? Status() : FailAt(Cat("unused operand ", std::string(1, field), " is set"));
      case Mode::krI: return CheckRegister(value, Kind::kInt, false);
      case Mode::kwI:
      case Mode::kuI: return CheckRegister(value, Kind::kInt, true);
      case Mode::krF: return CheckRegister(value, Kind::kFloat, false);
      case Mode::kwF: return CheckRegister(value, Kind::kFloat, true);
      case Mode::krO: return CheckRegister(value, Kind::kObject, false);
      case Mode::kwO: return CheckRegister(value, Kind::kObject, true);
      case Mode::krU:
      case Mode::kwU:
      case Mode::krUd:
      case Mode::krUq:
      case Mode::krUf:
      case Mode::krUi: return CheckBuffer(value, mode);
      case Mode::krX:
      case Mode::kwX: return Status();  // checked with the callee in CheckCall
      case Mode::ksO: return CheckSpan(value, count, Kind::kObject, false);
      case Mode::ktO: return CheckSpan(value, count, Kind::kObject, true);
      case Mode::kcO: return CheckSpan(value, count + 1, Kind::kObject, false);
      case Mode::kJ:
        return (value >= 0 && value < static_cast<int64_t>(fn_.code.size())) ? Status()
                                                                             : FailAt("jump target out of range");
      case Mode::kK: return CheckObjectConstant(value, in.op != Op::CALL_KW);
      case Mode::kP:
        return (value >= 0 && value < static_cast<int64_t>(module_.functions.size()))
                   ? Status()
                   : FailAt("function index out of range");
      case Mode::kN: return Status();
      case Mode::kM: {
        if (value < 0 || value >= kMathCount) return FailAt("math function out of range");
        MathShape shape = kMathInfo[value].shape;
        bool fits = (in.op == Op::MATH_F && shape == MathShape::F) || (in.op == Op::MATH_FF && shape == MathShape::FF) ||
                    (in.op == Op::MATH_FI && shape == MathShape::FI) || (in.op == Op::MATH_FB && shape == MathShape::FB);
        return fits ? Status() : FailAt("math function of the wrong shape");
      }
      case Mode::kY: {
        int64_t op = value >= kBinaryInPlace ? value - kBinaryInPlace : value;
        return (op >= 0 && op < kBinaryOpCount) ? Status() : FailAt("binary operator out of range");
      }
      case Mode::kE: return (value >= 0 && value < kUnaryOpCount) ? Status() : FailAt("unary operator out of range");
      case Mode::kQ:
        return (value >= 0 && value < kCompareOpCount) ? Status() : FailAt("comparison out of range");
      case Mode::kV:
        return (value >= 0 && value < kFormatConversionCount) ? Status() : FailAt("conversion out of range");
    }
    return FailAt("unknown operand mode");
  }

  Status CheckCall(const Instr& in) const {
    const FunctionCode& callee = *module_.functions[in.d];
    if (in.c != callee.num_params()) return FailAt("argument count does not match the callee");
    for (int i = 0; i < in.c; ++i) {
      int reg = in.b + i;
      if (reg >= fn_.num_registers()) return FailAt("argument register out of range");
      if (fn_.registers[reg] != callee.registers[i]) return FailAt(Cat("argument ", i, " has the wrong kind"));
    }
    return CheckRegister(in.a, KindOf(callee.result), true);
  }

  Status CheckInstruction(const Instr& in) {
    if (static_cast<int>(in.op) >= kOpCount) return FailAt("unknown opcode");
    const OpInfo& info = InfoOf(in.op);
    if (Status s = CheckOperand(info.a, in.a, in, 'A'); !s.ok()) return s;
    if (Status s = CheckOperand(info.b, in.b, in, 'B'); !s.ok()) return s;
    if (Status s = CheckOperand(info.c, in.c, in, 'C'); !s.ok()) return s;
    if (Status s = CheckOperand(info.d, in.d, in, 'D'); !s.ok()) return s;
    switch (in.op) {
      case Op::CALL_FN: return CheckCall(in);
      case Op::CALL_KW: {
        PyObject* names = fn_.objects[in.d];
        if (!PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) > in.c) return FailAt("bad keyword names");
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
          if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i))) return FailAt("bad keyword names");
        }
        return Status();
      }
      case Op::CALL_METHOD: return in.c >= 1 ? Status() : FailAt("a method call needs its object");
      case Op::BUILD_DICT: return in.c % 2 == 0 ? Status() : FailAt("odd dict span");
      case Op::BUILD_SLICE: return (in.c == 2 || in.c == 3) ? Status() : FailAt("bad slice span");
      case Op::UNPACK: return in.c >= 1 ? Status() : FailAt("empty unpack");
      case Op::RET_I:
        return fn_.result == ValueType::kInt || fn_.result == ValueType::kBool ? Status()
                                                                               : FailAt("returns an int from a function that does not");
      case Op::RET_F:
        return fn_.result == ValueType::kFloat ? Status() : FailAt("returns a float from a function that does not");
      case Op::RET_O:
      case Op::RET_NONE:
        return KindOf(fn_.result) == Kind::kObject ? Status()
                                                    : FailAt("returns an object from a typed function");
      default: return Status();
    }
  }

  // ---- Definite assignment of object and buffer registers ----------------------------

  bool Tracked(int reg) const {
    return reg < fn_.num_registers() &&
           (fn_.registers[reg].kind == Kind::kObject || fn_.registers[reg].kind == Kind::kBuffer);
  }

  // The registers instruction `in` reads that must hold a value, and those it writes.
  void ReadsAndWrites(const Instr& in, std::vector<int>* reads, std::vector<int>* writes) const {
    const OpInfo& info = InfoOf(in.op);
    auto field = [&](Mode mode, int value) {
      switch (mode) {
        case Mode::krO:
        case Mode::krU:
        case Mode::krUd:
        case Mode::krUq:
        case Mode::krUf:
        case Mode::krUi: reads->push_back(value); break;
        case Mode::kwO:
        case Mode::kwU: writes->push_back(value); break;
        case Mode::ksO:
          for (int i = 0; i < in.c; ++i) reads->push_back(value + i);
          break;
        case Mode::kcO:
          for (int i = 0; i <= in.c; ++i) reads->push_back(value + i);
          break;
        case Mode::ktO:
          for (int i = 0; i < in.c; ++i) writes->push_back(value + i);
          break;
        case Mode::krX:
          for (int i = 0; i < in.c; ++i) reads->push_back(value + i);
          break;
        case Mode::kwX: writes->push_back(value); break;
        default: break;
      }
    };
    field(info.a, in.a);
    field(info.b, in.b);
    field(info.c, in.c);
    field(info.d, in.d);
    // CHECK_BOUND_O exists to read a register that may be unassigned; after it,
    // the register is known to hold a value.
    if (in.op == Op::CHECK_BOUND_O) {
      reads->clear();
      writes->push_back(in.a);
    }
  }

  Status CheckAssignedBeforeRead() {
    const int n = static_cast<int>(fn_.code.size());
    RegisterSet entry;
    for (int reg = 0; reg < fn_.end_of_constants(); ++reg) entry.set(reg);
    std::vector<RegisterSet> in_sets(n);
    std::vector<bool> reached(n, false);
    in_sets[0] = entry;
    reached[0] = true;
    std::deque<int> work{0};
    std::vector<int> reads, writes;
    while (!work.empty()) {
      int pc = work.front();
      work.pop_front();
      const Instr& in = fn_.code[pc];
      reads.clear();
      writes.clear();
      ReadsAndWrites(in, &reads, &writes);
      RegisterSet out = in_sets[pc];
      RegisterSet out_on_jump = out;  // FOR_ITER writes only when it falls through
      for (int reg : writes) {
        if (!Tracked(reg)) continue;
        out.set(reg);
        if (in.op != Op::FOR_ITER) out_on_jump.set(reg);
      }
      auto flow = [&](int target, const RegisterSet& set) {
        if (!reached[target]) {
          reached[target] = true;
          in_sets[target] = set;
          work.push_back(target);
        } else {
          RegisterSet merged = in_sets[target] & set;
          if (merged != in_sets[target]) {
            in_sets[target] = merged;
            work.push_back(target);
          }
        }
      };
      const uint32_t flags = InfoOf(in.op).flags;
      if (flags & kFlagJump) flow(in.d, out_on_jump);
      if (!(flags & kFlagEnd)) flow(pc + 1, out);
    }
    for (pc_ = 0; pc_ < n; ++pc_) {
      if (!reached[pc_]) continue;
      reads.clear();
      writes.clear();
      ReadsAndWrites(fn_.code[pc_], &reads, &writes);
      for (int reg : reads) {
        if (Tracked(reg) && !in_sets[pc_].test(reg)) {
          return FailAt(Cat("reads register ", reg, " before it is assigned on every path"));
        }
      }
    }
    return Status();
  }

  const ModuleCode& module_;
  const FunctionCode& fn_;
  int pc_ = 0;
};

}  // namespace

Status VerifyFunction(const ModuleCode& module, const FunctionCode& fn) { return Verifier(module, fn).Run(); }

Status VerifyModule(const ModuleCode& module) {
  for (const auto& fn : module.functions) {
    if (Status s = VerifyFunction(module, *fn); !s.ok()) return s;
  }
  return Status();
}

}  // namespace ppy
