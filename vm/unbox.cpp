#include "vm/unbox.h"

#include "vm/exact_scalars.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace ppy {

namespace {

// Functions longer than this keep their object code: the analysis below is
// quadratic in the worst case (reaching definitions as bit sets).
constexpr int kMaxUnboxedInstructions = 4096;

BinaryOp BinaryOpOf(int d) { return static_cast<BinaryOp>(d >= kBinaryInPlace ? d - kBinaryInPlace : d); }

// The operators an unboxed float operand may take (BINARY_UF) ...
bool IsFloatArithmetic(int d) {
  switch (BinaryOpOf(d)) {
    case BinaryOp::ADD:
    case BinaryOp::SUB:
    case BinaryOp::MUL:
    case BinaryOp::TRUEDIV:
    case BinaryOp::FLOORDIV:
    case BinaryOp::MOD:
    case BinaryOp::POW: return true;
    default: return false;
  }
}

// ... and those an unboxed int operand may take (BINARY_UI): the ones whose
// int result is an int, so that an int web stays one.
bool IsIntArithmetic(int d) {
  switch (BinaryOpOf(d)) {
    case BinaryOp::ADD:
    case BinaryOp::SUB:
    case BinaryOp::MUL:
    case BinaryOp::FLOORDIV:
    case BinaryOp::MOD: return true;
    default: return false;
  }
}

// The object of `reg` if it is one of fn's object constants, else null.
PyObject* ObjectConstant(const FunctionCode& fn, int reg) {
  if (!fn.IsConstantRegister(reg) || fn.registers[reg].kind != Kind::kObject) return nullptr;
  PyObject* object;
  const uint64_t bits = fn.initial_constants[reg - fn.first_constant()];
  std::memcpy(&object, &bits, sizeof object);
  return object;
}

// What an occurrence tells about the type of its register's web (a
// definition's value): nothing, an int (an int constant moved in, a typed int
// boxed, a guard that met an int before) or a float (a float constant, a
// typed float boxed, a true division).
enum class Evidence : uint8_t { kNone, kInt, kFloat };

// One object register an instruction names. `capable` / `capable_int`: the
// instruction has an unboxed form in which this operand is a float slot / an
// int slot (a definition that makes one, or a use that takes one); `arith`:
// that form does arithmetic or compares on it (what makes unboxing worth its
// guards).
struct Occurrence {
  int pc;
  int reg;
  bool def;
  bool capable;
  bool capable_int;
  bool arith;
  Evidence evidence;
};

// The occurrences of object registers at `pc` that could be unboxed. Every
// register an instruction names is listed (ForEachRegister), capable only in
// the fields the rewrite below handles. `feedback`: what earlier versions'
// guards met at pc (UnboxFeedback).
void OccurrencesAt(const FunctionCode& fn, int pc, uint8_t feedback, std::vector<Occurrence>& out) {
  const Instr& in = fn.code[pc];
  const bool failed = feedback == kUnboxFailed;
  const Evidence seen = feedback == kUnboxSawInt ? Evidence::kInt : Evidence::kNone;
  auto is_object = [&](int64_t reg) {
    return reg >= fn.end_of_constants() && reg < fn.num_registers() && fn.registers[reg].kind == Kind::kObject;
  };
  auto add = [&](int reg, bool def, bool capable, bool capable_int, bool arith, Evidence evidence = Evidence::kNone) {
    if (is_object(reg)) out.push_back({pc, reg, def, capable && !failed, capable_int && !failed, arith, evidence});
  };
  switch (in.op) {
    case Op::BINARY_O: {
      const bool f = IsFloatArithmetic(in.d), i = IsIntArithmetic(in.d);
      add(in.b, false, f, i, true);
      add(in.c, false, f, i, true);
      add(in.a, true, f, i, true, BinaryOpOf(in.d) == BinaryOp::TRUEDIV ? Evidence::kFloat : seen);
      return;
    }
    case Op::COMPARE_O:
      add(in.b, false, true, true, true);
      add(in.c, false, true, true, true);
      add(in.a, true, false, false, false);
      return;
    case Op::JT_COMPARE_O:
    case Op::JF_COMPARE_O:
      add(in.a, false, true, true, true);
      add(in.b, false, true, true, true);
      return;
    case Op::GETITEM:
      add(in.b, false, false, false, false);
      add(in.c, false, false, true, false);  // (an int slot indexes: GETITEM_I)
      add(in.a, true, true, true, false, seen);
      return;
    case Op::GETITEM_I:
      add(in.b, false, false, false, false);
      add(in.a, true, true, true, false, seen);
      return;
    case Op::SETITEM:
      add(in.a, false, false, false, false);
      add(in.b, false, false, false, false);
      add(in.c, false, true, true, false);
      return;
    case Op::SETITEM_I:  // (its index a typed int already)
      add(in.a, false, false, false, false);
      add(in.c, false, true, true, false);
      return;
    case Op::MOVE_O: {
      Evidence evidence = seen;
      if (PyObject* object = ObjectConstant(fn, in.b)) {
        int64_t value;
        if (ExactInt64(object, &value)) evidence = Evidence::kInt;
        if (PyFloat_CheckExact(object)) evidence = Evidence::kFloat;
      }
      add(in.b, false, true, true, false);
      add(in.a, true, true, true, false, evidence);
      return;
    }
    case Op::FOR_ITER:
    case Op::LOAD_ATTR:
      add(in.b, false, false, false, false);
      add(in.a, true, true, true, false, seen);
      return;
    case Op::STORE_ATTR:
      add(in.a, false, false, false, false);
      add(in.b, false, true, true, false);
      return;
    case Op::BOX_F: add(in.a, true, true, false, false, Evidence::kFloat); return;
    case Op::BOX_I: add(in.a, true, false, true, false, Evidence::kInt); return;
    case Op::RET_O: add(in.a, false, true, true, false); return;
    // A typed result or local taken from a dynamic one (`-> float` returning
    // an accumulator that object code made): a slot is the value itself.
    case Op::UNBOX_F: add(in.b, false, true, false, false); return;
    case Op::UNBOX_I: add(in.b, false, false, true, false); return;
    default:
      ForEachRegister(in, [&](int64_t reg, bool reads, bool writes) {
        if (reads) add(static_cast<int>(reg), false, false, false, false);
        if (writes) add(static_cast<int>(reg), true, false, false, false);
      });
      return;
  }
}

// The pcs control may reach from `pc`.
template <typename Visit>
void ForEachSuccessor(const FunctionCode& fn, int pc, Visit&& visit) {
  const Instr& in = fn.code[pc];
  if (!HasFlag(in.op, kFlagEnd) && pc + 1 < static_cast<int>(fn.code.size())) visit(pc + 1);
  if (HasFlag(in.op, kFlagJump) && in.d >= 0 && in.d < static_cast<int>(fn.code.size())) visit(in.d);
}

struct UnionFind {
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Union(int x, int y) { parent[Find(x)] = Find(y); }
  std::vector<int> parent;
};

// JT_COMPARE_O (jump_if_true) or JF_COMPARE_O with comparison `cmp` on two
// int slots, as the typed branch that needs no guard: `a > b` is `b < a`, and
// `not a < b` is `b <= a`.
Instr TypedIntBranch(bool jump_if_true, int cmp, uint8_t a, uint8_t b, int32_t target) {
  if (!jump_if_true) {
    static constexpr int kNegated[] = {Py_GE, Py_GT, Py_NE, Py_EQ, Py_LE, Py_LT};
    cmp = kNegated[cmp];
  }
  switch (cmp) {
    case Py_LT: return {Op::JLT_I, a, b, 0, target};
    case Py_LE: return {Op::JLE_I, a, b, 0, target};
    case Py_EQ: return {Op::JEQ_I, a, b, 0, target};
    case Py_NE: return {Op::JNE_I, a, b, 0, target};
    case Py_GT: return {Op::JLT_I, b, a, 0, target};
    default: return {Op::JLE_I, b, a, 0, target};
  }
}

// The same for two float slots, as the typed float branches, which compare
// as Python compares floats (NaN included): `a > b` is `b < a`, and `not a <
// b` is JNLT_F, which a NaN takes.
Instr TypedFloatBranch(bool jump_if_true, int cmp, uint8_t a, uint8_t b, int32_t target) {
  switch (cmp) {
    case Py_LT: return {jump_if_true ? Op::JLT_F : Op::JNLT_F, a, b, 0, target};
    case Py_LE: return {jump_if_true ? Op::JLE_F : Op::JNLE_F, a, b, 0, target};
    case Py_GT: return {jump_if_true ? Op::JLT_F : Op::JNLT_F, b, a, 0, target};
    case Py_GE: return {jump_if_true ? Op::JLE_F : Op::JNLE_F, b, a, 0, target};
    case Py_EQ: return {jump_if_true ? Op::JEQ_F : Op::JNE_F, a, b, 0, target};
    default: return {jump_if_true ? Op::JNE_F : Op::JEQ_F, a, b, 0, target};
  }
}

// `code` as a function for the machine-code tier (UnboxedCode::machine), if
// one of its loops has only instructions flagged JIT (what the tier's
// Covers() decides from, roughly: it refines a few, and a loop it leaves out
// is never entered).
std::unique_ptr<FunctionCode> MachineFunction(const FunctionCode& fn, const UnboxedCode& code) {
  bool covered_loop = false;
  for (int32_t header : fn.loop_headers) {
    int32_t end = header;
    for (int32_t pc = header; pc < static_cast<int32_t>(code.code.size()); ++pc) {
      if (HasFlag(code.code[pc].op, kFlagLoop) && code.code[pc].d == header) end = pc;
    }
    bool covered = true;
    for (int32_t pc = header; pc <= end && covered; ++pc) covered = HasFlag(code.code[pc].op, kFlagJit);
    covered_loop |= covered;
  }
  if (!covered_loop) return nullptr;
  auto machine = std::make_unique<FunctionCode>();
  machine->name = fn.name;
  machine->qualname = fn.qualname + " (unboxed)";
  machine->first_line = fn.first_line;
  machine->params = fn.params;
  machine->num_posonly = fn.num_posonly;
  machine->num_kwonly = fn.num_kwonly;
  machine->result = fn.result;
  machine->registers = fn.registers;
  for (size_t k = 0; k < code.slot_register.size(); ++k) {
    machine->registers.push_back({code.int_slots >> k & 1 ? Kind::kInt : Kind::kFloat});
  }
  machine->constants = fn.constants;
  machine->code = code.code;
  machine->lines = fn.lines;
  machine->module = fn.module;
  machine->initial_constants = fn.initial_constants;
  machine->object_params = fn.object_params;
  machine->owned_objects = fn.owned_objects;
  machine->num_buffer_params = fn.num_buffer_params;
  machine->frame_params = machine->num_params();
  machine->frame_constants_end = machine->end_of_constants();
  machine->frame_registers = machine->num_registers();
  machine->frame_words = machine->frame_registers + 1;
  machine->after_store = fn.after_store;
  machine->may_have_effects = fn.may_have_effects;
  machine->loop_headers = fn.loop_headers;
  machine->unboxed_of = &fn;
  machine->moves_objects = true;  // (never entered by a nogil frame: unboxed code is not)
  return machine;
}

}  // namespace

int UnboxSlotsOf(const FunctionCode& fn) {
  if (fn.code.size() > kMaxUnboxedInstructions) return 0;
  bool arithmetic = false;
  for (const Instr& in : fn.code) {
    if (in.op == Op::PRANGE) return 0;  // (its chunks run copies of the frame)
    arithmetic |= (in.op == Op::BINARY_O && IsFloatArithmetic(in.d)) || in.op == Op::COMPARE_O ||
                  in.op == Op::JT_COMPARE_O || in.op == Op::JF_COMPARE_O;
  }
  if (!arithmetic) return 0;
  int objects = 0;  // (an object constant may have a slot too: UnboxedCode::constant_slots)
  for (int reg = fn.first_constant(); reg < fn.num_registers(); ++reg) {
    objects += fn.registers[reg].kind == Kind::kObject;
  }
  // (A slot is named by an 8-bit field: past 255 registers there are none.)
  return std::max(0, std::min({objects, kMaxUnboxSlots, kMaxRegisters - 1 - fn.num_registers()}));
}

std::unique_ptr<UnboxedCode> BuildUnboxedCode(const FunctionCode& fn, const std::vector<uint8_t>& feedback) {
  const int n = static_cast<int>(fn.code.size());
  const int max_slots = fn.unbox_slots;  // (UnboxSlotsOf, when the module was loaded)
  if (max_slots <= 0) return nullptr;
  const int num_registers = fn.num_registers();

  // ---- Occurrences and definition sites --------------------------------------------
  std::vector<Occurrence> occurrences;
  std::vector<int> first_at(n + 1);
  for (int pc = 0; pc < n; ++pc) {
    first_at[pc] = static_cast<int>(occurrences.size());
    const uint8_t seen = pc < static_cast<int>(feedback.size()) ? feedback[pc] : uint8_t{kUnboxNothing};
    OccurrencesAt(fn, pc, seen, occurrences);
  }
  first_at[n] = static_cast<int>(occurrences.size());
  // Definition sites: each def occurrence, then one per register for its
  // value at entry (null: a use it reaches is one the compiler guards as
  // possibly unbound, which stays object code).
  std::vector<int> site_of(occurrences.size(), -1);
  std::vector<int> site_occurrence;
  std::vector<std::vector<int>> sites_of_register(num_registers);
  for (size_t i = 0; i < occurrences.size(); ++i) {
    if (!occurrences[i].def) continue;
    site_of[i] = static_cast<int>(site_occurrence.size());
    sites_of_register[occurrences[i].reg].push_back(site_of[i]);
    site_occurrence.push_back(static_cast<int>(i));
  }
  const int real_sites = static_cast<int>(site_occurrence.size());
  const int num_sites = real_sites + num_registers;
  for (int reg = 0; reg < num_registers; ++reg) sites_of_register[reg].push_back(real_sites + reg);
  if (num_sites > 4 * kMaxUnboxedInstructions) return nullptr;

  // ---- Reaching definitions (forward, bit sets over the sites) ----------------------
  const int words = (num_sites + 63) / 64;
  std::vector<uint64_t> reach_in(static_cast<size_t>(n) * words, 0);
  auto in_of = [&](int pc) { return &reach_in[static_cast<size_t>(pc) * words]; };
  for (int reg = 0; reg < num_registers; ++reg) {
    const int site = real_sites + reg;
    in_of(0)[site / 64] |= uint64_t{1} << (site % 64);
  }
  std::vector<uint64_t> out(words);
  std::vector<bool> queued(n, true);
  std::vector<int> work(n);
  std::iota(work.rbegin(), work.rend(), 0);
  while (!work.empty()) {
    const int pc = work.back();
    work.pop_back();
    queued[pc] = false;
    std::copy(in_of(pc), in_of(pc) + words, out.begin());
    for (int i = first_at[pc]; i < first_at[pc + 1]; ++i) {
      if (!occurrences[i].def) continue;
      for (int site : sites_of_register[occurrences[i].reg]) out[site / 64] &= ~(uint64_t{1} << (site % 64));
    }
    for (int i = first_at[pc]; i < first_at[pc + 1]; ++i) {
      if (occurrences[i].def) out[site_of[i] / 64] |= uint64_t{1} << (site_of[i] % 64);
    }
    ForEachSuccessor(fn, pc, [&](int next) {
      uint64_t* target = in_of(next);
      bool changed = false;
      for (int w = 0; w < words; ++w) {
        const uint64_t merged = target[w] | out[w];
        changed |= merged != target[w];
        target[w] = merged;
      }
      if (changed && !queued[next]) {
        queued[next] = true;
        work.push_back(next);
      }
    });
  }

  // ---- Webs: a use joins every definition that reaches it ----------------------------
  UnionFind webs(num_sites);
  std::vector<int> use_site(occurrences.size(), -1);
  for (size_t i = 0; i < occurrences.size(); ++i) {
    const Occurrence& use = occurrences[i];
    if (use.def) continue;
    const uint64_t* reaching = in_of(use.pc);
    for (int site : sites_of_register[use.reg]) {
      if (!(reaching[site / 64] >> (site % 64) & 1)) continue;
      if (use_site[i] < 0) use_site[i] = site;
      else webs.Union(site, use_site[i]);
    }
  }
  auto web_of = [&](size_t i) {
    const int site = occurrences[i].def ? site_of[i] : use_site[i];
    return site < 0 ? -1 : webs.Find(site);
  };
  // ---- Types: each web an int, a float, or an object -------------------------------
  // A web whose definitions give evidence of ints (an int constant, a typed
  // int boxed, a guard that met an int, int arithmetic on int webs) is an int
  // web if every occurrence takes an int slot; any other web a float web if
  // every occurrence takes a float slot; else it stays an object ("bad"). An
  // int web and a float web (or a float constant) never meet in one
  // instruction: the int web stays an object there (the float forms take an
  // object operand that holds an int; they cannot read an int slot).
  std::vector<char> bad(num_sites, 0), bad_f(num_sites, 0), bad_i(num_sites, 0), arith(num_sites, 0),
      defined(num_sites, 0), float_evidence(num_sites, 0), int_evidence(num_sites, 0);
  for (int reg = 0; reg < num_registers; ++reg) bad[webs.Find(real_sites + reg)] = 1;
  for (size_t i = 0; i < occurrences.size(); ++i) {
    const int web = web_of(i);
    if (web < 0) continue;  // (a use no definition reaches: unreachable code)
    if (!occurrences[i].capable) bad_f[web] = 1;
    if (!occurrences[i].capable_int) bad_i[web] = 1;
    if (occurrences[i].arith) arith[web] = 1;
    if (occurrences[i].def) defined[web] = 1;
    if (occurrences[i].evidence == Evidence::kFloat) float_evidence[web] = 1;
    if (occurrences[i].evidence == Evidence::kInt) int_evidence[web] = 1;
  }
  auto float_constant = [&](int reg, double* value) {
    PyObject* object = ObjectConstant(fn, reg);
    if (object == nullptr || !PyFloat_CheckExact(object)) return false;
    *value = PyFloat_AS_DOUBLE(object);
    return true;
  };
  auto int_constant = [&](int reg, int64_t* value) {
    PyObject* object = ObjectConstant(fn, reg);
    return object != nullptr && ExactInt64(object, value);
  };
  // The web of register `reg` at pc: of its definition there (def) or of the
  // definitions reaching its use; -1 if `reg` is no occurrence there.
  auto web_at = [&](int pc, int reg, bool def) {
    for (int k = first_at[pc]; k < first_at[pc + 1]; ++k) {
      if (occurrences[k].reg == reg && occurrences[k].def == def) return web_of(k);
    }
    return -1;
  };
  // A web moved into one that takes part in arithmetic takes part too: `for
  // x in xs` defines the loop's own register (FOR_ITER), moved into x, and
  // unboxing that web too lets the item be read into a slot (FOR_ITER_GF,
  // which machine code runs) instead of being guarded at the move.
  for (bool changed = true; changed;) {
    changed = false;
    for (int pc = 0; pc < n; ++pc) {
      if (fn.code[pc].op != Op::MOVE_O) continue;
      const int from = web_at(pc, fn.code[pc].b, false), to = web_at(pc, fn.code[pc].a, true);
      if (from >= 0 && to >= 0 && arith[to] && !arith[from]) arith[from] = changed = true;
    }
  }
  std::vector<char> is_int(num_sites, 0);  // (of a web's root)
  auto unboxed_web = [&](int web) { return web >= 0 && !bad[web] && arith[web] && defined[web]; };
  auto int_web = [&](int web) { return unboxed_web(web) && is_int[web]; };
  auto float_web = [&](int web) { return unboxed_web(web) && !is_int[web]; };
  // The type of each web from its evidence, int arithmetic and moves passing
  // an int on (to a fixed point: a web only ever gains int evidence).
  auto assign_types = [&] {
    std::vector<char> evidence(int_evidence);
    for (bool changed = true; changed;) {
      changed = false;
      for (int pc = 0; pc < n; ++pc) {
        const Instr& in = fn.code[pc];
        int dest = -1;
        bool ints = false;
        auto int_operand = [&](int reg) {
          int64_t value;
          const int web = web_at(pc, reg, false);
          return (web >= 0 && !bad[web] && evidence[web] && !bad_i[web]) || int_constant(reg, &value);
        };
        if (in.op == Op::BINARY_O && IsIntArithmetic(in.d)) {
          dest = web_at(pc, in.a, true);
          ints = int_operand(in.b) && int_operand(in.c);
        } else if (in.op == Op::MOVE_O) {
          const int from = web_at(pc, in.b, false);
          dest = web_at(pc, in.a, true);
          ints = from >= 0 && !bad[from] && evidence[from] && !bad_i[from];
        }
        if (dest >= 0 && ints && !evidence[dest]) evidence[dest] = changed = true;
      }
    }
    for (int web = 0; web < num_sites; ++web) {
      if (webs.Find(web) != web || bad[web]) continue;
      is_int[web] = evidence[web];
      if (evidence[web] ? bad_i[web] || float_evidence[web] : bad_f[web]) bad[web] = 1;
    }
  };
  // Where an int web meets a float web or a float constant in arithmetic, a
  // comparison or a move: the int web becomes an object. True if one did.
  // (A subscript may take an int slot's index where its item is a float
  // slot: GETITEM_I_GF.)
  auto separate_types = [&] {
    bool changed = false;
    for (int pc = 0; pc < n; ++pc) {
      const Instr& in = fn.code[pc];
      if (in.op == Op::GETITEM) continue;
      bool meets_float = false;
      for (int k = first_at[pc]; k < first_at[pc + 1]; ++k) meets_float |= float_web(web_of(k));
      double value;
      if (in.op == Op::BINARY_O || in.op == Op::COMPARE_O) {
        meets_float |= float_constant(in.b, &value) || float_constant(in.c, &value);
      } else if (in.op == Op::JT_COMPARE_O || in.op == Op::JF_COMPARE_O) {
        meets_float |= float_constant(in.a, &value) || float_constant(in.b, &value);
      }
      if (!meets_float) continue;
      for (int k = first_at[pc]; k < first_at[pc + 1]; ++k) {
        if (int_web(web_of(k))) bad[web_of(k)] = changed = true;
      }
    }
    return changed;
  };
  do assign_types();
  while (separate_types());
  // Whether the register of occurrence i (a definition) holds, in the
  // unboxed code, an object whose release runs no code: a float or int the
  // code boxed (a typed one, a slot moved out, arithmetic with a slot
  // operand) or a comparison's bool.
  auto makes_plain_object = [&](size_t i) {
    const Instr& in = fn.code[occurrences[i].pc];
    auto unboxed_use = [&](int reg) { return unboxed_web(web_at(occurrences[i].pc, reg, false)); };
    switch (in.op) {
      case Op::BOX_F:
      case Op::BOX_I: return true;
      case Op::MOVE_O: return unboxed_use(in.b);
      case Op::BINARY_O:
      case Op::COMPARE_O: return unboxed_use(in.b) || unboxed_use(in.c);
      default: return false;
    }
  };
  // Whether an unboxed definition of `reg` at pc replaces an object the
  // register may hold whose release could run code: one an object
  // definition left (a temporary the compiler reuses for other values).
  // There the definition releases it, as the object code's write would;
  // MOVE_F and MOVE_I cannot, so such a web defined by a move stays an
  // object (which may make other definitions release: repeat).
  auto needs_clear = [&](int pc, int reg) {
    const uint64_t* reaching = in_of(pc);
    for (int site : sites_of_register[reg]) {
      if (site < real_sites && (reaching[site / 64] >> (site % 64) & 1) && !unboxed_web(webs.Find(site)) &&
          !makes_plain_object(site_occurrence[site])) {
        return true;
      }
    }
    return false;
  };
  auto settle = [&] {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < occurrences.size(); ++i) {
        const Occurrence& occ = occurrences[i];
        const Op op = fn.code[occ.pc].op;
        if (occ.def && (op == Op::MOVE_O || op == Op::BOX_F || op == Op::BOX_I) && unboxed_web(web_of(i)) &&
            needs_clear(occ.pc, occ.reg)) {
          bad[web_of(i)] = 1;
          changed = true;
        }
      }
    }
  };
  settle();

  // ---- Slots: one per register and kind with an unboxed web --------------------------
  // A register's float webs share one slot, and its int webs another (a
  // temporary the compiler reuses may hold floats in one expression and ints
  // in the next). At most one web of a register is live at any pc, so a
  // deoptimization boxes at most one slot into it.
  std::vector<int> float_slot(num_registers, -1), int_slot_of(num_registers, -1);
  auto slot_for = [&](int reg, bool is_int) -> int& { return (is_int ? int_slot_of : float_slot)[reg]; };
  auto code = std::make_unique<UnboxedCode>();
  bool dropped = false;
  for (size_t i = 0; i < occurrences.size(); ++i) {
    const int reg = occurrences[i].reg;
    const int web = web_of(i);
    if (!unboxed_web(web) || slot_for(reg, is_int[web]) >= 0) continue;
    if (static_cast<int>(code->slot_register.size()) == max_slots) {
      bad[web] = 1;  // (out of slots: this register stays an object)
      dropped = true;
      continue;
    }
    slot_for(reg, is_int[web]) = static_cast<int>(code->slot_register.size());
    if (is_int[web]) code->int_slots |= uint64_t{1} << code->slot_register.size();
    code->slot_register.push_back(static_cast<uint8_t>(reg));
  }
  if (code->slot_register.empty()) return nullptr;
  // Out of slots, a register's later webs were marked above; its earlier ones
  // of that kind must go with them (they share its slot or none).
  for (size_t i = 0; i < occurrences.size(); ++i) {
    const int web = web_of(i);
    if (web >= 0 && !bad[web] && slot_for(occurrences[i].reg, is_int[web]) < 0) {
      bad[web] = 1;
      dropped = true;
    }
  }
  // (What the dropped webs made plain may need releasing now; a register
  // whose webs all go keeps a slot it does not use.)
  if (dropped) settle();
  auto int_slot = [&](int reg) { return int_slot_of[reg] >= 0; };

  // Constants that meet unboxed arithmetic or comparisons of their kind get
  // slots of their own (`s * 0.5`, `i + 1`), so that the arithmetic stays on
  // slots (and machine code runs it).
  std::vector<char> constant_slot(num_registers, 0);
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = fn.code[pc];
    int operands[2] = {-1, -1};
    if (in.op == Op::BINARY_O || in.op == Op::COMPARE_O) {
      operands[0] = in.b, operands[1] = in.c;
    } else if (in.op == Op::JT_COMPARE_O || in.op == Op::JF_COMPARE_O) {
      operands[0] = in.a, operands[1] = in.b;
    } else {
      continue;
    }
    bool meets_float = false, meets_int = false;
    for (int i = first_at[pc]; i < first_at[pc + 1]; ++i) {
      if (!unboxed_web(web_of(i))) continue;
      (is_int[web_of(i)] ? meets_int : meets_float) = true;
    }
    meets_float &= in.op != Op::BINARY_O || IsFloatArithmetic(in.d);
    meets_int &= in.op != Op::BINARY_O || IsIntArithmetic(in.d);
    for (int reg : operands) {
      double f;
      int64_t i;
      if (float_slot[reg] >= 0 || int_slot_of[reg] >= 0 || static_cast<int>(code->slot_register.size()) == max_slots) {
        continue;
      }
      const int next = static_cast<int>(code->slot_register.size());
      if (meets_float && float_constant(reg, &f)) {
        code->constant_slots.emplace_back(next, f);
        float_slot[reg] = next;
      } else if (meets_int && int_constant(reg, &i)) {
        code->int_slots |= uint64_t{1} << next;
        code->int_constant_slots.emplace_back(next, i);
        int_slot_of[reg] = next;
      } else {
        continue;
      }
      code->slot_register.push_back(static_cast<uint8_t>(reg));
      constant_slot[reg] = 1;
    }
  }

  // ---- The rewrite, pc for pc -------------------------------------------------------
  code->code = fn.code;
  std::vector<uint64_t> uses(n, 0), defs(n, 0);
  for (int pc = 0; pc < n; ++pc) {
    // Which of the instruction's fields name an unboxed web (by register: an
    // instruction names a register once per field, and reads before it writes).
    bool read_unboxed[kMaxRegisters] = {}, written_unboxed[kMaxRegisters] = {};
    bool any = false;
    for (int i = first_at[pc]; i < first_at[pc + 1]; ++i) {
      if (!unboxed_web(web_of(i))) continue;
      const Occurrence& occ = occurrences[i];
      (occ.def ? written_unboxed : read_unboxed)[occ.reg] = true;
      (occ.def ? defs : uses)[pc] |= uint64_t{1} << slot_for(occ.reg, is_int[web_of(i)]);
      any = true;
    }
    if (!any) {
      // A `for` whose item stays an object: the form machine code runs over
      // a list (FOR_ITER_L).
      if (fn.code[pc].op == Op::FOR_ITER) code->code[pc].op = Op::FOR_ITER_L;
      continue;
    }
    const Instr in = fn.code[pc];
    Instr& to = code->code[pc];
    // Whether the instruction works on ints: one of its unboxed webs is an
    // int web (then none is a float web: separate_types).
    // (GETITEM's index may be an int slot where its item is a float slot:
    // `written_int` is the kind of what it writes.)
    bool ints = false, written_int = false;
    for (int i = first_at[pc]; i < first_at[pc + 1]; ++i) {
      ints |= int_web(web_of(i));
      written_int |= occurrences[i].def && int_web(web_of(i));
    }
    // A constant with a slot of the instruction's kind is read from it
    // (always set: not in `live`); one of the other kind stays an object
    // operand, which the instruction guards.
    for (int reg : {in.a, in.b, in.c}) {
      if (reg < num_registers && constant_slot[reg] && int_slot(reg) == ints) read_unboxed[reg] = true;
    }
    // A register's slot of the instruction's kind (slot_of), or of either
    // (GETITEM's index is an int slot where its item may be a float slot).
    auto slot_of_kind = [&](int reg, bool is_int) {
      return static_cast<uint8_t>(num_registers + slot_for(reg, is_int));
    };
    auto slot_of = [&](int reg) { return slot_of_kind(reg, ints); };
    auto clear = [&](int reg) { return needs_clear(pc, reg) ? reg + 1 : 0; };
    switch (in.op) {
      case Op::BINARY_O: {
        const bool ua = written_unboxed[in.a], ub = read_unboxed[in.b], uc = read_unboxed[in.c];
        const int op = in.d >= kBinaryInPlace ? in.d - kBinaryInPlace : in.d;
        const auto binary = static_cast<BinaryOp>(op);
        const uint8_t a = ua ? slot_of(in.a) : in.a, b = ub ? slot_of(in.b) : in.b, c = uc ? slot_of(in.c) : in.c;
        const bool plus_minus_times = binary == BinaryOp::ADD || binary == BinaryOp::SUB || binary == BinaryOp::MUL;
        const int cleared = ua ? clear(in.a) : 0;
        if (ints && ua && ub && uc && plus_minus_times && cleared != 0) {
          // As below, releasing what the register held: FARITH_UF's int form.
          to = {Op::IARITH_UI, a, b, c, op | cleared << 16};
          ++code->guards;
        } else if (ints && ua && ub && uc && cleared == 0) {
          // The typed instruction itself: its overflow or division by zero,
          // on a slot, deoptimizes (the interpreter's INT_OVERFLOW; machine
          // code leaves for the interpreter there, as it does to raise).
          static constexpr Op kTyped[] = {Op::ADD_I, Op::SUB_I, Op::MUL_I, Op::FLOORDIV_I, Op::MOD_I};
          static constexpr BinaryOp kOps[] = {BinaryOp::ADD, BinaryOp::SUB, BinaryOp::MUL, BinaryOp::FLOORDIV,
                                              BinaryOp::MOD};
          const int k = static_cast<int>(std::find(std::begin(kOps), std::end(kOps), binary) - std::begin(kOps));
          to = {kTyped[k], a, b, c, 0};  // (IsIntArithmetic: one of those)
          ++code->guards;
        } else if (ints) {
          to = {Op::BINARY_UI, a, b, c, op | ua << 8 | ub << 9 | uc << 10 | cleared << 16};
          ++code->guards;
        } else if (ua && ub && uc && plus_minus_times) {
          const Op typed = binary == BinaryOp::ADD ? Op::ADD_F : binary == BinaryOp::SUB ? Op::SUB_F : Op::MUL_F;
          if (cleared != 0) {
            to = {Op::FARITH_UF, a, b, c, op | cleared << 16};
          } else {
            to = {typed, a, b, c, 0};
          }
        } else {
          to = {Op::BINARY_UF, a, b, c, op | ua << 8 | ub << 9 | uc << 10 | cleared << 16};
          ++code->guards;
        }
        break;
      }
      case Op::COMPARE_O: {
        const bool ub = read_unboxed[in.b], uc = read_unboxed[in.c];
        to = {ints ? Op::COMPARE_UI : Op::COMPARE_UF, in.a, ub ? slot_of(in.b) : in.b, uc ? slot_of(in.c) : in.c,
              in.d | ub << 5 | uc << 6};
        ++code->guards;
        break;
      }
      case Op::JT_COMPARE_O:
      case Op::JF_COMPARE_O: {
        const bool ua = read_unboxed[in.a], ub = read_unboxed[in.b];
        if (ints && ua && ub) {
          to = TypedIntBranch(in.op == Op::JT_COMPARE_O, in.c, slot_of(in.a), slot_of(in.b), in.d);
          break;
        }
        if (!ints && ua && ub) {
          to = TypedFloatBranch(in.op == Op::JT_COMPARE_O, in.c, slot_of(in.a), slot_of(in.b), in.d);
          break;
        }
        const bool jt = in.op == Op::JT_COMPARE_O;
        const Op op =
            ints ? (jt ? Op::JT_COMPARE_UI : Op::JF_COMPARE_UI) : (jt ? Op::JT_COMPARE_UF : Op::JF_COMPARE_UF);
        to = {op, ua ? slot_of(in.a) : in.a, ub ? slot_of(in.b) : in.b, static_cast<uint8_t>(in.c | ua << 4 | ub << 5),
              in.d};
        ++code->guards;
        break;
      }
      case Op::GETITEM:
      case Op::GETITEM_I: {
        // (GETITEM's index may be an int slot: then it is a typed index.)
        const bool typed_index = in.op == Op::GETITEM_I || read_unboxed[in.c];
        const uint8_t index = in.op == Op::GETITEM && read_unboxed[in.c] ? slot_of_kind(in.c, true) : in.c;
        if (!written_unboxed[in.a]) {
          to = {Op::GETITEM_I, in.a, in.b, index, 0};
          break;
        }
        const Op op = written_int ? (typed_index ? Op::GETITEM_I_GI : Op::GETITEM_GI)
                                  : (typed_index ? Op::GETITEM_I_GF : Op::GETITEM_GF);
        to = {op, slot_of_kind(in.a, written_int), in.b, index, clear(in.a)};
        ++code->guards;
        break;
      }
      case Op::SETITEM: to = {ints ? Op::SETITEM_UI : Op::SETITEM_UF, in.a, in.b, slot_of(in.c), 0}; break;
      case Op::SETITEM_I: to = {ints ? Op::SETITEM_I_UI : Op::SETITEM_I_UF, in.a, in.b, slot_of(in.c), 0}; break;
      case Op::MOVE_O: {
        const bool ua = written_unboxed[in.a], ub = read_unboxed[in.b];
        if (ua && ub && !(constant_slot[in.b] && clear(in.a) != 0)) {
          to = {ints ? Op::MOVE_I : Op::MOVE_F, slot_of(in.a), slot_of(in.b), 0, 0};
        } else if (ua) {  // (from an object, or a constant where the register needs releasing)
          to = {ints ? Op::GUARD_I : Op::GUARD_F, slot_of(in.a), in.b, 0, clear(in.a)};
          ++code->guards;
        } else {
          to = {ints ? Op::BOX_I : Op::BOX_F, in.a, slot_of(in.b), 0, 0};
        }
        break;
      }
      case Op::BOX_F: to = {Op::MOVE_F, slot_of(in.a), in.b, 0, 0}; break;
      case Op::BOX_I: to = {Op::MOVE_I, slot_of(in.a), in.b, 0, 0}; break;
      case Op::FOR_ITER:
        to = {ints ? Op::FOR_ITER_GI : Op::FOR_ITER_GF, slot_of(in.a), in.b, 0, in.d};
        ++code->guards;
        break;
      case Op::LOAD_ATTR:
        to = {ints ? Op::LOAD_ATTR_GI : Op::LOAD_ATTR_GF, slot_of(in.a), in.b, 0, in.d};
        ++code->guards;
        break;
      case Op::STORE_ATTR: to = {ints ? Op::STORE_ATTR_UI : Op::STORE_ATTR_UF, in.a, slot_of(in.b), 0, in.d}; break;
      case Op::RET_O: to = {ints ? Op::RET_UI : Op::RET_UF, slot_of(in.a), 0, 0, 0}; break;
      case Op::UNBOX_F: to = {Op::MOVE_F, in.a, slot_of(in.b), 0, 0}; break;
      case Op::UNBOX_I: to = {Op::MOVE_I, in.a, slot_of(in.b), 0, 0}; break;
      default: break;  // (no occurrence of another instruction is capable)
    }
  }

  // ---- Liveness of the slots (backward), for deoptimization and loop entry --------
  code->live.assign(n, 0);
  auto in_range = [&](int32_t target) { return target >= 0 && target < n; };
  for (bool changed = true; changed;) {
    changed = false;
    for (int pc = n - 1; pc >= 0; --pc) {
      uint64_t live_out = 0;
      ForEachSuccessor(fn, pc, [&](int next) { live_out |= code->live[next]; });
      uint64_t live_in = uses[pc] | (live_out & ~defs[pc]);
      // FOR_ITER writes its item only when it falls through: exhausted, it
      // jumps with the loop's variable as it was (its last value, which a
      // use after the loop reads).
      if (fn.code[pc].op == Op::FOR_ITER && in_range(fn.code[pc].d)) live_in |= code->live[fn.code[pc].d];
      if (live_in != code->live[pc]) {
        code->live[pc] = live_in;
        changed = true;
      }
    }
  }
  code->machine = MachineFunction(fn, *code);
  return code;
}

}  // namespace ppy
