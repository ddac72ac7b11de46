#include "vm/verify.h"

#include <algorithm>
#include <bitset>
#include <deque>
#include <optional>
#include <vector>

#include "vm/math_table.h"
#include "vm/status.h"

namespace ppy {

namespace {

using RegisterSet = std::bitset<kMaxRegisters>;

// The registers `in` reads and writes, from its operand modes. Only for an
// instruction whose operands CheckInstruction accepted (all in range).
void ReadsAndWrites(const Instr& in, std::vector<int>* reads, std::vector<int>* writes) {
  ForEachRegister(in, [&](int64_t reg, bool read, bool written) {
    if (read) reads->push_back(static_cast<int>(reg));
    if (written) writes->push_back(static_cast<int>(reg));
  });
}

class Verifier {
 public:
  Verifier(const ModuleCode& module, const FunctionCode& fn) : module_(module), fn_(fn) {}

  Status Run() {
    if (Status s = CheckShape(); !s.ok()) return s;
    for (pc_ = 0; pc_ < static_cast<int>(fn_.code.size()); ++pc_) {
      if (Status s = CheckInstruction(fn_.code[pc_]); !s.ok()) return s;
    }
    if (Status s = CheckRangeLoops(); !s.ok()) return s;
    if (Status s = CheckPrangeLoops(); !s.ok()) return s;
    return CheckDataflow();
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
    if (fn_.num_posonly < 0 || fn_.num_kwonly < 0 || fn_.num_posonly + fn_.num_kwonly > fn_.num_params()) {
      return Fail("bad parameter counts");
    }
    if (static_cast<int>(fn_.result) > static_cast<int>(kLastValueType) || fn_.result == ValueType::kBuffer) {
      return Fail("bad result type");
    }
    for (int i = 0; i < fn_.num_params(); ++i) {
      const Param& param = fn_.params[i];
      RegisterType expected{KindOf(param.type), param.type == ValueType::kBuffer ? param.elem : ElemType::kNone};
      expected.ndim = param.type == ValueType::kBuffer ? param.ndim : 1;
      if (param.ndim < 1 || param.ndim > kMaxDims || (param.type != ValueType::kBuffer && param.ndim != 1)) {
        return Fail(Cat("parameter ", param.name, " has a bad number of dimensions"));
      }
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
      if (reg.ndim < 1 || reg.ndim > kMaxDims || (reg.kind != Kind::kBuffer && reg.ndim != 1)) {
        return Fail("a register has a bad number of dimensions");
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
    // (An unknown last opcode is CheckInstruction's to report, before the table
    // is indexed with it.)
    const Op last = fn_.code.back().op;
    if (static_cast<int>(last) < kOpCount && !HasFlag(last, kFlagEnd)) {
      return Fail("control runs off the end of the code");
    }
    return Status();
  }

  // A register operand: inside the frame, in both directions (D is a signed
  // field: a negative register would index below the frame), of the kind its
  // mode says (none for the kinds a call fixes, checked in CheckCall), and not
  // a constant register if the instruction writes it (constants are reloaded
  // only at a call, and object constants are borrowed, not owned).
  Status CheckRegister(int64_t reg, std::optional<Kind> kind, bool writes) const {
    if (reg < 0 || reg >= fn_.num_registers()) return FailAt(Cat("register ", reg, " is out of range"));
    if (kind && fn_.registers[reg].kind != *kind) return FailAt(Cat("register ", reg, " has the wrong kind"));
    if (writes && fn_.IsConstantRegister(static_cast<int>(reg))) return FailAt(Cat("writes constant register ", reg));
    return Status();
  }

  // A span of `count` registers from `first`. An empty span names no register,
  // but its start must still be inside the frame or just past it (the
  // interpreter forms the address of its first register).
  Status CheckSpan(int64_t first, int count, std::optional<Kind> kind, bool writes) const {
    if (first < 0 || first > fn_.num_registers()) return FailAt(Cat("register span at ", first, " is out of range"));
    for (int i = 0; i < count; ++i) {
      if (Status s = CheckRegister(first + i, kind, writes); !s.ok()) return s;
    }
    return Status();
  }

  Status CheckBuffer(int64_t reg, Mode mode) const {
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

  Status CheckObjectConstant(int64_t index, bool must_be_str) const {
    if (index < 0 || index >= static_cast<int64_t>(fn_.objects.size())) return FailAt("constant index out of range");
    if (must_be_str && !PyUnicode_CheckExact(fn_.objects[index])) return FailAt("a name constant is not a str");
    return Status();
  }

  // Checks one operand field against its mode: every mode that names registers,
  // an instruction or a table entry is range-checked in both directions. `value`
  // is the field; C is the count that spans use.
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
      case Mode::krC: return CheckSpan(value, 2, Kind::kFloat, false);
      case Mode::kwC: return CheckSpan(value, 2, Kind::kFloat, true);
      case Mode::krO: return CheckRegister(value, Kind::kObject, false);
      case Mode::kwO: return CheckRegister(value, Kind::kObject, true);
      case Mode::krU:
      case Mode::kwU:
      case Mode::krUd:
      case Mode::krUq:
      case Mode::krUf:
      case Mode::krUi: return CheckBuffer(value, mode);
      // The kinds a call fixes are checked against the callee in CheckCall.
      case Mode::krX: return CheckSpan(value, count, std::nullopt, false);
      case Mode::kwX: return CheckRegister(value, std::nullopt, true);
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
      case Mode::kN: return (value >= 0 && value < kMaxRegisters) ? Status() : FailAt("count out of range");
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
    // The callee is verified on its own, perhaps after this caller: its
    // parameter registers must exist before they are compared.
    if (callee.num_params() > callee.num_registers()) return FailAt("the callee's parameters exceed its registers");
    for (int i = 0; i < in.c; ++i) {
      int reg = in.b + i;
      if (reg >= fn_.num_registers()) return FailAt("argument register out of range");
      // The whole register type: a buffer argument of another element type would
      // have the callee read its elements with the wrong size and bound.
      if (fn_.registers[reg] != callee.registers[i]) return FailAt(Cat("argument ", i, " has the wrong kind"));
    }
    return CheckRegister(in.a, KindOf(callee.result), true);
  }

  // Jumps go forward, except the back edges of loops: only an instruction with
  // the LOOP flag counts toward tiering and checks for Ctrl-C, so any other
  // backward jump (or a jump to itself) could loop forever without either. A
  // LOOP instruction's target is a loop head, before it (or itself, for an
  // empty loop body).
  Status CheckJumpDirection(const Instr& in) const {
    const uint32_t flags = InfoOf(in.op).flags;
    if (!(flags & kFlagJump)) return Status();
    const bool backward = in.d <= pc_;
    if ((flags & kFlagLoop) && !backward) return FailAt("a loop's back edge jumps forward");
    if (!(flags & kFlagLoop) && backward) {
      return FailAt("jumps backward, which only a loop instruction (one that checks for Ctrl-C) may");
    }
    return Status();
  }

  // A buffer register written from other buffer registers (MOVE_U) must have
  // their element type: loads, stores and the machine code take the element
  // size, the bound and the store checks from the register's declared type, so a
  // u8 view in an f64 register would be read and written 8 bytes at a time.
  Status CheckBufferCopies(const Instr& in) const {
    const OpInfo& info = InfoOf(in.op);
    if (info.a != Mode::kwU) return Status();
    const RegisterType& type = fn_.registers[in.a];
    const Mode modes[3] = {info.b, info.c, info.d};
    const int64_t values[3] = {in.b, in.c, in.d};
    for (int field = 0; field < 3; ++field) {
      if (modes[field] == Mode::krU && fn_.registers[values[field]] != type) {
        return FailAt(Cat("copies buffer register ", values[field], " into register ", static_cast<int>(in.a),
                          " of another element type or dimensions"));
      }
    }
    return Status();
  }

  Status CheckInstruction(const Instr& in) {
    if (static_cast<int>(in.op) >= kOpCount) return FailAt("unknown opcode");
    const OpInfo& info = InfoOf(in.op);
    if (Status s = CheckOperand(info.a, in.a, in, 'A'); !s.ok()) return s;
    if (Status s = CheckOperand(info.b, in.b, in, 'B'); !s.ok()) return s;
    if (Status s = CheckOperand(info.c, in.c, in, 'C'); !s.ok()) return s;
    if (Status s = CheckOperand(info.d, in.d, in, 'D'); !s.ok()) return s;
    // (After the operands, so that a bad operand is reported as such.)
    if (info.flags & kFlagRuntime) return FailAt("an instruction made at run time only");
    if (Status s = CheckJumpDirection(in); !s.ok()) return s;
    if (Status s = CheckBufferCopies(in); !s.ok()) return s;
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
      // An axis must be one of the buffer's; an instruction that takes one
      // index addresses element i at i * strides[0], which machine code takes
      // as i (an innermost contiguous axis): only a one-dimensional buffer
      // guarantees both stay inside the view.
      case Op::SHAPE_U:
      case Op::INDEX_U:
        return in.c < fn_.registers[in.b].ndim ? Status() : FailAt("axis out of range for the buffer");
      case Op::LOAD_F64: case Op::LOAD_I64: case Op::LOAD_F: case Op::LOAD_I:
      case Op::LOADX_F64: case Op::LOADX_I64:
        return fn_.registers[in.b].ndim == 1 ? Status() : FailAt("indexes a multi-dimensional buffer with one index");
      case Op::STORE_F64: case Op::STORE_I64: case Op::STORE_F: case Op::STORE_I:
      case Op::STOREX_F64: case Op::STOREX_I64: case Op::ADDTO_F64: case Op::ADDTO_I64:
        return fn_.registers[in.a].ndim == 1 ? Status() : FailAt("indexes a multi-dimensional buffer with one index");
      case Op::CALL_METHOD: return in.c >= 1 ? Status() : FailAt("a method call needs its object");
      case Op::BUILD_DICT: return in.c % 2 == 0 ? Status() : FailAt("odd dict span");
      case Op::BUILD_SLICE: return (in.c == 2 || in.c == 3) ? Status() : FailAt("bad slice span");
      case Op::GETSLICE:
      case Op::SETSLICE: return (in.c == 3 || in.c == 4) ? Status() : FailAt("bad slice span");
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

  // ---- Range loops closed by FORLOOP_INC ---------------------------------------------------

  // FORLOOP_INC R[A], R[B], D at pc `end` closes the loop of pcs [D, end]. The
  // interpreter computes R[A] + 1 unchecked, and the machine code hoists the
  // bounds checks of buf[R[A]] and buf[base + R[A]] out of the loop into a guard
  // at its head (checking R[A] at entry and R[B]), counts its trip in chunks of
  // R[B] - R[A], and takes 0 <= k <= R[A] < R[B] for granted in a loop that
  // starts at a constant k (asmjit-backend/codegen.h, FindCountedLoops). All
  // of that needs R[A] < R[B] on every pc of the loop, which holds when the loop
  // has the shape the compiler gives `for i in range(..)`:
  //  * the instruction just before the head is the loop's entry test,
  //    JLE_I R[B], R[A] to a pc past the loop, so the body starts with R[A] < R[B];
  //  * nothing in the loop writes the limit R[B], and nothing but the closing
  //    FORLOOP_INC (which stops before R[B]) writes the counter R[A];
  //  * nothing outside the loop jumps into it or to its head, bypassing the test
  //    (this also makes such loops nest properly, as the machine code's per-head
  //    tables assume).
  // A loop with another limit than its test's would otherwise run its body with
  // the counter past the guard's range: out-of-bounds stores in machine code.
  Status CheckRangeLoops() {
    const int n = static_cast<int>(fn_.code.size());
    std::vector<std::vector<int>> written_at(fn_.num_registers());  // pcs, ascending
    std::vector<int> reads, writes;
    for (int pc = 0; pc < n; ++pc) {
      reads.clear();
      writes.clear();
      ReadsAndWrites(fn_.code[pc], &reads, &writes);
      for (int reg : writes) {
        if (written_at[reg].empty() || written_at[reg].back() != pc) written_at[reg].push_back(pc);
      }
    }
    // The first pc in [first, last] that writes `reg`, or -1.
    auto written_in = [&](int reg, int first, int last) {
      auto it = std::lower_bound(written_at[reg].begin(), written_at[reg].end(), first);
      return it != written_at[reg].end() && *it <= last ? *it : -1;
    };

    struct Loop {
      int head, end;
    };
    std::vector<Loop> loops;
    for (pc_ = 0; pc_ < n; ++pc_) {
      const Instr& close = fn_.code[pc_];
      if (close.op != Op::FORLOOP_INC) continue;
      const int head = close.d, end = pc_, counter = close.a, limit = close.b;
      const Instr* test = head >= 1 ? &fn_.code[head - 1] : nullptr;
      if (test == nullptr || test->op != Op::JLE_I || test->a != limit || test->b != counter || test->d <= end) {
        return FailAt(Cat("the loop at pc ", head, " is not entered through its test (JLE_I of its limit ", limit,
                          " and counter ", counter, " just before it, jumping past the loop)"));
      }
      if (int at = written_in(counter, head, end - 1); at >= 0) {
        return FailAt(Cat("the loop writes its counter, register ", counter, ", at pc ", at));
      }
      if (int at = written_in(limit, head, end); at >= 0) {
        return FailAt(Cat("the loop writes its limit, register ", limit, ", at pc ", at));
      }
      loops.push_back({head, end});
    }

    // The innermost loop around each pc, with the loops sorted by head (outer
    // ones first where heads are equal); a loop that starts inside another
    // must end inside it.
    std::sort(loops.begin(), loops.end(),
              [](const Loop& x, const Loop& y) { return x.head != y.head ? x.head < y.head : x.end > y.end; });
    std::vector<int> innermost(n, -1);
    std::vector<int> open;
    size_t next = 0;
    for (int pc = 0; pc < n; ++pc) {
      while (!open.empty() && loops[open.back()].end < pc) open.pop_back();
      for (; next < loops.size() && loops[next].head == pc; ++next) {
        if (!open.empty() && loops[next].end > loops[open.back()].end) {
          pc_ = loops[next].end;
          const Loop& outer = loops[open.back()];
          return FailAt(Cat("its loop (pcs ", loops[next].head, "..", loops[next].end, ") overlaps the loop at pcs ",
                            outer.head, "..", outer.end));
        }
        open.push_back(static_cast<int>(next));
      }
      innermost[pc] = open.empty() ? -1 : open.back();
    }
    // Properly nested, a jump stays out of every loop that does not contain it
    // when it stays out of the innermost loop around its target.
    for (pc_ = 0; pc_ < n; ++pc_) {
      const Instr& in = fn_.code[pc_];
      if (!HasFlag(in.op, kFlagJump)) continue;
      const int loop = innermost[in.d];
      if (loop < 0 || (pc_ >= loops[loop].head && pc_ <= loops[loop].end)) continue;
      return FailAt(Cat("jumps into the loop at pcs ", loops[loop].head, "..", loops[loop].end,
                        " from outside it, bypassing its entry test"));
    }
    return Status();
  }

  // ---- Parallel loops -------------------------------------------------------------------------

  // PRANGE A, B, C, D at pc p runs pcs [s, D - 1] as chunks on copies of the
  // frame (vm/prange.h), s being the first pc after its PRANGE_REDUCE data.
  // A chunk's frame holds its caller's object references without owning
  // them, and a chunk must end at the PRANGE_END at D - 1, so:
  //  * every instruction of [s, D - 1) is flagged JIT and names no object
  //    register (MOVE_O is flagged JIT: machine code moves references, which
  //    a chunk, running without the GIL, must not), is no return, a call
  //    among them returns no object, and every jump among them stays in
  //    [s, D - 1];
  //  * the counter A and the limit B, which each chunk sets, are neither
  //    constants (machine code may take those for immediates) nor the same;
  //  * PRANGE_REDUCE_* follows only a PRANGE or another, with an operation
  //    in range, and PRANGE_END closes a PRANGE and nothing else.
  Status CheckPrangeLoops() {
    const int n = static_cast<int>(fn_.code.size());
    std::vector<bool> closes(n, false);
    for (pc_ = 0; pc_ < n; ++pc_) {
      const Instr& in = fn_.code[pc_];
      if (IsPrangeReduce(in.op)) {
        if (pc_ == 0 || !(fn_.code[pc_ - 1].op == Op::PRANGE || IsPrangeReduce(fn_.code[pc_ - 1].op))) {
          return FailAt("reduction data that follows no PRANGE");
        }
        if (in.c >= kPrangeOpCount) return FailAt("reduction operation out of range");
      }
      if (in.op != Op::PRANGE) continue;
      const int end = in.d - 1;
      if (end <= pc_ || fn_.code[end].op != Op::PRANGE_END) return FailAt("its loop does not end in a PRANGE_END");
      if (fn_.IsConstantRegister(in.a) || fn_.IsConstantRegister(in.b) || in.a == in.b) {
        return FailAt("its counter and limit must be two registers that are not constants");
      }
      closes[end] = true;
      const int first = PrangeChunkStart(fn_.code, pc_, end);
      for (int pc = first; pc < end; ++pc) {
        const Instr& body = fn_.code[pc];
        const uint32_t flags = InfoOf(body.op).flags;
        std::string problem;
        if (!(flags & kFlagJit)) problem = "is not flagged JIT";
        else if (NamesObjectRegister(body.op)) problem = "names an object register";
        else if ((flags & kFlagEnd) && !(flags & kFlagJump)) problem = "returns";
        else if ((flags & kFlagJump) && (body.d < first || body.d > end)) problem = "jumps out of the loop";
        else if (body.op == Op::CALL_FN && KindOf(module_.functions[body.d]->result) == Kind::kObject) {
          problem = "returns an object";
        }
        if (!problem.empty()) {
          return FailAt(Cat("its parallel loop's instruction at pc ", pc, " (", InfoOf(body.op).name, ") ", problem));
        }
      }
    }
    for (pc_ = 0; pc_ < n; ++pc_) {
      if (fn_.code[pc_].op == Op::PRANGE_END && !closes[pc_]) return FailAt("closes no PRANGE");
    }
    return Status();
  }

  // ---- Definite assignment and iterators ------------------------------------------------------

  bool Tracked(int reg) const {
    return reg >= 0 && reg < fn_.num_registers() &&
           (fn_.registers[reg].kind == Kind::kObject || fn_.registers[reg].kind == Kind::kBuffer);
  }

  // What holds on entry to an instruction, on every path to it: the object and
  // buffer registers assigned, and the object registers that hold an iterator
  // made by GET_ITER (FOR_ITER calls PyIter_Next, which takes any other object
  // for an iterator and crashes: a list has no tp_iternext).
  struct State {
    RegisterSet assigned;
    RegisterSet iterators;
  };

  Status CheckDataflow() {
    const int n = static_cast<int>(fn_.code.size());
    State entry;
    for (int reg = 0; reg < fn_.end_of_constants(); ++reg) entry.assigned.set(reg);
    std::vector<State> in_states(n);
    std::vector<bool> reached(n, false);
    in_states[0] = entry;
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
      const State& before = in_states[pc];
      State out = before;
      for (int reg : writes) {
        if (Tracked(reg)) out.assigned.set(reg);
        out.iterators.reset(reg);
      }
      // CHECK_BOUND_O and _U exist to read a register that may be unassigned;
      // after one, the register is known to hold a value.
      if (in.op == Op::CHECK_BOUND_O || in.op == Op::CHECK_BOUND_U) out.assigned.set(in.a);
      if (in.op == Op::GET_ITER) out.iterators.set(in.a);
      if (in.op == Op::MOVE_O && before.iterators.test(in.b)) out.iterators.set(in.a);
      // FOR_ITER writes R[A] only when it falls through; exhausted, it jumps
      // with everything as it was.
      const State out_on_jump = in.op == Op::FOR_ITER ? before : out;
      auto flow = [&](int target, const State& state) {
        if (!reached[target]) {
          reached[target] = true;
          in_states[target] = state;
          work.push_back(target);
        } else {
          State merged{in_states[target].assigned & state.assigned, in_states[target].iterators & state.iterators};
          if (merged.assigned != in_states[target].assigned || merged.iterators != in_states[target].iterators) {
            in_states[target] = merged;
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
      const Instr& in = fn_.code[pc_];
      reads.clear();
      writes.clear();
      ReadsAndWrites(in, &reads, &writes);
      if (in.op == Op::CHECK_BOUND_O || in.op == Op::CHECK_BOUND_U) reads.clear();
      for (int reg : reads) {
        if (Tracked(reg) && !in_states[pc_].assigned.test(reg)) {
          return FailAt(Cat("reads register ", reg, " before it is assigned on every path"));
        }
      }
      if (in.op == Op::FOR_ITER && !in_states[pc_].iterators.test(in.b)) {
        return FailAt(Cat("reads register ", static_cast<int>(in.b),
                          ", which does not hold an iterator from GET_ITER on every path"));
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
