#include "compiler/lower.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "vm/math_table.h"

namespace ppy {
namespace {

// Virtual registers at or above this number are constants.
constexpr int kConstantBase = 1 << 20;

struct VInstr {
  Op op;
  int a = 0, b = 0, c = 0;
  int64_t d = 0;
  int line = 0;
};

struct Label {
  int target = -1;
  std::vector<int> uses;  // instructions whose D jumps here
};

struct Loop {
  Label* continue_label;
  Label* break_label;
};

class Lowering {
 public:
  Lowering(const ModuleInfo& module, const FunctionInfo& fn) : module_(module), fn_(fn) {}
  ~Lowering() {
    for (PyObject* object : objects_) Py_DECREF(object);
  }

  absl::StatusOr<std::unique_ptr<FunctionCode>> Run();

 private:
  // ---- Registers ----
  int NewRegister(RegisterType type) {
    registers_.push_back(type);
    return static_cast<int>(registers_.size()) - 1;
  }
  int Temp(Kind kind, ElemType elem = ElemType::kNone, int ndim = 1);
  int TempFor(Type type) {
    if (type.is_complex()) return ComplexTemp();
    return Temp(type.kind_of_register(), type.is_buffer() ? type.elem : ElemType::kNone, type.ndim);
  }
  // A complex value is two consecutive float registers, its real part then its
  // imaginary part, named by the first (the rC/wC operands). Temporaries come
  // in pairs from Span; a local's pair is its own, and only a local's pair is
  // ever a complex result's target (ComplexDestination): a freed pair may be
  // reused as two unrelated float temporaries.
  int ComplexTemp() { return Span({{Kind::kFloat}, {Kind::kFloat}}); }
  int ComplexDestination(int target) const {
    return target >= 0 && target < kConstantBase && complex_locals_.count(target) ? target : -1;
  }
  int ComplexResult(int target) {
    int dest = ComplexDestination(target);
    return dest >= 0 ? dest : ComplexTemp();
  }
  // Where a value of `type` goes (Destination, or a complex pair).
  int DestinationFor(int target, Type type) {
    return type.is_complex() ? ComplexResult(target) : Destination(target, type.kind_of_register());
  }
  int CoerceComplex(int reg, Type from, Type to, int target);
  int ComplexConstant(double real, double imag, int target);
  int Span(const std::vector<RegisterType>& types);
  int ObjectSpan(int count) { return Span(std::vector<RegisterType>(count, {Kind::kObject, ElemType::kNone})); }
  // The kind of a virtual register: a constant's, or the register's own.
  RegisterType TypeOf(int reg) const {
    return reg >= kConstantBase ? RegisterType{constants_[reg - kConstantBase].kind, ElemType::kNone} : registers_[reg];
  }
  bool IsTemp(int reg) const { return reg < kConstantBase && reg >= first_temp_ && !is_local_[reg]; }

  int ConstInt(int64_t value);
  int ConstFloat(double value);
  int ConstObject(PyObject* object);  // borrows `object`
  int ConstNone() { return ConstObject(Py_None); }
  int ObjectIndex(PyObject* object);  // an object constant for K operands
  int NameIndex(const std::string& name);
  void BorrowInto(int slot, int object);

  // ---- Instructions ----
  int Emit(Op op, int a = 0, int b = 0, int c = 0, int64_t d = 0) {
    code_.push_back({op, a, b, c, d, line_});
    return static_cast<int>(code_.size()) - 1;
  }
  // Emits a jump to `label`, whose pc Finish fills in once it is bound.
  void EmitJump(Op op, int a, int b, int c, Label* label) {
    int at = Emit(op, a, b, c, 0);
    label->uses.push_back(at);
  }
  void Bind(Label* label) { label->target = static_cast<int>(code_.size()); }
  // Whether the next instruction is unreachable by falling through: the last
  // one never falls through, and no label is bound here (a jump may land on
  // the position: `if a: (if b: continue)` ends in a JMP, but the inner
  // if's false branch arrives right after it).
  bool LastIsEnd() const {
    if (code_.empty() || !HasFlag(code_.back().op, kFlagEnd)) return false;
    const int here = static_cast<int>(code_.size());
    return std::none_of(labels_.begin(), labels_.end(), [here](const auto& label) { return label->target == here; });
  }

  // ---- Values ----
  int ValueOf(const Expr& expr, int target = -1);
  void ValueInto(const Expr& expr, int dest, Type dest_type);
  int Coerce(int reg, Type from, Type to, int target = -1);
  int ElementValue(int value, Type value_type, bool is_float);
  int ObjectValue(const Expr& expr, int target = -1) { return Coerce(ValueOf(expr), expr.type, Type::Object(), target); }
  // Where an expression's value goes: the caller's `target` when it has the
  // right kind (so `x = a + b` computes straight into x), else a temporary.
  int Destination(int target, Kind kind, ElemType elem = ElemType::kNone) {
    if (target >= 0 && TypeOf(target).kind == kind && target < kConstantBase) return target;
    return Temp(kind, elem);
  }
  int LocalRegister(int slot) const { return local_registers_[slot]; }
  void SetBound(int slot);

  int EmitName(const Expr& expr, int target);
  int EmitAttribute(const Expr& expr, int target);
  int EmitSubscript(const Expr& expr, int target);
  int EmitSlice(const Expr& expr, int target);
  void SlicePartsInto(const Expr& slice, int first);
  int SliceSpan(const Expr& base, const Expr& slice, int* count);
  int EmitCall(const Expr& expr, int target);
  int EmitTypedCall(const Expr& expr, int target);
  int EmitMathCall(const Expr& expr, int target);
  int EmitBuiltinCall(const Expr& expr, int target);
  int EmitDynamicCall(const Expr& expr, int target);
  int EmitBinary(const Expr& expr, int target);
  int EmitArithmetic(BinOp op, int left, Type left_type, int right, Type right_type, Type result, int target,
                     bool in_place);
  int EmitUnary(const Expr& expr, int target);
  int EmitComplexEquality(CmpOp op, int left, Type left_type, int right, Type right_type, int target);
  int EmitBoolOp(const Expr& expr, int target);
  int EmitCompare(const Expr& expr, int target);
  int EmitComparePair(CmpOp op, int left, Type left_type, int right, Type right_type, int target);
  int EmitIfExp(const Expr& expr, int target);
  int EmitDisplay(const Expr& expr, int target);
  int EmitJoinedStr(const Expr& expr, int target);
  int EmitFormatted(const Expr& expr, int target);
  int Truth(int reg, Type type);

  // Buffer element access, with the fused forms for buf[base + i].
  int LoadElement(int buffer, Type buffer_type, const Expr& index, int target);
  int OffsetValue(const Expr& index, int buffer);
  int PositionValue(const Expr& index, int buffer, Type buffer_type);
  int LoadElementAt(int buffer, Type buffer_type, int index, int target);
  void StoreElement(int buffer, Type buffer_type, const Expr& index, int value, Type value_type);
  void StoreElementAt(int buffer, Type buffer_type, int index, int value, Type value_type);
  bool FusedIndex(const Expr& index, int* base, int* offset);
  int IndexValue(const Expr& index, int buffer);

  // ---- Conditions ----
  void Branch(const Expr& expr, bool when, Label* label);
  void CompareBranch(CmpOp op, int left, Type left_type, int right, Type right_type, bool when, Label* label);

  // ---- Statements ----
  void Block(const std::vector<StmtPtr>& body);
  void Statement(const Stmt& stmt);
  void Assign(const Stmt& stmt);
  void StoreTarget(const Expr& target, int value, Type value_type);
  void AugAssign(const Stmt& stmt);
  void While(const Stmt& stmt);
  void For(const Stmt& stmt);
  void ForRange(const Stmt& stmt);
  void ForPrange(const Stmt& stmt);
  struct CountedRange {
    int counter, stop, step;
    bool step_is_one, direct;
  };
  void CountedLoop(const Stmt& stmt, const CountedRange& range, Label* body, Label* next, Label* exit, Label* done);
  void ForBuffer(const Stmt& stmt, int buffer, Type buffer_type);
  void ForObject(const Stmt& stmt, int iterable);
  void ForCounted(const Stmt& stmt);
  void ForReversed(const Stmt& stmt);
  int StableInt(const Expr& expr);
  void RangeArguments(const Expr& range, int* start, int* stop, int64_t* step);
  void Return(const Stmt& stmt);
  void Import(const Stmt& stmt);

  // ---- Analyses ----
  void FindLoopPrivateLocals();
  bool AssignedIn(const std::vector<StmtPtr>& body, const std::string& name) const;

  absl::StatusOr<std::unique_ptr<FunctionCode>> Finish();

  const ModuleInfo& module_;
  const FunctionInfo& fn_;
  std::vector<RegisterType> registers_;
  std::vector<bool> is_local_;
  std::vector<ConstantValue> constants_;
  std::vector<PyObject*> objects_;  // owned
  std::map<int64_t, int> int_constants_;
  std::map<uint64_t, int> float_constants_;
  std::map<PyObject*, int> object_constants_;
  std::map<std::string, int> names_;
  std::vector<VInstr> code_;
  std::vector<int> local_registers_;
  std::set<int> complex_locals_;  // the first registers of complex locals' pairs
  std::vector<int> bound_flags_;  // per local: its bound flag register, or -1
  std::vector<int> typed_global_registers_;
  std::set<std::string> loop_private_;
  std::vector<std::set<int>> free_;  // per register type code: free temporaries
  std::vector<int> live_temps_;
  std::vector<Loop> loops_;
  std::vector<std::unique_ptr<Label>> labels_;
  int first_temp_ = 0;
  int line_ = 0;

  Label* NewLabel() {
    labels_.push_back(std::make_unique<Label>());
    return labels_.back().get();
  }

  // Frees the temporaries a statement allocated when it ends.
  class TempScope {
   public:
    explicit TempScope(Lowering* lowering) : lowering_(lowering), mark_(lowering->live_temps_.size()) {}
    ~TempScope() {
      auto& live = lowering_->live_temps_;
      for (size_t i = mark_; i < live.size(); ++i) {
        const RegisterType& type = lowering_->registers_[live[i]];
        lowering_->free_[TypeCode(type)].insert(live[i]);
      }
      live.resize(mark_);
    }

   private:
    Lowering* lowering_;
    size_t mark_;
  };

  static int TypeCode(const RegisterType& type) {
    return (static_cast<int>(type.kind) * kElemTypeCount + static_cast<int>(type.elem)) * (kMaxDims + 1) + type.ndim;
  }
};

// ---- Registers and constants -----------------------------------------------------------------

// A temporary register of `kind` (and element type and dimensions, for a
// buffer), live until the enclosing TempScope ends. Freed temporaries of the
// same type are reused first, so that a long function does not run out of its
// 256 registers.
int Lowering::Temp(Kind kind, ElemType elem, int ndim) {
  RegisterType type{kind, kind == Kind::kBuffer ? elem : ElemType::kNone};
  type.ndim = static_cast<uint8_t>(kind == Kind::kBuffer ? ndim : 1);
  std::set<int>& free = free_[TypeCode(type)];
  int reg;
  if (!free.empty()) {
    reg = *free.begin();
    free.erase(free.begin());
  } else {
    reg = NewRegister(type);
    is_local_.push_back(false);
  }
  live_temps_.push_back(reg);
  return reg;
}

// A run of consecutive temporaries of exactly `types`, as the span operands
// of calls and displays (sO, rX) need; returns the first register.
int Lowering::Span(const std::vector<RegisterType>& types) {
  // Reuse a run of free temporaries of exactly these types, else take fresh ones.
  int count = static_cast<int>(types.size());
  for (int start = first_temp_; count > 0 && start + count <= static_cast<int>(registers_.size()); ++start) {
    bool fits = true;
    for (int i = 0; i < count && fits; ++i) {
      int reg = start + i;
      fits = !is_local_[reg] && registers_[reg] == types[i] && free_[TypeCode(types[i])].count(reg);
    }
    if (fits) {
      for (int i = 0; i < count; ++i) {
        free_[TypeCode(types[i])].erase(start + i);
        live_temps_.push_back(start + i);
      }
      return start;
    }
  }
  int first = static_cast<int>(registers_.size());
  for (const RegisterType& type : types) {
    live_temps_.push_back(NewRegister(type));
    is_local_.push_back(false);
  }
  return first;
}

// The constant register holding the int `value`, one per distinct value.
// Constant registers are numbered from kConstantBase until Finish lays them
// out after the parameters; the interpreter copies them in at every call.
int Lowering::ConstInt(int64_t value) {
  auto it = int_constants_.find(value);
  if (it != int_constants_.end()) return it->second;
  constants_.push_back({Kind::kInt, value});
  int reg = kConstantBase + static_cast<int>(constants_.size()) - 1;
  int_constants_[value] = reg;
  return reg;
}

// The constant register holding the float `value`. Keyed by bit pattern, so
// that 0.0 and -0.0 (equal as doubles) and every NaN stay distinct.
int Lowering::ConstFloat(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  auto it = float_constants_.find(bits);
  if (it != float_constants_.end()) return it->second;
  constants_.push_back({Kind::kFloat, static_cast<int64_t>(bits)});
  int reg = kConstantBase + static_cast<int>(constants_.size()) - 1;
  float_constants_[bits] = reg;
  return reg;
}

// The index of `object` among the function's object constants (the K
// operands), taking a reference the first time.
int Lowering::ObjectIndex(PyObject* object) {
  for (size_t i = 0; i < objects_.size(); ++i) {
    // Identical constants share a slot; equal ones of different types (1 and
    // 1.0 and True) must not.
    if (objects_[i] == object) return static_cast<int>(i);
  }
  objects_.push_back(Py_NewRef(object));
  return static_cast<int>(objects_.size()) - 1;
}

// The constant register holding `object` (an int beyond 64 bits, a str, None, ...).
int Lowering::ConstObject(PyObject* object) {
  auto it = object_constants_.find(object);
  if (it != object_constants_.end()) return it->second;
  constants_.push_back({Kind::kObject, ObjectIndex(object)});
  int reg = kConstantBase + static_cast<int>(constants_.size()) - 1;
  object_constants_[object] = reg;
  return reg;
}

// The object constant holding `name` as an interned str: the K operand of
// LOAD_GLOBAL, LOAD_ATTR, CHECK_BOUND_* and the other instructions that name something.
int Lowering::NameIndex(const std::string& name) {
  auto it = names_.find(name);
  if (it != names_.end()) return it->second;
  PyObject* text = PyUnicode_InternFromString(name.c_str());
  int index = ObjectIndex(text);
  Py_DECREF(text);
  names_[name] = index;
  return index;
}

// Emits the store of 1 into local `slot`'s bound flag, for a local the
// checker found may be read before it is assigned (the flag is what
// CHECK_BOUND_I tests to raise UnboundLocalError as Python does).
void Lowering::SetBound(int slot) {
  if (bound_flags_[slot] >= 0) Emit(Op::MOVE_I, bound_flags_[slot], ConstInt(1));
}

// ---- Values -----------------------------------------------------------------------------------------

// Converts the value in `reg` from type `from` to `to`, into `target` if given:
// nothing or a MOVE for the same register kind, BOX_* into an object, I2F or
// UNBOX_F into a float, UNBOX_I or UNBOX_B from an object into an int. The
// checker admits only these conversions (an int where a float is expected is
// promoted as Python's arithmetic promotes it; an UNBOX_* raises at run time
// when the object does not convert).
int Lowering::Coerce(int reg, Type from, Type to, int target) {
  if (from.is_complex() || to.is_complex()) return CoerceComplex(reg, from, to, target);
  Kind from_kind = from.kind_of_register();
  Kind to_kind = to.kind_of_register();
  if (from_kind == to_kind && (from_kind != Kind::kBuffer || (from.elem == to.elem && from.ndim == to.ndim))) {
    if (target >= 0 && target != reg) {
      static const Op kMoves[] = {Op::MOVE_I, Op::MOVE_F, Op::MOVE_O, Op::MOVE_U};
      Emit(kMoves[static_cast<int>(to_kind)], target, reg);
      return target;
    }
    return reg;
  }
  if (to_kind == Kind::kObject && reg >= kConstantBase && (from.is_numeric())) {
    // A number constant meeting object code is an object constant, boxed once
    // here rather than by every BOX_* that would run (CPython's constants are
    // objects too; a number's identity is not part of its value).
    const ConstantValue& constant = constants_[reg - kConstantBase];
    double value;
    std::memcpy(&value, &constant.bits, sizeof value);
    PyObject* boxed = from.is_bool()    ? Py_NewRef(constant.bits ? Py_True : Py_False)
                      : from.is_float() ? PyFloat_FromDouble(value)
                                        : PyLong_FromLongLong(constant.bits);
    if (boxed != nullptr) {
      int object = ConstObject(boxed);
      Py_DECREF(boxed);
      if (target < 0 || target == object) return object;
      Emit(Op::MOVE_O, target, object);
      return target;
    }
    PyErr_Clear();  // (out of memory: box at run time instead)
  }
  int dest = Destination(target, to_kind);
  if (to_kind == Kind::kObject) {
    switch (from.kind) {
      case TypeKind::kInt: Emit(Op::BOX_I, dest, reg); break;
      case TypeKind::kBool: Emit(Op::BOX_B, dest, reg); break;
      case TypeKind::kFloat: Emit(Op::BOX_F, dest, reg); break;
      case TypeKind::kBuffer: Emit(Op::BOX_U, dest, reg); break;
      default: break;
    }
    return dest;
  }
  if (to_kind == Kind::kFloat) {
    Emit(from_kind == Kind::kInt ? Op::I2F : Op::UNBOX_F, dest, reg);
    return dest;
  }
  if (to_kind == Kind::kInt && from_kind == Kind::kObject) {
    Emit(to.is_bool() ? Op::UNBOX_B : Op::UNBOX_I, dest, reg);
    return dest;
  }
  // The checker admits no other conversion.
  return reg;
}

// Coerce for complex values: two MOVE_Fs between pairs, BOX_C into an object,
// UNBOX_C from one (TypeError unless it is a complex), and an int or float
// made a complex with a zero imaginary part (I2F for an int), as CPython's
// complex operators convert a real operand. A conversion writes a fresh pair
// first, so that `target` may be one of `reg`'s own registers.
int Lowering::CoerceComplex(int reg, Type from, Type to, int target) {
  if (from.is_complex() && to.is_complex()) {
    if (target < 0 || target == reg) return reg;
    Emit(Op::MOVE_F, target, reg);
    Emit(Op::MOVE_F, target + 1, reg + 1);
    return target;
  }
  if (from.is_complex()) {  // to an object: the checker admits no other
    int dest = Destination(target, Kind::kObject);
    Emit(Op::BOX_C, dest, reg);
    return dest;
  }
  int pair = ComplexTemp();
  if (from.is_object()) {
    Emit(Op::UNBOX_C, pair, reg);
  } else {
    Emit(from.is_float() ? Op::MOVE_F : Op::I2F, pair, reg);
    Emit(Op::MOVE_F, pair + 1, ConstFloat(0.0));
  }
  return CoerceComplex(pair, to, to, target);
}

// A complex constant (1j, complex() of nothing) in a pair: the target's, if
// it is a local's, else a temporary.
int Lowering::ComplexConstant(double real, double imag, int target) {
  int dest = ComplexResult(target);
  Emit(Op::MOVE_F, dest, ConstFloat(real));
  Emit(Op::MOVE_F, dest + 1, ConstFloat(imag));
  return dest;
}

// Evaluates `expr` into the register `dest` of type `dest_type`, computing
// directly into it when the register kinds agree (no extra MOVE).
void Lowering::ValueInto(const Expr& expr, int dest, Type dest_type) {
  bool same_kind = expr.type.kind_of_register() == dest_type.kind_of_register();
  int reg = ValueOf(expr, same_kind ? dest : -1);
  Coerce(reg, expr.type, dest_type, dest);
}

// Emits the code that evaluates `expr` and returns the register holding its
// value: a constant register for literals, the local's own register for a
// local, else `target` when it has the right kind, or a new temporary. Every
// instruction emitted carries the expression's line, for tracebacks.
int Lowering::ValueOf(const Expr& expr, int target) {
  int saved_line = line_;
  if (expr.loc.line > 0) line_ = expr.loc.line;
  int reg = -1;
  switch (expr.kind) {
    case ExprKind::kInt: reg = ConstInt(expr.int_value); break;
    case ExprKind::kBool: reg = ConstInt(expr.int_value); break;
    case ExprKind::kFloat: reg = ConstFloat(expr.float_value); break;
    case ExprKind::kNone: reg = ConstNone(); break;
    case ExprKind::kBigInt:
    case ExprKind::kConstant:
      if (expr.type.is_complex()) {
        Py_complex value = PyComplex_AsCComplex(expr.object);
        reg = ComplexConstant(value.real, value.imag, target);
        break;
      }
      reg = ConstObject(expr.object);
      break;
    case ExprKind::kName: reg = EmitName(expr, target); break;
    case ExprKind::kAttribute: reg = EmitAttribute(expr, target); break;
    case ExprKind::kSubscript: reg = EmitSubscript(expr, target); break;
    case ExprKind::kSlice: reg = EmitSlice(expr, target); break;
    case ExprKind::kCall: reg = EmitCall(expr, target); break;
    case ExprKind::kBinary: reg = EmitBinary(expr, target); break;
    case ExprKind::kUnary: reg = EmitUnary(expr, target); break;
    case ExprKind::kBoolOp: reg = EmitBoolOp(expr, target); break;
    case ExprKind::kCompare: reg = EmitCompare(expr, target); break;
    case ExprKind::kIfExp: reg = EmitIfExp(expr, target); break;
    case ExprKind::kTuple:
    case ExprKind::kList:
    case ExprKind::kSet:
    case ExprKind::kDict: reg = EmitDisplay(expr, target); break;
    case ExprKind::kJoinedStr: reg = EmitJoinedStr(expr, target); break;
    case ExprKind::kFormatted: reg = EmitFormatted(expr, target); break;
    case ExprKind::kUnsupported: reg = ConstNone(); break;
  }
  line_ = saved_line;
  return reg;
}

// A name, as the checker resolved it: a local's register (after a
// CHECK_BOUND_* when it may be unbound, so that the read raises
// UnboundLocalError as in Python), a typed global's register (loaded once at
// entry), a folded math constant, or LOAD_GLOBAL, which looks in the module's
// globals and then the builtins at every read, as Python does.
int Lowering::EmitName(const Expr& expr, int target) {
  switch (expr.resolution) {
    case Resolution::kLocal: {
      int reg = LocalRegister(expr.index);
      if (expr.check_bound) {
        int name = NameIndex(expr.text);
        if (bound_flags_[expr.index] >= 0) Emit(Op::CHECK_BOUND_I, bound_flags_[expr.index], 0, 0, name);
        else if (fn_.locals[expr.index].type.is_buffer()) Emit(Op::CHECK_BOUND_U, reg, 0, 0, name);
        else Emit(Op::CHECK_BOUND_O, reg, 0, 0, name);
      }
      return reg;
    }
    case Resolution::kTypedGlobal: return typed_global_registers_[expr.index];
    case Resolution::kMathConstant: return ConstFloat(expr.float_value);
    default: {
      int dest = Destination(target, Kind::kObject);
      Emit(Op::LOAD_GLOBAL, dest, 0, 0, NameIndex(expr.text));
      return dest;
    }
  }
}

// `base.name`: a folded math constant (math.pi), or LOAD_ATTR on the object.
int Lowering::EmitAttribute(const Expr& expr, int target) {
  if (expr.resolution == Resolution::kMathConstant) return ConstFloat(expr.float_value);
  // z.real and z.imag are the registers of z's pair.
  if (expr.resolution == Resolution::kComplexPart) return ValueOf(*expr.children[0]) + expr.index;
  int base = ObjectValue(*expr.children[0]);
  int dest = Destination(target, Kind::kObject);
  Emit(Op::LOAD_ATTR, dest, base, 0, NameIndex(expr.text));
  return dest;
}

// `lo:hi` or `lo:hi:step` inside a subscript: BUILD_SLICE over two or three
// object registers, None for an omitted part, as Python builds slice objects.
int Lowering::EmitSlice(const Expr& expr, int target) {
  int count = expr.children[2] ? 3 : 2;
  int span = ObjectSpan(count);
  SlicePartsInto(expr, span);
  int dest = Destination(target, Kind::kObject);
  Emit(Op::BUILD_SLICE, dest, span, count);
  return dest;
}

// The parts of the slice `slice`, two or three, into the object registers
// from `first` on, None for an omitted one (EmitSlice's and SliceSpan's).
void Lowering::SlicePartsInto(const Expr& slice, int first) {
  for (int i = 0; i < (slice.children[2] ? 3 : 2); ++i) {
    if (slice.children[i]) ValueInto(*slice.children[i], first + i, Type::Object());
    else Emit(Op::MOVE_O, first + i, ConstNone());
  }
}

// `base[lo:hi]` or `base[lo:hi:step]`, read or assigned: the base, then the
// slice's parts, evaluated in Python's order into one span of object
// registers (None for an omitted part) that GETSLICE or SETSLICE takes whole,
// so that no slice object is made where the base is an exact list or tuple.
// Returns the span's first register and sets *count, 3 or 4.
int Lowering::SliceSpan(const Expr& base, const Expr& slice, int* count) {
  *count = slice.children[2] ? 4 : 3;
  int span = ObjectSpan(*count);
  ValueInto(base, span, Type::Object());
  SlicePartsInto(slice, span + 1);
  return span;
}

// `base[index]`: a typed element load for a Buffer indexed by a number (see
// LoadElement), GETSLICE for a slice of anything else (SliceSpan), else
// GETITEM on objects (a slice of a buffer included, which the exporter
// itself answers).
int Lowering::EmitSubscript(const Expr& expr, int target) {
  const Expr& base = *expr.children[0];
  const Expr& index = *expr.children[1];
  if (expr.resolution == Resolution::kBufferShape) {  // a.shape[k]: SHAPE_U
    int buffer = ValueOf(*base.children[0]);
    int dest = Destination(target, Kind::kInt);
    Emit(Op::SHAPE_U, dest, buffer, expr.index);
    return dest;
  }
  // An element (the checker typed it a number); a slice or a row of an N-d
  // buffer is an object the exporter makes.
  if (base.type.is_buffer() && !expr.type.is_object()) {
    int buffer = ValueOf(base);
    return LoadElement(buffer, base.type, index, target);
  }
  if (index.kind == ExprKind::kSlice && !base.type.is_buffer()) {
    int count;
    int span = SliceSpan(base, index, &count);
    int dest = Destination(target, Kind::kObject);
    Emit(Op::GETSLICE, dest, span, count);
    return dest;
  }
  int object = ObjectValue(base);
  if (index.type.is_int()) {  // (not a bool: a key of True is not 1 to every __getitem__)
    int key = ValueOf(index);
    int dest = Destination(target, Kind::kObject);
    Emit(Op::GETITEM_I, dest, object, key);
    return dest;
  }
  int key = ObjectValue(index);
  int dest = Destination(target, Kind::kObject);
  Emit(Op::GETITEM, dest, object, key);
  return dest;
}

// Whether `index` is `base + offset` over two integral values, the shape of
// row-major access buf[row * n + j]; if so, evaluates both operands for the
// LOADX/STOREX forms, which add and check the index in one instruction (the
// sum's overflow still raises as `base + offset` would).
bool Lowering::FusedIndex(const Expr& index, int* base, int* offset) {
  if (index.kind != ExprKind::kBinary || index.bin_op != BinOp::kAdd || !index.type.is_int()) return false;
  const Expr& left = *index.children[0];
  const Expr& right = *index.children[1];
  if (!left.type.is_integral() || !right.type.is_integral()) return false;
  int saved = line_;
  line_ = index.loc.line;
  *base = ValueOf(left);
  *offset = ValueOf(right);
  line_ = saved;
  return true;
}

// The index of an element of the buffer in register `buffer`, as an int
// register. An object index is unboxed by UNBOX_INDEX, which refuses a bool
// where the exporter would read it as a mask (numpy, torch).
int Lowering::IndexValue(const Expr& index, int buffer) {
  int reg = ValueOf(index);
  if (!index.type.is_object()) return Coerce(reg, index.type, Type::Int());
  int dest = Temp(Kind::kInt);
  Emit(Op::UNBOX_INDEX, dest, reg, buffer);
  return dest;
}

// The element offset of a[i, j, ..] in the N-d buffer in register `buffer`:
// every index is evaluated first, left to right (Python builds the index tuple
// before it indexes), then INDEX_U checks each along its axis, in axis order
// as numpy does, and scales it by the axis's stride; ADD_I sums them. The
// offset is what LOADN_*/STOREN_* take.
int Lowering::OffsetValue(const Expr& index, int buffer) {
  std::vector<int> values;
  for (const ExprPtr& one : index.children) values.push_back(IndexValue(*one, buffer));
  int offset = Temp(Kind::kInt);
  Emit(Op::INDEX_U, offset, buffer, 0, values[0]);
  for (size_t axis = 1; axis < values.size(); ++axis) {
    int term = Temp(Kind::kInt);
    Emit(Op::INDEX_U, term, buffer, static_cast<int>(axis), values[axis]);
    Emit(Op::ADD_I, offset, offset, term);
  }
  return offset;
}

// The position LoadElementAt and StoreElementAt take: an index into a 1-D
// buffer, an element offset into an N-d one.
int Lowering::PositionValue(const Expr& index, int buffer, Type buffer_type) {
  return buffer_type.ndim > 1 ? OffsetValue(index, buffer) : IndexValue(index, buffer);
}

// `buffer[index]` read: LOADN_* at the INDEX_U sum for an N-d buffer; for a
// 1-D one LOADX_F64/LOADX_I64 for a fused `base + i` index into a float64 or
// int64 buffer, else LoadElementAt.
int Lowering::LoadElement(int buffer, Type buffer_type, const Expr& index, int target) {
  ElemType elem = buffer_type.elem;
  if (buffer_type.ndim > 1) return LoadElementAt(buffer, buffer_type, OffsetValue(index, buffer), target);
  int base, offset;
  if ((elem == ElemType::kF64 || elem == ElemType::kI64) && FusedIndex(index, &base, &offset)) {
    bool is_float = elem == ElemType::kF64;
    int dest = Destination(target, is_float ? Kind::kFloat : Kind::kInt);
    Emit(is_float ? Op::LOADX_F64 : Op::LOADX_I64, dest, buffer, base, offset);
    return dest;
  }
  return LoadElementAt(buffer, buffer_type, IndexValue(index, buffer), target);
}

// `buffer[index]` read with the index in a register: LOAD_F64 or LOAD_I64 for
// the common element types, LOAD_F or LOAD_I (which convert the element to a
// double or an int64) for the others.
int Lowering::LoadElementAt(int buffer, Type buffer_type, int index, int target) {
  ElemType elem = buffer_type.elem;
  bool is_float = InfoOf(elem).is_float;
  int dest = Destination(target, is_float ? Kind::kFloat : Kind::kInt);
  if (buffer_type.ndim > 1) {
    Emit(is_float ? Op::LOADN_F : Op::LOADN_I, dest, buffer, index);
    return dest;
  }
  Op op = elem == ElemType::kF64 ? Op::LOAD_F64
          : elem == ElemType::kI64 ? Op::LOAD_I64
          : is_float ? Op::LOAD_F
                     : Op::LOAD_I;
  Emit(op, dest, buffer, index);
  return dest;
}

// `buffer[index] = value`: STOREX_F64/STOREX_I64 for a fused index, else
// StoreElementAt. The value is converted to the element's register kind first
// (an int stored into a float buffer is promoted, as Python's float(x)).
void Lowering::StoreElement(int buffer, Type buffer_type, const Expr& index, int value, Type value_type) {
  ElemType elem = buffer_type.elem;
  if (buffer_type.ndim > 1) {
    StoreElementAt(buffer, buffer_type, OffsetValue(index, buffer), value, value_type);
    return;
  }
  int base, offset;
  if ((elem == ElemType::kF64 || elem == ElemType::kI64) && FusedIndex(index, &base, &offset)) {
    bool is_float = elem == ElemType::kF64;
    int converted = ElementValue(value, value_type, is_float);
    Emit(is_float ? Op::STOREX_F64 : Op::STOREX_I64, buffer, base, offset, converted);
    return;
  }
  StoreElementAt(buffer, buffer_type, IndexValue(index, buffer), value, value_type);
}

// `buffer[index] = value` with the index in a register: STORE_F64, STORE_I64,
// or STORE_F/STORE_I, which check that the value fits a narrower element and
// raise what the exporter raises if not.
void Lowering::StoreElementAt(int buffer, Type buffer_type, int index, int value, Type value_type) {
  ElemType elem = buffer_type.elem;
  bool is_float = InfoOf(elem).is_float;
  int converted = ElementValue(value, value_type, is_float);
  if (buffer_type.ndim > 1) {
    Emit(is_float ? Op::STOREN_F : Op::STOREN_I, buffer, index, converted);
    return;
  }
  Op op = elem == ElemType::kF64 ? Op::STORE_F64
          : elem == ElemType::kI64 ? Op::STORE_I64
          : is_float ? Op::STORE_F
                     : Op::STORE_I;
  Emit(op, buffer, index, converted);
}

// The value a store writes into a buffer, in the element's register kind. A
// dynamic value stored into a float buffer converts as array.array and
// numpy convert it (an int, a numpy scalar: UNBOX_FE), where a float local
// takes only a float (UNBOX_F); into an int buffer it is operator.index's,
// as array.array's.
int Lowering::ElementValue(int value, Type value_type, bool is_float) {
  if (is_float && value_type.is_object()) {
    int dest = Destination(-1, Kind::kFloat);
    Emit(Op::UNBOX_FE, dest, value);
    return dest;
  }
  return Coerce(value, value_type, is_float ? Type::Float() : Type::Int());
}

// A call, by what the checker resolved the callee to: a typed call of a
// compiled function of this module, a math function, a builtin with a typed
// form (len, abs, min, int, ...), or a dynamic call through the C API; a
// builtin called dynamically whose result type is known is unboxed after.
int Lowering::EmitCall(const Expr& expr, int target) {
  switch (expr.resolution) {
    case Resolution::kFunction: return EmitTypedCall(expr, target);
    case Resolution::kMath: return EmitMathCall(expr, target);
    case Resolution::kBuiltin:
      if (expr.index >= 0) return EmitBuiltinCall(expr, target);
      [[fallthrough]];
    case Resolution::kUnboxedCall: {
      int result = EmitDynamicCall(expr, -1);
      if (expr.type.is_object()) return Coerce(result, Type::Object(), expr.type, target);
      return Coerce(result, Type::Object(), expr.type, DestinationFor(target, expr.type));
    }
    case Resolution::kConjugate: {
      // (a, -b), part by part, so that the target may be z itself.
      int z = ValueOf(*expr.children[0]->children[0]);
      int dest = ComplexResult(target);
      if (dest != z) Emit(Op::MOVE_F, dest, z);
      Emit(Op::NEG_F, dest + 1, z + 1);
      return dest;
    }
    default: return EmitDynamicCall(expr, target);
  }
}

// A call of a compiled function of this module: CALL_FN over a span of
// registers of the callee's parameter kinds. Arguments are evaluated in source
// order (positional, then keywords, as Python evaluates them), then placed by
// the binding the checker computed; an omitted parameter gets its default,
// which the checker required to be a literal. The result register has the
// callee's result kind.
int Lowering::EmitTypedCall(const Expr& expr, int target) {
  const FunctionInfo& callee = module_.functions[expr.index];
  std::vector<RegisterType> types;
  for (const Type& type : callee.param_types) {
    types.push_back(type.register_type());
  }
  // Arguments are evaluated in source order, then placed.
  std::vector<int> order;
  for (size_t i = 1; i < expr.children.size(); ++i) order.push_back(static_cast<int>(i));
  for (size_t k = 0; k < expr.keywords.size(); ++k) order.push_back(-static_cast<int>(k) - 1);
  std::map<int, int> value_of;  // binding value -> register
  for (int source : order) {
    const Expr& arg = source > 0 ? *expr.children[source] : *expr.keywords[-source - 1].value;
    value_of[source] = ValueOf(arg);
  }
  int span = Span(types);
  for (size_t p = 0; p < callee.param_types.size(); ++p) {
    int source = expr.binding[p];
    Type param_type = callee.param_types[p];
    // A complex argument crosses the call boxed (see ValueType::kComplex).
    Type boundary = param_type.is_complex() ? Type::Object() : param_type;
    if (source == 0) {
      const Expr& literal = *callee.def->params[p].default_value;
      ValueInto(literal, span + p, boundary);
      continue;
    }
    const Expr& arg = source > 0 ? *expr.children[source] : *expr.keywords[-source - 1].value;
    Coerce(value_of[source], arg.type, boundary, span + p);
  }
  Type result = callee.result.is_known() ? callee.result : Type::Object();
  if (result.is_complex()) {
    int boxed = Temp(Kind::kObject);
    Emit(Op::CALL_FN, boxed, span, static_cast<int>(types.size()), callee.code_index);
    return Coerce(boxed, Type::Object(), result, ComplexResult(target));
  }
  int dest = Destination(target, result.kind_of_register());
  Emit(Op::CALL_FN, dest, span, static_cast<int>(types.size()), callee.code_index);
  return dest;
}

// A call of a math function with a typed form: SQRT_F, or MATH_F, MATH_FF,
// MATH_FI, MATH_FB with the function's id in D. Arguments are converted to
// float first, as the math module converts them; floor, ceil and trunc of an
// int return the int itself, as in Python.
int Lowering::EmitMathCall(const Expr& expr, int target) {
  const MathInfo& info = kMathInfo[expr.index];
  std::vector<int> args;
  for (size_t i = 1; i < expr.children.size(); ++i) {
    const Expr& arg = *expr.children[i];
    int reg = ValueOf(arg);
    if (info.shape == MathShape::FI && arg.type.is_integral()) return Coerce(reg, arg.type, Type::Int(), target);
    args.push_back(Coerce(reg, arg.type, Type::Float()));
  }
  switch (info.shape) {
    case MathShape::F: {
      int dest = Destination(target, Kind::kFloat);
      if (static_cast<MathFn>(expr.index) == MathFn::SQRT) Emit(Op::SQRT_F, dest, args[0]);
      else Emit(Op::MATH_F, dest, args[0], 0, expr.index);
      return dest;
    }
    case MathShape::FF: {
      int dest = Destination(target, Kind::kFloat);
      Emit(Op::MATH_FF, dest, args[0], args[1], expr.index);
      return dest;
    }
    case MathShape::FI: {
      int dest = Destination(target, Kind::kInt);
      Emit(Op::MATH_FI, dest, args[0], 0, expr.index);
      return dest;
    }
    case MathShape::FB: {
      int dest = Destination(target, Kind::kInt);
      Emit(Op::MATH_FB, dest, args[0], 0, expr.index);
      return dest;
    }
  }
  return args[0];
}

// The truth value of `reg` as a bool register, by Python's rules: nonzero for
// an int or a float (TRUTH_I, TRUTH_F), the bool itself, and bool(x) through
// the C API for anything else (TRUTH_O, which may run __bool__ or __len__).
int Lowering::Truth(int reg, Type type) {
  switch (type.kind) {
    case TypeKind::kInt: {
      int dest = Temp(Kind::kInt);
      Emit(Op::TRUTH_I, dest, reg);
      return dest;
    }
    case TypeKind::kBool: return reg;
    case TypeKind::kFloat: {
      int dest = Temp(Kind::kInt);
      Emit(Op::TRUTH_F, dest, reg);
      return dest;
    }
    case TypeKind::kComplex: {  // either part nonzero
      int dest = Temp(Kind::kInt);
      int imag = Temp(Kind::kInt);
      Emit(Op::TRUTH_F, dest, reg);
      Emit(Op::TRUTH_F, imag, reg + 1);
      Emit(Op::OR_I, dest, dest, imag);
      return dest;
    }
    default: {
      int object = Coerce(reg, type, Type::Object());
      int dest = Temp(Kind::kInt);
      Emit(Op::TRUTH_O, dest, object);
      return dest;
    }
  }
}

// A builtin the checker typed: len of a buffer (LEN_U), int of a float (F2I,
// truncating and raising for inf and nan as int() does), float and bool
// conversions, abs (ABS_I raises OverflowError for the minimum int, where
// Python's would grow), and min/max of numbers folded left to right, so that
// ties keep the first argument as Python's min and max do.
int Lowering::EmitBuiltinCall(const Expr& expr, int target) {
  auto builtin = static_cast<Builtin>(expr.index);
  std::vector<int> args;
  for (size_t i = 1; i < expr.children.size(); ++i) args.push_back(ValueOf(*expr.children[i]));
  const Type arg_type = expr.children.size() > 1 ? expr.children[1]->type : Type::Unknown();
  switch (builtin) {
    case Builtin::kLEN: {
      int dest = Destination(target, Kind::kInt);
      Emit(Op::LEN_U, dest, args[0]);
      return dest;
    }
    case Builtin::kINT:
      if (arg_type.is_float()) {
        int dest = Destination(target, Kind::kInt);
        Emit(Op::F2I, dest, args[0]);
        return dest;
      }
      return Coerce(args[0], Type::Int(), Type::Int(), target);
    case Builtin::kFLOAT: return Coerce(args[0], arg_type, Type::Float(), target);
    case Builtin::kROUND:
      // A float's nearest int, ties to even: the math table's ROUND (an int
      // or a bool rounds to itself as an int).
      if (arg_type.is_float()) {
        int dest = Destination(target, Kind::kInt);
        Emit(Op::MATH_FI, dest, args[0], 0, static_cast<int>(MathFn::ROUND));
        return dest;
      }
      return Coerce(args[0], arg_type, Type::Int(), target);
    case Builtin::kBOOL: {
      int truth = Truth(args[0], arg_type);
      return Coerce(truth, Type::Bool(), Type::Bool(), target);
    }
    case Builtin::kABS: {
      if (arg_type.is_complex()) {
        int dest = Destination(target, Kind::kFloat);
        Emit(Op::ABS_C, dest, args[0]);
        return dest;
      }
      int dest = Destination(target, arg_type.is_float() ? Kind::kFloat : Kind::kInt);
      Emit(arg_type.is_float() ? Op::ABS_F : Op::ABS_I, dest, args[0]);
      return dest;
    }
    case Builtin::kCOMPLEX: {
      // complex() is 0j; complex(z) of a complex is z itself; complex(x) and
      // complex(x, y) of real numbers are (x, 0.0) and (x, y), each part
      // converted as float() converts it. The parts go to a fresh pair, since
      // the target may be read by them (z = complex(z.imag, z.real)).
      if (args.empty()) return ComplexConstant(0.0, 0.0, target);
      if (args.size() == 1) return Coerce(args[0], arg_type, Type::Complex(), ComplexDestination(target));
      int pair = ComplexTemp();
      for (int part = 0; part < 2; ++part) {
        Emit(expr.children[1 + part]->type.is_float() ? Op::MOVE_F : Op::I2F, pair + part, args[part]);
      }
      return CoerceComplex(pair, Type::Complex(), Type::Complex(), ComplexDestination(target));
    }
    case Builtin::kMIN:
    case Builtin::kMAX: {
      bool is_float = arg_type.is_float();
      Op op = builtin == Builtin::kMIN ? (is_float ? Op::MIN_F : Op::MIN_I) : (is_float ? Op::MAX_F : Op::MAX_I);
      int dest = Destination(target, is_float ? Kind::kFloat : Kind::kInt);
      // The accumulator must not alias a later argument.
      for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] == dest) dest = Temp(is_float ? Kind::kFloat : Kind::kInt);
      }
      Emit(op, dest, args[0], args[1]);
      for (size_t i = 2; i < args.size(); ++i) Emit(op, dest, dest, args[i]);
      return dest;
    }
    case Builtin::kRANGE: break;
  }
  return args.empty() ? ConstNone() : args[0];
}

// A call through the C API, for callees the checker could not type: a method
// call without keywords is CALL_METHOD (the receiver and the arguments in one
// span, the method looked up by name); anything else evaluates the callee,
// then the arguments and keyword values in source order, into one span for
// CALL_O, or CALL_KW with the keyword names as a tuple constant.
int Lowering::EmitDynamicCall(const Expr& expr, int target) {
  const Expr& callee = *expr.children[0];
  int num_args = static_cast<int>(expr.children.size()) - 1;
  int num_keywords = static_cast<int>(expr.keywords.size());
  if (callee.kind == ExprKind::kAttribute && num_keywords == 0) {
    int span = ObjectSpan(num_args + 1);
    ValueInto(*callee.children[0], span, Type::Object());
    for (int i = 0; i < num_args; ++i) ValueInto(*expr.children[i + 1], span + 1 + i, Type::Object());
    int dest = Destination(target, Kind::kObject);
    int saved = line_;
    line_ = expr.loc.line;
    Emit(Op::CALL_METHOD, dest, span, num_args + 1, NameIndex(callee.text));
    line_ = saved;
    return dest;
  }
  int span = ObjectSpan(1 + num_args + num_keywords);
  if (callee.kind == ExprKind::kAttribute) {
    int object = ObjectValue(*callee.children[0]);
    Emit(Op::LOAD_ATTR, span, object, 0, NameIndex(callee.text));
  } else {
    ValueInto(callee, span, Type::Object());
  }
  for (int i = 0; i < num_args; ++i) ValueInto(*expr.children[i + 1], span + 1 + i, Type::Object());
  for (int k = 0; k < num_keywords; ++k) {
    ValueInto(*expr.keywords[k].value, span + 1 + num_args + k, Type::Object());
  }
  int dest = Destination(target, Kind::kObject);
  int saved = line_;
  line_ = expr.loc.line;
  if (num_keywords == 0) {
    Emit(Op::CALL_O, dest, span, num_args);
  } else {
    PyObject* names = PyTuple_New(num_keywords);
    for (int k = 0; k < num_keywords; ++k) {
      PyTuple_SET_ITEM(names, k, PyUnicode_InternFromString(expr.keywords[k].name.c_str()));
    }
    int index = ObjectIndex(names);
    Py_DECREF(names);
    Emit(Op::CALL_KW, dest, span, num_args + num_keywords, index);
  }
  line_ = saved;
  return dest;
}

// A binary operator over two registers, by the result type the checker gave
// it: BINARY_O through the C API for objects (the in-place form for `x op= y`,
// so that lists extend in place as in Python); the _I instructions for ints
// and bools, which raise OverflowError where Python's int would grow past 64
// bits; TRUEDIV_I for int / int, correctly rounded as Python's is; and the _F
// instructions after promoting an int operand to float, as Python promotes it.
int Lowering::EmitArithmetic(BinOp op, int left, Type left_type, int right, Type right_type, Type result, int target,
                             bool in_place) {
  if (result.is_complex()) {
    if (op == BinOp::kPow) {
      // CPython's complex power (its integer-exponent method, its errors),
      // on the values boxed; the result is always a complex.
      int boxed = Temp(Kind::kObject);
      Emit(Op::BINARY_O, boxed, Coerce(left, left_type, Type::Object()), Coerce(right, right_type, Type::Object()),
           static_cast<int>(BinaryOp::POW));
      return Coerce(boxed, Type::Object(), result, ComplexResult(target));
    }
    // + - * /: a real operand becomes a complex first, as in CPython 3.11-3.13.
    int l = Coerce(left, left_type, result);
    int r = Coerce(right, right_type, result);
    static const Op kComplexOps[] = {Op::ADD_C, Op::SUB_C, Op::MUL_C, Op::DIV_C};
    int dest = ComplexResult(target);
    Emit(kComplexOps[static_cast<int>(op)], dest, l, r);
    return dest;
  }
  if (result.is_object()) {
    int l = Coerce(left, left_type, Type::Object());
    int r = Coerce(right, right_type, Type::Object());
    static const BinaryOp kObjectOps[] = {BinaryOp::ADD,    BinaryOp::SUB,    BinaryOp::MUL, BinaryOp::TRUEDIV,
                                          BinaryOp::FLOORDIV, BinaryOp::MOD,  BinaryOp::POW, BinaryOp::LSHIFT,
                                          BinaryOp::RSHIFT, BinaryOp::OR,     BinaryOp::XOR, BinaryOp::AND,
                                          BinaryOp::MATMUL};
    int id = static_cast<int>(kObjectOps[static_cast<int>(op)]) + (in_place ? kBinaryInPlace : 0);
    int dest = Destination(target, Kind::kObject);
    Emit(Op::BINARY_O, dest, l, r, id);
    return dest;
  }
  if (result.is_integral()) {
    static const Op kIntOps[] = {Op::ADD_I, Op::SUB_I, Op::MUL_I, Op::TRUEDIV_I, Op::FLOORDIV_I, Op::MOD_I, Op::POW_I,
                                 Op::SHL_I, Op::SHR_I, Op::OR_I,  Op::XOR_I, Op::AND_I,     Op::ADD_I};
    int dest = Destination(target, Kind::kInt);
    Emit(kIntOps[static_cast<int>(op)], dest, left, right);
    return dest;
  }
  // A float result.
  if (op == BinOp::kDiv && left_type.is_integral() && right_type.is_integral()) {
    int dest = Destination(target, Kind::kFloat);
    Emit(Op::TRUEDIV_I, dest, left, right);
    return dest;
  }
  int l = Coerce(left, left_type, Type::Float());
  int r = Coerce(right, right_type, Type::Float());
  static const Op kFloatOps[] = {Op::ADD_F, Op::SUB_F, Op::MUL_F, Op::DIV_F, Op::FLOORDIV_F, Op::MOD_F, Op::POW_F,
                                 Op::ADD_F, Op::ADD_F, Op::ADD_F, Op::ADD_F, Op::ADD_F,      Op::ADD_F};
  int dest = Destination(target, Kind::kFloat);
  Emit(kFloatOps[static_cast<int>(op)], dest, l, r);
  return dest;
}

// Whether two typed expressions always give the same value without side
// effects: locals, constants, arithmetic and buffer reads, spelled alike. The
// second evaluation of such an expression cannot raise what the first did not.
static bool SamePureValue(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.type != b.type || !a.type.is_numeric()) return false;
  switch (a.kind) {
    case ExprKind::kInt:
    case ExprKind::kBool: return a.int_value == b.int_value;
    case ExprKind::kFloat: return std::memcmp(&a.float_value, &b.float_value, sizeof(double)) == 0;
    case ExprKind::kName:
      return a.resolution == Resolution::kLocal && b.resolution == Resolution::kLocal && a.index == b.index;
    case ExprKind::kBinary: return a.bin_op == b.bin_op && SamePureValue(*a.children[0], *b.children[0]) &&
                                   SamePureValue(*a.children[1], *b.children[1]);
    case ExprKind::kUnary: return a.un_op == b.un_op && SamePureValue(*a.children[0], *b.children[0]);
    case ExprKind::kSubscript: {
      const Expr& buffer = *a.children[0];
      const Expr& other = *b.children[0];
      return buffer.kind == ExprKind::kName && other.kind == ExprKind::kName && buffer.type.is_buffer() &&
             buffer.resolution == Resolution::kLocal && other.resolution == Resolution::kLocal &&
             buffer.index == other.index && SamePureValue(*a.children[1], *b.children[1]);
    }
    default: return false;
  }
}

// `left op right`: both operands in source order, then EmitArithmetic. An
// operator whose operands are spelled alike and pure evaluates the operand
// once (SamePureValue): Python would compute the same value, and any error,
// from the first evaluation.
int Lowering::EmitBinary(const Expr& expr, int target) {
  const Expr& left = *expr.children[0];
  const Expr& right = *expr.children[1];
  int l = ValueOf(left);
  // (x[i] - m) * (x[i] - m): the value once, as the same register twice.
  int r = SamePureValue(left, right) ? l : ValueOf(right);
  return EmitArithmetic(expr.bin_op, l, left.type, r, right.type, expr.type, target, false);
}

// `not x` as a branch that stores True or False (Branch picks the cheapest
// test), `-x`, `+x`, `~x` as NEG_I/NEG_F/INVERT_I on numbers (unary plus is
// the value itself) and UNARY_O on objects.
int Lowering::EmitUnary(const Expr& expr, int target) {
  const Expr& operand = *expr.children[0];
  if (expr.un_op == UnOp::kNot) {
    Label* is_false = NewLabel();
    Label* done = NewLabel();
    int dest = Destination(target, Kind::kInt);
    Branch(operand, true, is_false);
    Emit(Op::MOVE_I, dest, ConstInt(1));
    EmitJump(Op::JMP, 0, 0, 0, done);
    Bind(is_false);
    Emit(Op::MOVE_I, dest, ConstInt(0));
    Bind(done);
    return dest;
  }
  // -1.5 and -7 are constants, as CPython folds them (a literal's negation
  // cannot overflow: a literal is never below zero).
  if (expr.un_op == UnOp::kNeg && operand.kind == ExprKind::kFloat) return ConstFloat(-operand.float_value);
  if (expr.un_op == UnOp::kNeg && operand.kind == ExprKind::kInt && expr.type.is_int()) {
    return ConstInt(-operand.int_value);
  }
  int value = ValueOf(operand);
  if (expr.type.is_object()) {
    int dest = Destination(target, Kind::kObject);
    int id = expr.un_op == UnOp::kNeg ? 0 : expr.un_op == UnOp::kPos ? 1 : 2;
    Emit(Op::UNARY_O, dest, Coerce(value, operand.type, Type::Object()), 0, id);
    return dest;
  }
  if (expr.type.is_float()) {
    if (expr.un_op == UnOp::kPos) return value;
    int dest = Destination(target, Kind::kFloat);
    Emit(Op::NEG_F, dest, value);
    return dest;
  }
  if (expr.type.is_complex()) {
    if (expr.un_op == UnOp::kPos) return value;
    int dest = ComplexResult(target);  // part by part, so dest may be value
    Emit(Op::NEG_F, dest, value);
    Emit(Op::NEG_F, dest + 1, value + 1);
    return dest;
  }
  if (expr.un_op == UnOp::kPos) return value;
  int dest = Destination(target, Kind::kInt);
  Emit(expr.un_op == UnOp::kNeg ? Op::NEG_I : Op::INVERT_I, dest, value);
  return dest;
}

// `a and b` / `a or b` as a value: each operand into one register, jumping
// out at the first falsy (and) or truthy (or) one, so that the result is that
// operand itself, as in Python, and later operands are not evaluated.
int Lowering::EmitBoolOp(const Expr& expr, int target) {
  Type type = expr.type;
  int dest = Destination(target, type.kind_of_register());
  // The result register must not be read by a later operand.
  if (dest == target && target < kConstantBase && is_local_[target]) dest = TempFor(type);
  Label* done = NewLabel();
  for (size_t i = 0; i < expr.children.size(); ++i) {
    ValueInto(*expr.children[i], dest, type);
    if (i + 1 == expr.children.size()) break;
    int truth = Truth(dest, type);
    EmitJump(expr.is_and ? Op::JF : Op::JT, truth, 0, 0, done);
  }
  Bind(done);
  return Coerce(dest, type, type, target);
}

// `==` or `!=` with a complex operand and a number or complex other
// (EmitComplexEquality), not the C API's.
bool IsComplexEquality(CmpOp op, Type left_type, Type right_type) {
  return (op == CmpOp::kEq || op == CmpOp::kNe) && (left_type.is_complex() || right_type.is_complex()) &&
         (left_type.is_numeric() || left_type.is_complex()) && (right_type.is_numeric() || right_type.is_complex());
}

// CPython's number for one of the six ordering and equality comparisons
// (COMPARE_O's D, JT_COMPARE_O's and JF_COMPARE_O's C).
int PyCompareOp(CmpOp op) {
  static const int kPyOps[] = {Py_LT, Py_LE, Py_EQ, Py_NE, Py_GT, Py_GE};
  return kPyOps[static_cast<int>(op)];
}

// One comparison `left op right` as a value: IS_O and CONTAINS_O (with NOT
// for `is not` and `not in`), COMPARE_O through the C API when an operand is
// not a number (its result may be any object, as rich comparisons may return),
// and else a bool from the _I, _F or mixed _FI instructions. Greater-than
// forms swap their operands; mixed comparisons put the float first and
// compare exact values, as CPython does, even beyond 2**53.
int Lowering::EmitComparePair(CmpOp op, int left, Type left_type, int right, Type right_type, int target) {
  switch (op) {
    case CmpOp::kIs:
    case CmpOp::kIsNot: {
      int dest = Destination(target, Kind::kInt);
      Emit(Op::IS_O, dest, Coerce(left, left_type, Type::Object()), Coerce(right, right_type, Type::Object()));
      if (op == CmpOp::kIsNot) Emit(Op::NOT, dest, dest);
      return dest;
    }
    case CmpOp::kIn:
    case CmpOp::kNotIn: {
      int dest = Destination(target, Kind::kInt);
      Emit(Op::CONTAINS_O, dest, Coerce(left, left_type, Type::Object()), Coerce(right, right_type, Type::Object()));
      if (op == CmpOp::kNotIn) Emit(Op::NOT, dest, dest);
      return dest;
    }
    default: break;
  }
  if (IsComplexEquality(op, left_type, right_type)) {
    return EmitComplexEquality(op, left, left_type, right, right_type, target);
  }
  if (!left_type.is_numeric() || !right_type.is_numeric()) {
    int dest = Destination(target, Kind::kObject);
    Emit(Op::COMPARE_O, dest, Coerce(left, left_type, Type::Object()), Coerce(right, right_type, Type::Object()), 0);
    code_.back().d = PyCompareOp(op);
    return dest;
  }
  int dest = Destination(target, Kind::kInt);
  bool swap = op == CmpOp::kGt || op == CmpOp::kGe;
  CmpOp base_op = op == CmpOp::kGt ? CmpOp::kLt : op == CmpOp::kGe ? CmpOp::kLe : op;
  if (left_type.is_integral() && right_type.is_integral()) {
    Op ops[] = {Op::LT_I, Op::LE_I, Op::EQ_I, Op::NE_I};
    Op chosen = ops[static_cast<int>(base_op)];
    Emit(chosen, dest, swap ? right : left, swap ? left : right);
  } else if (left_type.is_float() && right_type.is_float()) {
    Op ops[] = {Op::LT_F, Op::LE_F, Op::EQ_F, Op::NE_F};
    Op chosen = ops[static_cast<int>(base_op)];
    Emit(chosen, dest, swap ? right : left, swap ? left : right);
  } else {
    // Mixed: the float operand goes first, flipping the comparison if needed.
    bool float_left = left_type.is_float();
    int f = float_left ? left : right;
    int i = float_left ? right : left;
    CmpOp effective = op;
    if (!float_left) {
      static const CmpOp kFlipped[] = {CmpOp::kGt, CmpOp::kGe, CmpOp::kEq, CmpOp::kNe, CmpOp::kLt, CmpOp::kLe};
      effective = kFlipped[static_cast<int>(op)];
    }
    static const Op kMixed[] = {Op::LT_FI, Op::LE_FI, Op::EQ_FI, Op::NE_FI, Op::GT_FI, Op::GE_FI};
    Emit(kMixed[static_cast<int>(effective)], dest, f, i);
  }
  return dest;
}

// `z == x` or `z != x` with a complex operand, as CPython compares: against
// an int, the imaginary part is zero and the real part equals the int exactly
// (EQ_FI, even beyond 2**53); against a float or a complex, both parts equal
// (EQ_C, the float made a complex first). Equality is symmetric, so the
// complex operand goes first.
int Lowering::EmitComplexEquality(CmpOp op, int left, Type left_type, int right, Type right_type, int target) {
  if (!left_type.is_complex()) {
    std::swap(left, right);
    std::swap(left_type, right_type);
  }
  int dest = Destination(target, Kind::kInt);
  if (right_type.is_integral()) {
    int real_equal = Temp(Kind::kInt);
    Emit(Op::EQ_F, dest, left + 1, ConstFloat(0.0));
    Emit(Op::EQ_FI, real_equal, left, right);
    Emit(Op::AND_I, dest, dest, real_equal);
  } else {
    Emit(Op::EQ_C, dest, left, Coerce(right, right_type, Type::Complex()));
  }
  if (op == CmpOp::kNe) Emit(Op::NOT, dest, dest);
  return dest;
}

// A comparison, possibly chained (`a < b < c`): a bool result is built from
// Branch, which evaluates each middle operand once and stops at the first
// false link; an object result holds each link's own result and stops at the
// first falsy one, which is what Python returns.
int Lowering::EmitCompare(const Expr& expr, int target) {
  if (expr.type.is_bool()) {
    if (expr.cmp_ops.size() == 1) {
      int left = ValueOf(*expr.children[0]);
      int right = ValueOf(*expr.children[1]);
      return EmitComparePair(expr.cmp_ops[0], left, expr.children[0]->type, right, expr.children[1]->type, target);
    }
    int dest = Destination(target, Kind::kInt);
    if (dest == target && target < kConstantBase && is_local_[target]) dest = Temp(Kind::kInt);
    Label* done = NewLabel();
    Emit(Op::MOVE_I, dest, ConstInt(0));
    Branch(expr, false, done);
    Emit(Op::MOVE_I, dest, ConstInt(1));
    Bind(done);
    return Coerce(dest, Type::Bool(), Type::Bool(), target);
  }
  // An object result: each comparison's own result, stopping at the first falsy one.
  int dest = Temp(Kind::kObject);
  Label* done = NewLabel();
  int left = ValueOf(*expr.children[0]);
  Type left_type = expr.children[0]->type;
  for (size_t i = 0; i < expr.cmp_ops.size(); ++i) {
    int right = ValueOf(*expr.children[i + 1]);
    Type right_type = expr.children[i + 1]->type;
    if (i + 1 < expr.cmp_ops.size() && right < kConstantBase && !IsTemp(right)) {
      int copy = TempFor(right_type);
      right = Coerce(right, right_type, right_type, copy);
    }
    int pair = EmitComparePair(expr.cmp_ops[i], left, left_type, right, right_type, -1);
    bool pair_is_object = TypeOf(pair).kind == Kind::kObject;
    Coerce(pair, pair_is_object ? Type::Object() : Type::Bool(), Type::Object(), dest);
    if (i + 1 < expr.cmp_ops.size()) {
      int truth = Temp(Kind::kInt);
      Emit(Op::TRUTH_O, truth, dest);
      EmitJump(Op::JF, truth, 0, 0, done);
    }
    left = right;
    left_type = right_type;
  }
  Bind(done);
  return Coerce(dest, Type::Object(), Type::Object(), target);
}

// `a if cond else b`: a branch on `cond`, each arm evaluated into one register.
int Lowering::EmitIfExp(const Expr& expr, int target) {
  Type type = expr.type;
  int dest = TempFor(type);
  Label* orelse = NewLabel();
  Label* done = NewLabel();
  Branch(*expr.children[0], false, orelse);
  ValueInto(*expr.children[1], dest, type);
  EmitJump(Op::JMP, 0, 0, 0, done);
  Bind(orelse);
  ValueInto(*expr.children[2], dest, type);
  Bind(done);
  return Coerce(dest, type, type, target);
}

// A tuple, list, set or dict display: the items, in source order, into one
// span for BUILD_TUPLE, BUILD_LIST, BUILD_SET or BUILD_DICT (a dict's span
// alternates keys and values).
int Lowering::EmitDisplay(const Expr& expr, int target) {
  // A long display is built in chunks joined with + or |, which give the same
  // object (later dict keys win, earlier set members stay), so that registers
  // never run out.
  constexpr int kChunk = 32;
  int count = static_cast<int>(expr.children.size());
  Op op = expr.kind == ExprKind::kTuple  ? Op::BUILD_TUPLE
          : expr.kind == ExprKind::kList ? Op::BUILD_LIST
          : expr.kind == ExprKind::kSet  ? Op::BUILD_SET
                                         : Op::BUILD_DICT;
  int join = static_cast<int>(expr.kind == ExprKind::kSet || expr.kind == ExprKind::kDict ? BinaryOp::OR : BinaryOp::ADD) +
             kBinaryInPlace;
  int dest = Destination(target, Kind::kObject);
  if (count > kChunk && dest == target && is_local_[target]) dest = Temp(Kind::kObject);
  for (int first = 0; first == 0 || first < count; first += kChunk) {
    TempScope scope(this);
    int size = std::min(kChunk, count - first);
    int span = ObjectSpan(size);
    for (int i = 0; i < size; ++i) ValueInto(*expr.children[first + i], span + i, Type::Object());
    if (first == 0) {
      Emit(op, dest, span, size);
    } else {
      int part = Temp(Kind::kObject);
      Emit(op, part, span, size);
      Emit(Op::BINARY_O, dest, dest, part, join);
    }
  }
  return Coerce(dest, Type::Object(), Type::Object(), target);
}

// One replacement field of an f-string, `{value!conv:spec}`: FORMAT, or
// FORMAT_SPEC when there is a spec (itself an f-string evaluated first).
int Lowering::EmitFormatted(const Expr& expr, int target) {
  int value = ObjectValue(*expr.children[0]);
  int dest = Destination(target, Kind::kObject);
  if (expr.children[1]) {
    int spec = ObjectValue(*expr.children[1]);
    Emit(Op::FORMAT_SPEC, dest, value, expr.conversion, spec);
  } else {
    Emit(Op::FORMAT, dest, value, expr.conversion);
  }
  return dest;
}

// An f-string: its literal parts and formatted fields into one span, joined by
// BUILD_STRING; a lone field is just its FORMAT, and an empty f-string the
// constant ''.
int Lowering::EmitJoinedStr(const Expr& expr, int target) {
  int count = static_cast<int>(expr.children.size());
  if (count == 1 && expr.children[0]->kind == ExprKind::kFormatted) return EmitFormatted(*expr.children[0], target);
  if (count == 0) {
    PyObject* empty = PyUnicode_FromString("");
    int reg = ConstObject(empty);
    Py_DECREF(empty);
    return reg;
  }
  int span = ObjectSpan(count);
  for (int i = 0; i < count; ++i) ValueInto(*expr.children[i], span + i, Type::Object());
  int dest = Destination(target, Kind::kObject);
  Emit(Op::BUILD_STRING, dest, span, count);
  return dest;
}

// ---- Conditions ---------------------------------------------------------------------------------

// Jumps to `label` when `left op right` is `when`, with one fused
// compare-and-branch for numbers. Negating an integer comparison swaps and
// complements it (not a < b is b <= a); a float comparison cannot be negated
// that way, since both are false when either operand is a NaN, so it uses the
// JN* instructions. Mixed int/float comparisons put the float first; their
// equality goes through EQ_FI/NE_FI and a JT/JF. Anything else compares
// through the C API and tests the result's truth.
void Lowering::CompareBranch(CmpOp op, int left, Type left_type, int right, Type right_type, bool when,
                             Label* label) {
  const bool identity_or_membership =
      op == CmpOp::kIs || op == CmpOp::kIsNot || op == CmpOp::kIn || op == CmpOp::kNotIn;
  bool numeric = left_type.is_numeric() && right_type.is_numeric() && !identity_or_membership;
  if (!numeric && !identity_or_membership && !IsComplexEquality(op, left_type, right_type)) {
    // Through the C API: the comparison and the truth of its result in one
    // instruction, as EmitComparePair's COMPARE_O then Truth's TRUTH_O would.
    EmitJump(when ? Op::JT_COMPARE_O : Op::JF_COMPARE_O, Coerce(left, left_type, Type::Object()),
             Coerce(right, right_type, Type::Object()), PyCompareOp(op), label);
    return;
  }
  if (!numeric) {
    int pair = EmitComparePair(op, left, left_type, right, right_type, -1);
    int truth = TypeOf(pair).kind == Kind::kObject ? Truth(pair, Type::Object()) : pair;
    EmitJump(when ? Op::JT : Op::JF, truth, 0, 0, label);
    return;
  }
  if (left_type.is_integral() && right_type.is_integral()) {
    // Integer negations are swapped complements.
    struct Choice {
      Op op;
      bool swap;
    };
    static const Choice kWhenTrue[] = {{Op::JLT_I, false}, {Op::JLE_I, false}, {Op::JEQ_I, false},
                                       {Op::JNE_I, false}, {Op::JLT_I, true},  {Op::JLE_I, true}};
    static const Choice kWhenFalse[] = {{Op::JLE_I, true},  {Op::JLT_I, true},  {Op::JNE_I, false},
                                        {Op::JEQ_I, false}, {Op::JLE_I, false}, {Op::JLT_I, false}};
    Choice choice = (when ? kWhenTrue : kWhenFalse)[static_cast<int>(op)];
    EmitJump(choice.op, choice.swap ? right : left, choice.swap ? left : right, 0, label);
    return;
  }
  if (left_type.is_float() && right_type.is_float()) {
    struct Choice {
      Op op;
      bool swap;
    };
    static const Choice kWhenTrue[] = {{Op::JLT_F, false}, {Op::JLE_F, false}, {Op::JEQ_F, false},
                                       {Op::JNE_F, false}, {Op::JLT_F, true},  {Op::JLE_F, true}};
    static const Choice kWhenFalse[] = {{Op::JNLT_F, false}, {Op::JNLE_F, false}, {Op::JNE_F, false},
                                        {Op::JEQ_F, false},  {Op::JNLT_F, true},  {Op::JNLE_F, true}};
    Choice choice = (when ? kWhenTrue : kWhenFalse)[static_cast<int>(op)];
    EmitJump(choice.op, choice.swap ? right : left, choice.swap ? left : right, 0, label);
    return;
  }
  // Mixed int and float: the float first.
  bool float_left = left_type.is_float();
  int f = float_left ? left : right;
  int i = float_left ? right : left;
  CmpOp effective = op;
  if (!float_left) {
    static const CmpOp kFlipped[] = {CmpOp::kGt, CmpOp::kGe, CmpOp::kEq, CmpOp::kNe, CmpOp::kLt, CmpOp::kLe};
    effective = kFlipped[static_cast<int>(op)];
  }
  if (effective == CmpOp::kEq || effective == CmpOp::kNe) {
    int dest = Temp(Kind::kInt);
    Emit(effective == CmpOp::kEq ? Op::EQ_FI : Op::NE_FI, dest, f, i);
    EmitJump(when ? Op::JT : Op::JF, dest, 0, 0, label);
    return;
  }
  static const Op kTrue[] = {Op::JLT_FI, Op::JLE_FI, Op::JLT_FI, Op::JLT_FI, Op::JGT_FI, Op::JGE_FI};
  static const Op kFalse[] = {Op::JNLT_FI, Op::JNLE_FI, Op::JNLT_FI, Op::JNLT_FI, Op::JNGT_FI, Op::JNGE_FI};
  EmitJump((when ? kTrue : kFalse)[static_cast<int>(effective)], f, i, 0, label);
}

// Jumps to `label` when the truth of `expr` is `when`, without materializing a
// bool where it can: a constant jumps or not, `not x` flips `when`, `and`/`or`
// branch operand by operand (short-circuiting as Python does), a comparison
// becomes fused compare-and-branch instructions (a chain evaluates each middle
// operand once; a local is compared in its own register, since nothing in a
// later link can rebind it: ppy has no `:=`), None is always
// false, and any other value is tested by its truth (JT/JF).
void Lowering::Branch(const Expr& expr, bool when, Label* label) {
  int saved_line = line_;
  if (expr.loc.line > 0) line_ = expr.loc.line;
  switch (expr.kind) {
    case ExprKind::kBool:
      if ((expr.int_value != 0) == when) EmitJump(Op::JMP, 0, 0, 0, label);
      break;
    case ExprKind::kUnary:
      if (expr.un_op == UnOp::kNot) {
        Branch(*expr.children[0], !when, label);
        break;
      }
      [[fallthrough]];
    default: {
      if (expr.kind == ExprKind::kBoolOp) {
        bool short_circuit_to_label = expr.is_and ? !when : when;
        if (short_circuit_to_label) {
          for (const ExprPtr& child : expr.children) Branch(*child, when, label);
        } else {
          Label* skip = NewLabel();
          for (size_t i = 0; i + 1 < expr.children.size(); ++i) Branch(*expr.children[i], !when, skip);
          Branch(*expr.children.back(), when, label);
          Bind(skip);
        }
        break;
      }
      // (An object comparison too: branching on each link's truth is what
      // Python does with the value a chain of them makes.)
      if (expr.kind == ExprKind::kCompare) {
        Label* skip = when && expr.cmp_ops.size() > 1 ? NewLabel() : nullptr;
        int left = ValueOf(*expr.children[0]);
        Type left_type = expr.children[0]->type;
        for (size_t i = 0; i < expr.cmp_ops.size(); ++i) {
          bool last = i + 1 == expr.cmp_ops.size();
          int right = ValueOf(*expr.children[i + 1]);
          Type right_type = expr.children[i + 1]->type;
          if (last) CompareBranch(expr.cmp_ops[i], left, left_type, right, right_type, when, label);
          else CompareBranch(expr.cmp_ops[i], left, left_type, right, right_type, false, when ? skip : label);
          left = right;
          left_type = right_type;
        }
        if (skip) Bind(skip);
        break;
      }
      int value = ValueOf(expr);
      if (expr.type.kind == TypeKind::kNone) {
        if (!when) EmitJump(Op::JMP, 0, 0, 0, label);
        break;
      }
      int truth = expr.type.is_integral() ? value : Truth(value, expr.type);
      EmitJump(when ? Op::JT : Op::JF, truth, 0, 0, label);
      break;
    }
  }
  line_ = saved_line;
}

// ---- Statements ---------------------------------------------------------------------------------

// The statements of a block, each in its own TempScope: temporaries do not
// outlive the statement that made them.
void Lowering::Block(const std::vector<StmtPtr>& body) {
  for (const StmtPtr& stmt : body) {
    TempScope scope(this);
    Statement(*stmt);
  }
}

// One statement. `if` branches around its body (the jump over `else` left out
// when the body cannot fall through), `assert` jumps over ASSERT_FAIL when the
// test holds, `raise` is RAISE, break and continue jump to the enclosing
// loop's labels; loops, assignments, returns and imports have their own
// functions. Nested defs never reach here (their function falls back).
void Lowering::Statement(const Stmt& stmt) {
  line_ = stmt.loc.line;
  switch (stmt.kind) {
    case StmtKind::kExpr: ValueOf(*stmt.value); break;
    case StmtKind::kAssign: Assign(stmt); break;
    case StmtKind::kAnnAssign:
      if (stmt.value) Assign(stmt);
      break;
    case StmtKind::kAugAssign: AugAssign(stmt); break;
    case StmtKind::kReturn: Return(stmt); break;
    case StmtKind::kPass: break;
    // ParseSource refuses break and continue outside a loop, as CPython does;
    // a tree that has them anyway emits nothing rather than reading past loops_.
    case StmtKind::kBreak:
      if (!loops_.empty()) EmitJump(Op::JMP, 0, 0, 0, loops_.back().break_label);
      break;
    case StmtKind::kContinue:
      if (!loops_.empty()) EmitJump(Op::JMP, 0, 0, 0, loops_.back().continue_label);
      break;
    case StmtKind::kIf: {
      Label* orelse = NewLabel();
      Label* done = NewLabel();
      Branch(*stmt.test, false, orelse);
      Block(stmt.body);
      if (!stmt.orelse.empty()) {
        if (!LastIsEnd()) EmitJump(Op::JMP, 0, 0, 0, done);
        Bind(orelse);
        Block(stmt.orelse);
      } else {
        Bind(orelse);
      }
      Bind(done);
      break;
    }
    case StmtKind::kWhile: While(stmt); break;
    case StmtKind::kFor: For(stmt); break;
    case StmtKind::kAssert: {
      Label* ok = NewLabel();
      Branch(*stmt.test, true, ok);
      line_ = stmt.loc.line;
      int message = stmt.value ? ObjectValue(*stmt.value) : ConstNone();
      line_ = stmt.loc.line;
      Emit(Op::ASSERT_FAIL, message);
      Bind(ok);
      break;
    }
    case StmtKind::kRaise: {
      int exception = ObjectValue(*stmt.value);
      line_ = stmt.loc.line;
      Emit(Op::RAISE, exception);
      break;
    }
    case StmtKind::kGlobal: break;
    case StmtKind::kImport: Import(stmt); break;
    case StmtKind::kFunctionDef:
    case StmtKind::kUnsupported: break;
  }
}

// `targets = value`. `a, b = b, a` evaluates every value before storing any,
// as Python builds the tuple first; a Buffer local assigned an object borrows
// a view of it (BORROW_U); anything else evaluates the value once (into the
// local's own register when there is one target) and stores it into each
// target, left to right, as Python does.
void Lowering::Assign(const Stmt& stmt) {
  const Expr& value = *stmt.value;
  const Expr& first = *stmt.targets[0];
  if (stmt.kind == StmtKind::kAssign && stmt.targets.size() == 1 &&
      (first.kind == ExprKind::kTuple || first.kind == ExprKind::kList) &&
      (value.kind == ExprKind::kTuple || value.kind == ExprKind::kList) &&
      value.children.size() == first.children.size()) {
    // Parallel assignment: evaluate every value into a temporary first.
    std::vector<int> values;
    for (const ExprPtr& child : value.children) {
      int reg = ValueOf(*child);
      if (reg < kConstantBase && !IsTemp(reg)) {
        int copy = TempFor(child->type);
        reg = Coerce(reg, child->type, child->type, copy);
      }
      values.push_back(reg);
    }
    for (size_t i = 0; i < values.size(); ++i) StoreTarget(*first.children[i], values[i], value.children[i]->type);
    return;
  }
  if (stmt.targets.size() == 1 && first.kind == ExprKind::kName && first.resolution == Resolution::kLocal) {
    int slot = first.index;
    if (fn_.locals[slot].type.is_buffer() && value.type.is_object()) {
      BorrowInto(slot, ValueOf(value));
    } else {
      ValueInto(value, LocalRegister(slot), fn_.locals[slot].type);
    }
    SetBound(slot);
    return;
  }
  int reg = ValueOf(value);
  for (const ExprPtr& target : stmt.targets) StoreTarget(*target, reg, value.type);
}

// An object assigned to a Buffer-annotated local (`out: Buffer[float] =
// np.empty(n)`): BORROW_U checks it as a parameter would be checked and
// borrows a view for the rest of the frame (the register's element type is
// the annotation's). Whether the view must be writable is filled in once the
// whole function is emitted (see Run).
void Lowering::BorrowInto(int slot, int object) {
  Emit(Op::BORROW_U, LocalRegister(slot), object, 0, NameIndex(fn_.locals[slot].name));
}

// Stores `value` into one assignment target: a local's register (converted
// to the local's type, and its bound flag set), STORE_GLOBAL for a `global`
// name, a buffer element, SETITEM or STORE_ATTR on objects, and UNPACK into a
// span for a tuple or list target (exactly that many items, or ValueError, as
// in Python), each item stored in turn.
void Lowering::StoreTarget(const Expr& target, int value, Type value_type) {
  int saved = line_;
  if (target.loc.line > 0) line_ = target.loc.line;
  switch (target.kind) {
    case ExprKind::kName:
      if (target.resolution == Resolution::kLocal) {
        int slot = target.index;
        if (fn_.locals[slot].type.is_buffer() && value_type.is_object()) {
          BorrowInto(slot, value);
        } else {
          Coerce(value, value_type, fn_.locals[slot].type, LocalRegister(slot));
        }
        SetBound(slot);
      } else {
        Emit(Op::STORE_GLOBAL, Coerce(value, value_type, Type::Object()), 0, 0, NameIndex(target.text));
      }
      break;
    case ExprKind::kSubscript: {
      const Expr& base = *target.children[0];
      const Expr& index = *target.children[1];
      if (base.type.is_buffer() && !target.type.is_object()) {
        int buffer = ValueOf(base);
        StoreElement(buffer, base.type, index, value, value_type);
      } else if (index.kind == ExprKind::kSlice && !base.type.is_buffer()) {  // (as EmitSubscript's GETSLICE)
        int stored = Coerce(value, value_type, Type::Object());
        int count;
        int span = SliceSpan(base, index, &count);
        Emit(Op::SETSLICE, stored, span, count);
      } else if (index.type.is_int()) {  // (a typed int: SETITEM_I, as EmitSubscript's GETITEM_I)
        int object = ObjectValue(base);
        int key = ValueOf(index);
        Emit(Op::SETITEM_I, object, key, Coerce(value, value_type, Type::Object()));
      } else {
        int object = ObjectValue(base);
        int key = ObjectValue(index);
        Emit(Op::SETITEM, object, key, Coerce(value, value_type, Type::Object()));
      }
      break;
    }
    case ExprKind::kAttribute: {
      int object = ObjectValue(*target.children[0]);
      Emit(Op::STORE_ATTR, object, Coerce(value, value_type, Type::Object()), 0, NameIndex(target.text));
      break;
    }
    case ExprKind::kTuple:
    case ExprKind::kList: {
      int count = static_cast<int>(target.children.size());
      int span = ObjectSpan(count);
      Emit(Op::UNPACK, span, Coerce(value, value_type, Type::Object()), count);
      for (int i = 0; i < count; ++i) StoreTarget(*target.children[i], span + i, Type::Object());
      break;
    }
    default: break;
  }
  line_ = saved;
}

// `target op= value`. The target is read once, then the value evaluated, as
// CPython does: a local through EmitArithmetic (in place for objects, so that
// `xs += ys` extends a list), a global through LOAD_GLOBAL/STORE_GLOBAL,
// `buf[k] += v` as ADDTO_F64/ADDTO_I64 when v cannot raise (else load,
// combine, store at the index computed once), and items and attributes of
// objects through the C API with the in-place operator.
void Lowering::AugAssign(const Stmt& stmt) {
  const Expr& target = *stmt.targets[0];
  const Expr& value = *stmt.value;
  BinOp op = stmt.bin_op;
  switch (target.kind) {
    case ExprKind::kName: {
      if (target.resolution == Resolution::kLocal) {
        int slot = target.index;
        int reg = EmitName(target, -1);
        Type type = fn_.locals[slot].type;
        int right = ValueOf(value);
        Type result = stmt.result_type;
        bool in_place = result.is_object();
        int combined = EmitArithmetic(op, reg, type, right, value.type, result,
                                      result.kind_of_register() == type.kind_of_register() ? reg : -1, in_place);
        Coerce(combined, result, type, reg);
        SetBound(slot);
      } else {
        int current = Temp(Kind::kObject);
        Emit(Op::LOAD_GLOBAL, current, 0, 0, NameIndex(target.text));
        int right = ObjectValue(value);
        int combined = EmitArithmetic(op, current, Type::Object(), right, Type::Object(), Type::Object(), current, true);
        Emit(Op::STORE_GLOBAL, combined, 0, 0, NameIndex(target.text));
      }
      break;
    }
    case ExprKind::kSubscript: {
      const Expr& base = *target.children[0];
      const Expr& index = *target.children[1];
      if (base.type.is_buffer()) {
        int buffer = ValueOf(base);
        int position = PositionValue(index, buffer, base.type);
        Type element = base.type.element();
        ElemType elem = base.type.elem;
        if (op == BinOp::kAdd && base.type.ndim == 1 && ((elem == ElemType::kF64 && value.type.is_float()) ||
                                  (elem == ElemType::kI64 && value.type.is_integral()))) {
          // The element is read before the value is evaluated, as in CPython;
          // evaluating the value first is the same unless it raises, so only
          // values that cannot raise fuse.
          bool cannot_raise = value.kind == ExprKind::kInt || value.kind == ExprKind::kFloat ||
                              value.kind == ExprKind::kBool ||
                              (value.kind == ExprKind::kName && value.resolution == Resolution::kLocal &&
                               !value.check_bound);
          if (cannot_raise) {
            int right = ValueOf(value);
            line_ = stmt.loc.line;
            Emit(elem == ElemType::kF64 ? Op::ADDTO_F64 : Op::ADDTO_I64, buffer, position, right);
            break;
          }
        }
        int current = LoadElementAt(buffer, base.type, position, -1);
        int right = ValueOf(value);
        Type result = stmt.result_type;
        int combined = EmitArithmetic(op, current, element, right, value.type, result, -1, result.is_object());
        StoreElementAt(buffer, base.type, position, combined, result);
      } else {
        // (A typed int index: read and stored by it, GETITEM_I and SETITEM_I.)
        int object = ObjectValue(base);
        const bool int_key = index.type.is_int();
        int key = int_key ? ValueOf(index) : ObjectValue(index);
        int current = Temp(Kind::kObject);
        Emit(int_key ? Op::GETITEM_I : Op::GETITEM, current, object, key);
        int right = ObjectValue(value);
        int combined = EmitArithmetic(op, current, Type::Object(), right, Type::Object(), Type::Object(), current, true);
        Emit(int_key ? Op::SETITEM_I : Op::SETITEM, object, key, combined);
      }
      break;
    }
    case ExprKind::kAttribute: {
      int object = ObjectValue(*target.children[0]);
      int current = Temp(Kind::kObject);
      int name = NameIndex(target.text);
      Emit(Op::LOAD_ATTR, current, object, 0, name);
      int right = ObjectValue(value);
      int combined = EmitArithmetic(op, current, Type::Object(), right, Type::Object(), Type::Object(), current, true);
      Emit(Op::STORE_ATTR, object, combined, 0, name);
      break;
    }
    default: break;
  }
}

// `while test: body else: orelse`: the test at the top (branching to the
// else block when false), the body, and a LOOP back edge, which counts toward
// tiering and checks for Ctrl-C. `break` jumps past the else block, as in
// Python; `continue` to the back edge.
void Lowering::While(const Stmt& stmt) {
  Label* top = NewLabel();
  Label* bottom = NewLabel();
  Label* orelse = NewLabel();
  Label* done = NewLabel();
  Bind(top);
  {
    TempScope scope(this);
    Branch(*stmt.test, false, orelse);
  }
  loops_.push_back({bottom, done});
  Block(stmt.body);
  loops_.pop_back();
  Bind(bottom);
  line_ = stmt.loc.line;
  EmitJump(Op::LOOP, 0, 0, 0, top);
  Bind(orelse);
  Block(stmt.orelse);
  Bind(done);
}

// Whether any statement of `body` (nested blocks included) binds `name`: as an
// assignment target, a loop target or an import.
bool Lowering::AssignedIn(const std::vector<StmtPtr>& body, const std::string& name) const {
  std::function<bool(const Expr&)> target_names = [&](const Expr& target) {
    if (target.kind == ExprKind::kName) return target.text == name;
    if (target.kind == ExprKind::kTuple || target.kind == ExprKind::kList) {
      for (const ExprPtr& child : target.children) {
        if (target_names(*child)) return true;
      }
    }
    return false;
  };
  for (const StmtPtr& stmt : body) {
    for (const ExprPtr& target : stmt->targets) {
      if (target && target_names(*target)) return true;
    }
    if (stmt->kind == StmtKind::kImport) {
      for (const auto& [module, as_name] : stmt->names) {
        if ((as_name.empty() ? module.substr(0, module.find('.')) : as_name) == name) return true;
      }
    }
    if (AssignedIn(stmt->body, name) || AssignedIn(stmt->orelse, name)) return true;
  }
  return false;
}

// Finds the range-loop targets that may be the loop's counter itself
// (loop_private_), which saves a MOVE per iteration.
void Lowering::FindLoopPrivateLocals() {
  // A range loop may count in its target variable directly, even though an
  // empty range must leave the variable untouched, when nothing can observe the
  // difference: the variable is only ever assigned as the target of range loops
  // (none nested in another over it), and only read inside their bodies.
  std::map<std::string, bool> candidate;
  std::function<void(const Expr&, const std::vector<std::string>&)> reads = [&](const Expr& expr,
                                                                                const std::vector<std::string>& loops) {
    if (expr.kind == ExprKind::kName) {
      if (std::find(loops.begin(), loops.end(), expr.text) == loops.end()) candidate[expr.text] = false;
    }
    for (const ExprPtr& child : expr.children) {
      if (child) reads(*child, loops);
    }
    for (const Keyword& keyword : expr.keywords) reads(*keyword.value, loops);
  };
  std::function<void(const std::vector<StmtPtr>&, std::vector<std::string>&)> walk =
      [&](const std::vector<StmtPtr>& body, std::vector<std::string>& loops) {
        for (const StmtPtr& stmt : body) {
          bool is_range_loop = stmt->kind == StmtKind::kFor && stmt->targets[0]->kind == ExprKind::kName &&
                               stmt->value->kind == ExprKind::kCall && stmt->value->resolution == Resolution::kBuiltin &&
                               stmt->value->index == static_cast<int>(Builtin::kRANGE);
          if (is_range_loop) {
            const std::string& name = stmt->targets[0]->text;
            if (!candidate.count(name)) candidate[name] = true;
            if (std::find(loops.begin(), loops.end(), name) != loops.end()) candidate[name] = false;
            reads(*stmt->value, loops);
            loops.push_back(name);
            walk(stmt->body, loops);
            loops.pop_back();
            walk(stmt->orelse, loops);
            continue;
          }
          for (const ExprPtr& target : stmt->targets) {
            if (!target) continue;
            std::function<void(const Expr&)> assigned = [&](const Expr& t) {
              if (t.kind == ExprKind::kName) candidate[t.text] = false;
              else if (t.kind == ExprKind::kTuple || t.kind == ExprKind::kList) {
                for (const ExprPtr& child : t.children) assigned(*child);
              } else {
                reads(t, loops);
              }
            };
            assigned(*target);
            if (stmt->kind == StmtKind::kAugAssign) reads(*target, loops);
          }
          if (stmt->value) reads(*stmt->value, loops);
          if (stmt->test) reads(*stmt->test, loops);
          if (stmt->kind == StmtKind::kImport) {
            for (const auto& [module, as_name] : stmt->names) {
              candidate[as_name.empty() ? module.substr(0, module.find('.')) : as_name] = false;
            }
          }
          walk(stmt->body, loops);
          walk(stmt->orelse, loops);
        }
      };
  std::vector<std::string> loops;
  walk(fn_.def->body, loops);
  for (const auto& [name, is_private] : candidate) {
    if (!is_private) continue;
    auto it = fn_.local_index.find(name);
    if (it == fn_.local_index.end()) continue;
    const LocalVariable& local = fn_.locals[it->second];
    if (!local.is_param && local.type.is_int() && !local.needs_bound_check) loop_private_.insert(name);
  }
}

// `for target in iter: body else: orelse`, by what is iterated:
// enumerate/zip forms over buffers and ranges (ForCounted), reversed(range)
// (ForReversed), range with one to three arguments (ForRange), a Buffer
// (ForBuffer, by index), and anything else through Python's iterator protocol
// (ForObject).
void Lowering::For(const Stmt& stmt) {
  const Expr& iter = *stmt.value;
  if (stmt.iter_form == IterForm::kEnumerate || stmt.iter_form == IterForm::kEnumerateZip ||
      stmt.iter_form == IterForm::kZip) {
    ForCounted(stmt);
    return;
  }
  if (stmt.iter_form == IterForm::kReversed) {
    ForReversed(stmt);
    return;
  }
  if (stmt.iter_form == IterForm::kPrange) {
    ForPrange(stmt);
    return;
  }
  if (iter.kind == ExprKind::kCall && iter.resolution == Resolution::kBuiltin &&
      iter.index == static_cast<int>(Builtin::kRANGE) && iter.type.is_object() && iter.type.known_class &&
      std::strcmp(iter.type.known_class, "range") == 0 && iter.children.size() >= 2 && iter.children.size() <= 4) {
    ForRange(stmt);
    return;
  }
  int value = ValueOf(iter);
  if (iter.type.is_buffer()) {
    ForBuffer(stmt, value, iter.type);
  } else {
    ForObject(stmt, Coerce(value, iter.type, Type::Object()));
  }
}

// `for i in range(start, stop, step)` as a counted loop: start, stop and step
// are evaluated once, before the loop, as range() evaluates them (stop and
// step copied when the body could reassign them). A step of one uses JLE_I
// and FORLOOP_INC, any other FORPREP (which raises ValueError for a zero
// step, as range() does) and FORLOOP. The counter never advances past the
// last value, so it cannot overflow; the target is assigned from it at the
// top of each iteration, or is the counter itself when nothing can tell the
// difference (FindLoopPrivateLocals) or when an empty range restores it. An
// empty range leaves the target unassigned, as in Python.
void Lowering::ForRange(const Stmt& stmt) {
  const Expr& iter = *stmt.value;
  const Expr& target = *stmt.targets[0];
  size_t count = iter.children.size() - 1;
  // range() evaluates its arguments once, before the loop.
  auto stable = [&](const Expr& expr) {
    int reg = Coerce(ValueOf(expr), expr.type, Type::Int());
    if (reg >= kConstantBase || IsTemp(reg)) return reg;
    if (expr.kind == ExprKind::kName && !AssignedIn(stmt.body, expr.text) &&
        !(target.kind == ExprKind::kName && target.text == expr.text)) {
      return reg;
    }
    int copy = Temp(Kind::kInt);
    Emit(Op::MOVE_I, copy, reg);
    return copy;
  };
  int start = count >= 2 ? Coerce(ValueOf(*iter.children[1]), iter.children[1]->type, Type::Int()) : ConstInt(0);
  int stop = stable(*iter.children[count >= 2 ? 2 : 1]);
  int step = count == 3 ? stable(*iter.children[3]) : ConstInt(1);
  bool step_is_one = count < 3 || (iter.children[3]->kind == ExprKind::kInt && iter.children[3]->int_value == 1);

  const bool int_local = target.kind == ExprKind::kName && target.resolution == Resolution::kLocal &&
                         fn_.locals[target.index].type.is_int() && !AssignedIn(stmt.body, target.text);
  bool direct = int_local && loop_private_.count(target.text);
  // A step-one loop whose body leaves its int target alone counts in the
  // target too, though something may read it after the loop: only an empty
  // range could tell, which leaves the target as it was, so the entry test
  // jumps to a restore of the value saved before the counter took it over.
  // (A loop that runs ends, or breaks, with the target at its last value,
  // which is the counter's: FORLOOP_INC never steps past it.)
  int saved = -1;
  if (int_local && !direct && step_is_one) {
    direct = true;
    saved = Temp(Kind::kInt);
    Emit(Op::MOVE_I, saved, LocalRegister(target.index));
  }
  int counter = direct ? LocalRegister(target.index) : Temp(Kind::kInt);
  Emit(Op::MOVE_I, counter, start);

  Label* body = NewLabel();
  Label* next = NewLabel();
  Label* exit = NewLabel();
  Label* done = NewLabel();
  Label* empty = saved >= 0 ? NewLabel() : exit;
  line_ = stmt.loc.line;
  CountedLoop(stmt, {counter, stop, step, step_is_one, direct}, body, next, empty, done);
  if (saved >= 0) {
    EmitJump(Op::JMP, 0, 0, 0, exit);
    Bind(empty);
    Emit(Op::MOVE_I, counter, saved);
  }
  Bind(exit);
  Block(stmt.orelse);
  Bind(done);
}

// The loop of ForRange and ForPrange: the entry test (JLE_I, or FORPREP for a
// step other than one) jumping to `exit` when the range is empty, the target
// assigned from the counter (or the counter itself, `direct`), the body, and
// the back edge (FORLOOP_INC or FORLOOP). `break` jumps to `done`.
void Lowering::CountedLoop(const Stmt& stmt, const CountedRange& range, Label* body, Label* next, Label* exit,
                           Label* done) {
  if (range.step_is_one) EmitJump(Op::JLE_I, range.stop, range.counter, 0, exit);
  else EmitJump(Op::FORPREP, range.counter, range.stop, range.step, exit);
  Bind(body);
  const Expr& target = *stmt.targets[0];
  if (!range.direct) {
    TempScope scope(this);
    StoreTarget(target, range.counter, Type::Int());
  } else {
    SetBound(target.index);
  }
  loops_.push_back({next, done});
  Block(stmt.body);
  loops_.pop_back();
  Bind(next);
  line_ = stmt.loc.line;
  if (range.step_is_one) EmitJump(Op::FORLOOP_INC, range.counter, range.stop, 0, body);
  else EmitJump(Op::FORLOOP, range.counter, range.stop, range.step, body);
}

// `for i in ppy.prange(start, stop, step)`: ForRange's loop, run in chunks
// on the prange threads (vm/prange.h, which shows the code):
//
//     PRANGE           counter, limit, step, exit
//     PRANGE_REDUCE_*  reduction, op         (the checker's prange_reductions)
//     JLE_I limit, counter, end              (FORPREP counter, limit, step, end)
//   body:
//     target := counter; the body
//   next:
//     FORLOOP_INC counter, limit, body       (FORLOOP counter, limit, step, body)
//   end:
//     PRANGE_END
//   exit:
//     the else block
//
// Each chunk sets its own counter and limit, so both are registers of their
// own here, never a local or a constant; the test before the body (which the
// verifier and the machine code's bounds-check hoisting require of a counted
// loop) jumps to the PRANGE_END, which ends a chunk.
void Lowering::ForPrange(const Stmt& stmt) {
  const Expr& iter = *stmt.value;
  const size_t count = iter.children.size() - 1;
  int start = count >= 2 ? Coerce(ValueOf(*iter.children[1]), iter.children[1]->type, Type::Int()) : ConstInt(0);
  const Expr& stop_expr = *iter.children[count >= 2 ? 2 : 1];
  int stop = Coerce(ValueOf(stop_expr), stop_expr.type, Type::Int());
  int step = ConstInt(1);
  bool step_is_one = true;
  if (count == 3) {
    step = Coerce(ValueOf(*iter.children[3]), iter.children[3]->type, Type::Int());
    step_is_one = iter.children[3]->kind == ExprKind::kInt && iter.children[3]->int_value == 1;
    if (step < kConstantBase && !IsTemp(step)) {  // the body may reassign a local
      int copy = Temp(Kind::kInt);
      Emit(Op::MOVE_I, copy, step);
      step = copy;
    }
  }
  const int counter = Temp(Kind::kInt);
  const int limit = Temp(Kind::kInt);
  Emit(Op::MOVE_I, counter, start);
  Emit(Op::MOVE_I, limit, stop);

  Label* body = NewLabel();
  Label* next = NewLabel();
  Label* end = NewLabel();
  Label* exit = NewLabel();
  line_ = stmt.loc.line;
  EmitJump(Op::PRANGE, counter, limit, step, exit);
  for (const auto& [name, op] : stmt.prange_reductions) {
    const int slot = fn_.local_index.at(name);
    const bool is_float = fn_.locals[slot].type.is_float();
    Emit(is_float ? Op::PRANGE_REDUCE_F : Op::PRANGE_REDUCE_I, LocalRegister(slot), 0, op);
  }
  CountedLoop(stmt, {counter, limit, step, step_is_one, false}, body, next, end, end);  // (the checker allows no break)
  Bind(end);
  Emit(Op::PRANGE_END);
  Bind(exit);
  Block(stmt.orelse);
}

// `for x in buf` over a Buffer: a counted loop (FORLOOP_INC) over the indexes
// 0 .. len(buf) - 1, the length read once before the loop (a borrowed view
// cannot be resized while the call holds it), loading each element into the
// target. The loop keeps the view it started with even if the body rebinds
// the name, as Python's iterator keeps its object.
void Lowering::ForBuffer(const Stmt& stmt, int buffer, Type buffer_type) {
  const Expr& target = *stmt.targets[0];
  if (buffer < kConstantBase && !IsTemp(buffer)) {
    // Iterate the view the loop started with, whatever the body rebinds.
    int copy = TempFor(buffer_type);
    Emit(Op::MOVE_U, copy, buffer);
    buffer = copy;
  }
  int index = Temp(Kind::kInt);
  int length = Temp(Kind::kInt);
  Emit(Op::MOVE_I, index, ConstInt(0));
  Emit(Op::LEN_U, length, buffer);
  Label* body = NewLabel();
  Label* next = NewLabel();
  Label* exit = NewLabel();
  Label* done = NewLabel();
  EmitJump(Op::JLE_I, length, index, 0, exit);
  Bind(body);
  {
    TempScope scope(this);
    Type element = buffer_type.element();
    if (target.kind == ExprKind::kName && target.resolution == Resolution::kLocal &&
        fn_.locals[target.index].type == element) {
      LoadElementAt(buffer, buffer_type, index, LocalRegister(target.index));
      SetBound(target.index);
    } else {
      StoreTarget(target, LoadElementAt(buffer, buffer_type, index, -1), element);
    }
  }
  loops_.push_back({next, done});
  Block(stmt.body);
  loops_.pop_back();
  Bind(next);
  line_ = stmt.loc.line;
  EmitJump(Op::FORLOOP_INC, index, length, 0, body);
  Bind(exit);
  Block(stmt.orelse);
  Bind(done);
}

// ---- Counted forms: enumerate, zip and reversed ----------------------------------------------
//
// The checker marks `for ... in enumerate(X)`, `zip(X, Y, ...)` and
// `reversed(X)` whose operands are Buffers or range(...) calls with a literal
// step (see CountedForm). These loops make no iterator: a buffer operand is
// read at a counted index, a range operand keeps its current element in a
// register. Every operand and argument is evaluated once, left to right,
// before the loop, as the call's arguments would be. A buffer's length is read
// once, at entry, as `for x in buf` does (ForBuffer): the view is borrowed for
// the whole call, and an exporter cannot resize while a view is out (array
// raises BufferError, numpy refuses to resize a referenced array), so nothing
// a loop body can do makes the length differ from what a Python iterator
// would see on each step.

// A copy of an int value that the loop body cannot change: constants and
// temporaries as they are, anything else (a local, which the body may assign)
// moved into a new temporary.
int Lowering::StableInt(const Expr& expr) {
  int reg = Coerce(ValueOf(expr), expr.type, Type::Int());
  if (reg >= kConstantBase || IsTemp(reg)) return reg;
  int copy = Temp(Kind::kInt);
  Emit(Op::MOVE_I, copy, reg);
  return copy;
}

// Evaluates the arguments of a range(...) operand, in order: *start (0 when
// absent) and *stop, and gives its literal step (the checker required one
// that is nonzero). They are read only before the loop, and evaluating an
// expression assigns no local, so the registers may be the locals' own.
void Lowering::RangeArguments(const Expr& range, int* start, int* stop, int64_t* step) {
  size_t count = range.children.size() - 1;
  auto value = [&](const Expr& expr) { return Coerce(ValueOf(expr), expr.type, Type::Int()); };
  *start = count >= 2 ? value(*range.children[1]) : ConstInt(0);
  *stop = value(*range.children[count >= 2 ? 2 : 1]);
  *step = 1;
  if (count == 3) {
    const Expr& literal = *range.children[3];
    *step = literal.kind == ExprKind::kInt ? literal.int_value : -literal.children[0]->int_value;
  }
}

// Emits enumerate(X[, start]), zip(X, Y, ...) and enumerate(zip(X, Y, ...)
// [, start]) as one counted loop:
//
//     operands, start          evaluated in order; each buffer copied
//     n := min(len(U) ...)     over the buffer operands
//     e := range start; lim := last value from which e can still step
//     if a range is empty goto exit
//     j := 0; if n <= j goto exit          (when there are buffer operands)
//   body:
//     targets := (start + j or the count), U[j] ..., e ...
//     <body>
//   next:
//     for each range: if e is past lim goto exit; e += step
//     count += 1                           (enumerate with no buffer operand)
//     FORLOOP_INC j, n, body               (or LOOP body, with no buffer)
//   exit:
//     <else>
//
// The buffer reads are the bounds-checked loads of `for x in buf`, indexed by
// the FORLOOP_INC counter, so the JIT hoists their checks out of the loop
// (j < n <= len of each). A range element is only advanced once the check
// proved that the next one exists, so no step can overflow where Python's
// iterator would just stop: for a step s > 0 the next element e + s < stop
// exists iff e < lim := max(stop, INT64_MIN + s) - s, and symmetrically for
// s < 0. enumerate's value is start + j, computed in the body, so that it
// overflows exactly when Python's value would leave 64 bits (a typed int);
// with no buffer it is a counter advanced only when another step follows.
void Lowering::ForCounted(const Stmt& stmt) {
  const Expr& iter = *stmt.value;
  bool enumerate = stmt.iter_form != IterForm::kZip;
  // The operands: zip's arguments (inside enumerate for kEnumerateZip), or
  // enumerate's one.
  const Expr& zip = stmt.iter_form == IterForm::kEnumerateZip ? *iter.children[1] : iter;
  size_t operands_end = stmt.iter_form == IterForm::kEnumerate ? 2 : zip.children.size();
  std::vector<Expr*> targets = CountedTargets(stmt);

  struct Operand {
    Type type;  // the buffer's type, or int for a range
    bool is_range = false;
    int reg = -1;    // the buffer, or the range's current element
    int stop = -1;   // a range's stop
    int limit = -1;  // a range's last element that has a next one (see above)
    int64_t step = 1;
  };
  std::vector<Operand> operands;
  for (size_t i = 1; i < operands_end; ++i) {
    const Expr& expr = *zip.children[i];
    Operand operand;
    if (expr.kind == ExprKind::kCall && expr.resolution == Resolution::kBuiltin &&
        expr.index == static_cast<int>(Builtin::kRANGE)) {
      operand.is_range = true;
      operand.type = Type::Int();
      int start;
      RangeArguments(expr, &start, &operand.stop, &operand.step);
      operand.reg = Temp(Kind::kInt);
      Emit(Op::MOVE_I, operand.reg, start);
    } else {
      operand.type = expr.type;
      operand.reg = ValueOf(expr);
      if (operand.reg < kConstantBase && !IsTemp(operand.reg)) {
        // Iterate the view the loop started with, whatever the body rebinds.
        int copy = TempFor(expr.type);
        Emit(Op::MOVE_U, copy, operand.reg);
        operand.reg = copy;
      }
    }
    operands.push_back(operand);
  }
  int start = -1;  // enumerate's start, when given
  if (enumerate) {
    if (iter.children.size() == 3) start = StableInt(*iter.children[2]);
    else if (!iter.keywords.empty()) start = StableInt(*iter.keywords[0].value);
  }

  Label* body = NewLabel();
  Label* next = NewLabel();
  Label* exit = NewLabel();
  Label* done = NewLabel();
  line_ = stmt.loc.line;
  int length = -1;
  for (const Operand& operand : operands) {
    if (operand.is_range) continue;
    if (length < 0) {
      length = Temp(Kind::kInt);
      Emit(Op::LEN_U, length, operand.reg);
    } else {
      TempScope scope(this);
      int other = Temp(Kind::kInt);
      Emit(Op::LEN_U, other, operand.reg);
      Emit(Op::MIN_I, length, length, other);
    }
  }
  for (Operand& operand : operands) {
    if (!operand.is_range) continue;
    int64_t step = operand.step;
    operand.limit = Temp(Kind::kInt);
    if (step > 0) {
      Emit(Op::MAX_I, operand.limit, operand.stop, ConstInt(INT64_MIN + step));
      Emit(Op::SUB_I, operand.limit, operand.limit, ConstInt(step));
      EmitJump(Op::JLE_I, operand.stop, operand.reg, 0, exit);
    } else {
      Emit(Op::MIN_I, operand.limit, operand.stop, ConstInt(INT64_MAX + step));
      Emit(Op::SUB_I, operand.limit, operand.limit, ConstInt(step));
      EmitJump(Op::JLE_I, operand.reg, operand.stop, 0, exit);
    }
  }
  int index = -1;  // j, with buffer operands
  int count = -1;  // enumerate's value, with none
  if (length >= 0) {
    index = Temp(Kind::kInt);
    Emit(Op::MOVE_I, index, ConstInt(0));
    EmitJump(Op::JLE_I, length, index, 0, exit);
  } else if (enumerate) {
    count = Temp(Kind::kInt);
    Emit(Op::MOVE_I, count, start >= 0 ? start : ConstInt(0));
  }

  Bind(body);
  {
    // The step's values, in target order. A local target of exactly the
    // value's type gets it in its own register; the others are stored after
    // all values are made, as Python unpacks a finished tuple.
    TempScope scope(this);
    std::vector<std::pair<int, Type>> values;
    for (size_t k = 0; k < targets.size(); ++k) {
      bool is_count = enumerate && k == 0;
      const Operand* operand = is_count ? nullptr : &operands[enumerate ? k - 1 : k];
      Type type = is_count || operand->is_range ? Type::Int() : operand->type.element();
      const Expr& child = *targets[k];
      bool direct = child.kind == ExprKind::kName && child.resolution == Resolution::kLocal &&
                    fn_.locals[child.index].type == type;
      int dest = direct ? LocalRegister(child.index) : -1;
      int reg;
      if (is_count) {
        if (count >= 0) {
          reg = count;
          if (dest >= 0) Emit(Op::MOVE_I, dest, count);
        } else if (start >= 0) {
          reg = Destination(dest, Kind::kInt);
          Emit(Op::ADD_I, reg, start, index);
        } else {
          reg = Destination(dest, Kind::kInt);
          Emit(Op::MOVE_I, reg, index);
        }
      } else if (operand->is_range) {
        reg = operand->reg;
        if (dest >= 0) Emit(Op::MOVE_I, dest, reg);
      } else {
        reg = LoadElementAt(operand->reg, operand->type, index, dest);
      }
      if (dest >= 0) {
        SetBound(child.index);
        values.push_back({-1, type});
      } else {
        values.push_back({reg, type});
      }
    }
    for (size_t k = 0; k < values.size(); ++k) {
      if (values[k].first >= 0) StoreTarget(*targets[k], values[k].first, values[k].second);
    }
  }
  loops_.push_back({next, done});
  Block(stmt.body);
  loops_.pop_back();
  Bind(next);
  line_ = stmt.loc.line;
  for (const Operand& operand : operands) {
    if (!operand.is_range) continue;
    if (operand.step > 0) EmitJump(Op::JLE_I, operand.limit, operand.reg, 0, exit);
    else EmitJump(Op::JLE_I, operand.reg, operand.limit, 0, exit);
    Emit(Op::ADD_I, operand.reg, operand.reg, ConstInt(operand.step));
  }
  if (count >= 0) Emit(Op::ADD_I, count, count, ConstInt(1));
  if (index >= 0) EmitJump(Op::FORLOOP_INC, index, length, 0, body);
  else EmitJump(Op::LOOP, 0, 0, 0, body);
  Bind(exit);
  Block(stmt.orelse);
  Bind(done);
}

// Emits reversed(X). For a buffer the index counts down from len - 1 to 0
// with FORLOOP (step -1); the loads are bounds-checked in the loop, since the
// JIT hoists checks only for counters that count up. For range(a, b, s) the
// element starts at the range's last value and steps by -s until it passes a:
//
//     e := last value: b - 1 - ((b - 1 - a) mod s), for s > 0, computed as
//          ((b - 1) mod s - a mod s) mod s so that no difference overflows;
//          for s < 0, b + 1 + ((a - (b + 1)) mod -s) likewise
//     lim := the smallest (s > 0) or largest (s < 0) value that has a next
//     if the range is empty goto exit
//   body: target := e; <body>
//   next: if e is past lim goto exit; e -= s; LOOP body
//   exit: <else>
//
// Python's reversed(range) yields the same values without overflow, and so
// does this: e - s is only computed when it is an element.
void Lowering::ForReversed(const Stmt& stmt) {
  const Expr& iter = *stmt.value;
  const Expr& target = *stmt.targets[0];
  const Expr& operand = *iter.children[1];
  Label* body = NewLabel();
  Label* next = NewLabel();
  Label* exit = NewLabel();
  Label* done = NewLabel();
  bool is_range = operand.kind == ExprKind::kCall && operand.resolution == Resolution::kBuiltin &&
                  operand.index == static_cast<int>(Builtin::kRANGE);
  Type element = is_range ? Type::Int() : operand.type.element();
  int element_reg = Temp(Kind::kInt);  // a range's element, or a buffer's index
  int buffer = -1, limit = -1;
  int64_t step = 1;
  if (is_range) {
    int start, stop;
    RangeArguments(operand, &start, &stop, &step);
    line_ = stmt.loc.line;
    int last = element_reg;
    limit = Temp(Kind::kInt);
    if (step > 0) {
      EmitJump(Op::JLE_I, stop, start, 0, exit);
      Emit(Op::SUB_I, last, stop, ConstInt(1));
      if (step != 1) {
        TempScope scope(this);
        int offset = Temp(Kind::kInt), other = Temp(Kind::kInt);
        Emit(Op::MOD_I, offset, last, ConstInt(step));
        Emit(Op::MOD_I, other, start, ConstInt(step));
        Emit(Op::SUB_I, offset, offset, other);
        Emit(Op::MOD_I, offset, offset, ConstInt(step));
        Emit(Op::SUB_I, last, last, offset);
      }
      Emit(Op::MIN_I, limit, start, ConstInt(INT64_MAX - step));
      Emit(Op::ADD_I, limit, limit, ConstInt(step));
    } else {
      int64_t magnitude = -step;
      EmitJump(Op::JLE_I, start, stop, 0, exit);
      Emit(Op::ADD_I, last, stop, ConstInt(1));
      if (magnitude != 1) {
        TempScope scope(this);
        int offset = Temp(Kind::kInt), other = Temp(Kind::kInt);
        Emit(Op::MOD_I, offset, start, ConstInt(magnitude));
        Emit(Op::MOD_I, other, last, ConstInt(magnitude));
        Emit(Op::SUB_I, offset, offset, other);
        Emit(Op::MOD_I, offset, offset, ConstInt(magnitude));
        Emit(Op::ADD_I, last, last, offset);
      }
      Emit(Op::MAX_I, limit, start, ConstInt(INT64_MIN + magnitude));
      Emit(Op::SUB_I, limit, limit, ConstInt(magnitude));
    }
  } else {
    buffer = ValueOf(operand);
    if (buffer < kConstantBase && !IsTemp(buffer)) {
      int copy = Temp(Kind::kBuffer, operand.type.elem);
      Emit(Op::MOVE_U, copy, buffer);
      buffer = copy;
    }
    line_ = stmt.loc.line;
    Emit(Op::LEN_U, element_reg, buffer);
    Emit(Op::SUB_I, element_reg, element_reg, ConstInt(1));
    EmitJump(Op::JLT_I, element_reg, ConstInt(0), 0, exit);
  }

  Bind(body);
  {
    TempScope scope(this);
    bool direct = target.kind == ExprKind::kName && target.resolution == Resolution::kLocal &&
                  fn_.locals[target.index].type == element;
    int dest = direct ? LocalRegister(target.index) : -1;
    int value;
    if (is_range) {
      value = element_reg;
      if (direct) Emit(Op::MOVE_I, dest, value);
    } else {
      value = LoadElementAt(buffer, operand.type, element_reg, dest);
    }
    if (direct) SetBound(target.index);
    else StoreTarget(target, value, element);
  }
  loops_.push_back({next, done});
  Block(stmt.body);
  loops_.pop_back();
  Bind(next);
  line_ = stmt.loc.line;
  if (is_range) {
    if (step > 0) {
      EmitJump(Op::JLT_I, element_reg, limit, 0, exit);
      Emit(Op::SUB_I, element_reg, element_reg, ConstInt(step));
    } else {
      EmitJump(Op::JLT_I, limit, element_reg, 0, exit);
      Emit(Op::ADD_I, element_reg, element_reg, ConstInt(-step));
    }
    EmitJump(Op::LOOP, 0, 0, 0, body);
  } else {
    EmitJump(Op::FORLOOP, element_reg, ConstInt(-1), ConstInt(-1), body);
  }
  Bind(exit);
  Block(stmt.orelse);
  Bind(done);
}

// `for x in obj` through Python's protocol: GET_ITER once, then FOR_ITER at the
// top of each iteration (which leaves for the else block when the iterator is
// exhausted), the item stored into the target, the body, and a LOOP back edge.
void Lowering::ForObject(const Stmt& stmt, int iterable) {
  int iterator = Temp(Kind::kObject);
  Emit(Op::GET_ITER, iterator, iterable);
  Label* top = NewLabel();
  Label* next = NewLabel();
  Label* exit = NewLabel();
  Label* done = NewLabel();
  int item = Temp(Kind::kObject);
  Bind(top);
  line_ = stmt.loc.line;
  EmitJump(Op::FOR_ITER, item, iterator, 0, exit);
  {
    TempScope scope(this);
    StoreTarget(*stmt.targets[0], item, Type::Object());
  }
  loops_.push_back({next, done});
  Block(stmt.body);
  loops_.pop_back();
  Bind(next);
  line_ = stmt.loc.line;
  EmitJump(Op::LOOP, 0, 0, 0, top);
  Bind(exit);
  Block(stmt.orelse);
  Bind(done);
}

// `return value` as RET_I, RET_F or RET_O by the function's result kind
// (converting the value to the declared result type first), RET_NONE for a
// bare return or `return None` in a function returning None. A bare return
// in a typed function cannot occur: the checker refuses it.
void Lowering::Return(const Stmt& stmt) {
  Type result = fn_.result;
  if (!stmt.value) {
    if (result.is_object()) Emit(Op::RET_NONE);
    return;
  }
  int value = ValueOf(*stmt.value);
  line_ = stmt.loc.line;
  if (result.is_complex()) {
    Emit(Op::RET_O, Coerce(value, stmt.value->type, Type::Object()));  // boxed, see ValueType::kComplex
    return;
  }
  switch (result.kind_of_register()) {
    case Kind::kInt: Emit(Op::RET_I, Coerce(value, stmt.value->type, result)); break;
    case Kind::kFloat: Emit(Op::RET_F, Coerce(value, stmt.value->type, result)); break;
    default:
      if (result.kind == TypeKind::kNone && stmt.value->type.kind == TypeKind::kNone) Emit(Op::RET_NONE);
      else Emit(Op::RET_O, Coerce(value, stmt.value->type, Type::Object()));
      break;
  }
}

// `import a.b` binds the top-level package `a` (IMPORT returns it, as
// __import__ does); `import a.b as c` binds the submodule, reached by
// LOAD_ATTR from the package, as Python binds it.
void Lowering::Import(const Stmt& stmt) {
  for (const auto& [module, as_name] : stmt.names) {
    std::string bound = as_name.empty() ? module.substr(0, module.find('.')) : as_name;
    int slot = fn_.local_index.at(bound);
    int reg = LocalRegister(slot);
    Emit(Op::IMPORT, reg, 0, 0, NameIndex(module));
    if (!as_name.empty()) {
      // `import a.b as c` binds the submodule.
      size_t start = module.find('.');
      while (start != std::string::npos) {
        size_t end = module.find('.', start + 1);
        std::string part = module.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
        Emit(Op::LOAD_ATTR, reg, reg, 0, NameIndex(part));
        start = end;
      }
    }
    SetBound(slot);
  }
}

// ---- Driver -------------------------------------------------------------------------------------

// Lowers the whole function: one register per local (parameters first, in
// order), a bound flag for each int or float local that may be read before it
// is assigned, typed module constants loaded once at entry, then the body. A
// function that can fall off its end gets the return Python would do (None;
// 0 for a typed result, which the checker proves cannot be reached).
absl::StatusOr<std::unique_ptr<FunctionCode>> Lowering::Run() {
  free_.resize(kKindCount * kElemTypeCount * (kMaxDims + 1));
  // Parameters, then locals.
  for (const LocalVariable& local : fn_.locals) {
    Type type = local.type;
    // An annotated int (a parameter or local) keeps 64 bits strictly; any
    // other int register may deoptimize on overflow (RegisterType::annotated).
    const bool annotated = type.kind_of_register() == Kind::kInt && (local.annotated || local.is_param);
    if (type.is_complex() && !local.is_param) {
      local_registers_.push_back(NewRegister({Kind::kFloat}));
      NewRegister({Kind::kFloat});
      is_local_.insert(is_local_.end(), 2, true);
      complex_locals_.insert(local_registers_.back());
      continue;
    }
    local_registers_.push_back(NewRegister(type.register_type(annotated)));
    is_local_.push_back(true);
  }
  // A complex parameter arrives boxed in its parameter register and lives in a
  // pair of its own, unboxed once at entry (see below).
  std::vector<std::pair<int, int>> complex_params;  // (boxed, pair)
  for (size_t i = 0; i < fn_.locals.size(); ++i) {
    if (!fn_.locals[i].is_param || !fn_.locals[i].type.is_complex()) continue;
    int pair = NewRegister({Kind::kFloat});
    NewRegister({Kind::kFloat});
    is_local_.insert(is_local_.end(), 2, true);
    complex_params.emplace_back(local_registers_[i], pair);
    local_registers_[i] = pair;
    complex_locals_.insert(pair);
  }
  bound_flags_.assign(fn_.locals.size(), -1);
  for (size_t i = 0; i < fn_.locals.size(); ++i) {
    const LocalVariable& local = fn_.locals[i];
    // Ints and floats have no "unassigned" value, so a flag says whether the
    // local is bound; objects and buffers are null until assigned.
    Kind kind = local.type.kind_of_register();
    if (local.needs_bound_check && (kind == Kind::kInt || kind == Kind::kFloat || local.type.is_complex())) {
      bound_flags_[i] = NewRegister({Kind::kInt, ElemType::kNone});
      is_local_.push_back(true);
    }
  }
  first_temp_ = static_cast<int>(registers_.size());
  FindLoopPrivateLocals();

  // Annotated module constants are read once, when the call starts.
  line_ = fn_.def->loc.line;
  for (const auto& [name, type] : fn_.typed_globals) {
    int reg = NewRegister({type.kind_of_register(), ElemType::kNone});
    is_local_.push_back(true);
    Op op = type.is_float() ? Op::LOAD_GLOBAL_F : type.is_bool() ? Op::LOAD_GLOBAL_B : Op::LOAD_GLOBAL_I;
    Emit(op, reg, 0, 0, NameIndex(name));
    typed_global_registers_.push_back(reg);
  }
  for (const auto& [boxed, pair] : complex_params) Emit(Op::UNBOX_C, pair, boxed);
  first_temp_ = static_cast<int>(registers_.size());

  Block(fn_.def->body);
  bool jump_to_end = std::any_of(labels_.begin(), labels_.end(), [&](const auto& label) {
    return !label->uses.empty() && label->target == static_cast<int>(code_.size());
  });
  if (!LastIsEnd() || jump_to_end) {
    // Falling off the end returns None. A typed function cannot (the checker
    // says so), but the code must still end in a return.
    line_ = fn_.def->body.empty() ? fn_.def->loc.line : fn_.def->body.back()->loc.end_line;
    switch (fn_.result.kind_of_register()) {
      case Kind::kInt: Emit(Op::RET_I, ConstInt(0)); break;
      case Kind::kFloat: Emit(Op::RET_F, ConstFloat(0.0)); break;
      default: Emit(Op::RET_NONE); break;
    }
  }
  return Finish();
}

// Lays the virtual registers out as the VM expects (parameters, constants,
// then locals and temporaries), failing if they exceed the 8-bit register
// operands, resolves labels to pcs, renumbers every register operand by its
// mode in opcodes.def, and records which buffer parameters the code stores
// into, so that calls ask for writable views.
absl::StatusOr<std::unique_ptr<FunctionCode>> Lowering::Finish() {
  const int num_params = static_cast<int>(fn_.def->params.size());
  auto is_register = [](Mode mode) {
    return mode != Mode::k__ && mode != Mode::kJ && mode != Mode::kK && mode != Mode::kP && mode != Mode::kN &&
           mode != Mode::kM && mode != Mode::kY && mode != Mode::kE && mode != Mode::kQ && mode != Mode::kV;
  };
  // Only the constants some instruction reads get a register (a literal that
  // meets only object code is used as its object constant: see Coerce).
  std::vector<int> constant_slot(constants_.size(), -1);
  for (const VInstr& in : code_) {
    const OpInfo& info = InfoOf(in.op);
    const Mode modes[4] = {info.a, info.b, info.c, info.d};
    const int64_t values[4] = {in.a, in.b, in.c, in.d};
    for (int field = 0; field < 4; ++field) {
      if (is_register(modes[field]) && values[field] >= kConstantBase) constant_slot[values[field] - kConstantBase] = 0;
    }
  }
  std::vector<ConstantValue> constants;
  for (size_t i = 0; i < constants_.size(); ++i) {
    if (constant_slot[i] < 0) continue;
    constant_slot[i] = static_cast<int>(constants.size());
    constants.push_back(constants_[i]);
  }
  const int num_constants = static_cast<int>(constants.size());
  const int total = static_cast<int>(registers_.size()) + num_constants;
  if (total > kMaxRegisters) {
    return absl::ResourceExhaustedError(
        absl::StrCat("needs ", total, " registers; the instruction format addresses ", kMaxRegisters));
  }
  auto layout = [&](int reg) {
    if (reg >= kConstantBase) return num_params + constant_slot[reg - kConstantBase];
    if (reg < num_params) return reg;
    return reg + num_constants;
  };
  auto fn = std::make_unique<FunctionCode>();
  fn->name = fn_.name;
  fn->qualname = fn_.name;
  fn->first_line = fn_.def->loc.line;
  for (size_t i = 0; i < fn_.def->params.size(); ++i) {
    const ParamSyntax& syntax = fn_.def->params[i];
    Param param;
    param.name = syntax.name;
    Type type = fn_.param_types[i];
    param.type = type.value_type();
    param.elem = type.is_buffer() ? type.elem : ElemType::kNone;
    param.ndim = type.is_buffer() ? type.ndim : 1;
    if (syntax.kind == ParamKind::kPositionalOnly) ++fn->num_posonly;
    if (syntax.kind == ParamKind::kKeywordOnly) ++fn->num_kwonly;
    fn->params.push_back(param);
  }
  fn->nogil = fn_.nogil;
  fn->result = fn_.result.is_known() ? fn_.result.value_type() : ValueType::kObject;
  if (fn->result == ValueType::kBuffer) fn->result = ValueType::kObject;
  fn->registers.resize(total);
  for (int reg = 0; reg < static_cast<int>(registers_.size()); ++reg) fn->registers[layout(reg)] = registers_[reg];
  for (int i = 0; i < num_constants; ++i) fn->registers[num_params + i] = {constants[i].kind, ElemType::kNone};
  fn->constants = std::move(constants);
  fn->objects = std::move(objects_);
  objects_.clear();

  // Labels to targets; registers to their final numbers, by operand mode.
  for (const auto& label : labels_) {
    for (int use : label->uses) code_[use].d = label->target;
  }
  for (VInstr& in : code_) {
    const OpInfo& info = InfoOf(in.op);
    if (is_register(info.a)) in.a = layout(in.a);
    if (is_register(info.b)) in.b = layout(in.b);
    if (is_register(info.c)) in.c = layout(in.c);
    if (is_register(info.d)) in.d = layout(static_cast<int>(in.d));
    fn->code.push_back({in.op, static_cast<uint8_t>(in.a), static_cast<uint8_t>(in.b), static_cast<uint8_t>(in.c),
                        static_cast<int32_t>(in.d)});
    fn->lines.push_back(in.line);
  }
  // Record which buffers the function stores into, so the call boundary (and
  // BORROW_U, in its C operand) asks for writable views.
  std::vector<bool> stored(fn->registers.size(), false);
  for (const Instr& in : fn->code) {
    if (!HasFlag(in.op, kFlagStore)) continue;  // every such instruction stores into U[A]
    stored[in.a] = true;
    if (in.a < num_params) fn->params[in.a].writes = true;
  }
  for (Instr& in : fn->code) {
    if (in.op == Op::BORROW_U) in.c = stored[in.a] ? 1 : 0;
  }
  return fn;
}

}  // namespace

// See compiler/lower.h.
absl::StatusOr<std::unique_ptr<FunctionCode>> LowerFunction(const ModuleInfo& module, const FunctionInfo& fn) {
  Lowering lowering(module, fn);
  absl::StatusOr<std::unique_ptr<FunctionCode>> result = lowering.Run();
  return result;
}

}  // namespace ppy
