#include "vm/unbox.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace ppy {

namespace {

// Functions longer than this keep their object code: the analysis below is
// quadratic in the worst case (reaching definitions as bit sets).
constexpr int kMaxUnboxedInstructions = 4096;

bool IsFloatArithmetic(int d) {
  const int op = d >= kBinaryInPlace ? d - kBinaryInPlace : d;
  switch (static_cast<BinaryOp>(op)) {
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

// One object register an instruction names. `capable`: the instruction has
// an unboxed form in which this operand is a slot (a definition that makes a
// float, or a use that takes one); `arith`: that form does arithmetic or
// compares on it (what makes unboxing worth its guards).
struct Occurrence {
  int pc;
  int reg;
  bool def;
  bool capable;
  bool arith;
};

// The occurrences of object registers at `pc` that could be unboxed. Every
// register an instruction names is listed (ForEachRegister), capable only in
// the fields the rewrite below handles.
void OccurrencesAt(const FunctionCode& fn, int pc, bool failed, std::vector<Occurrence>& out) {
  const Instr& in = fn.code[pc];
  auto is_object = [&](int64_t reg) {
    return reg >= fn.end_of_constants() && reg < fn.num_registers() && fn.registers[reg].kind == Kind::kObject;
  };
  auto add = [&](int reg, bool def, bool capable, bool arith) {
    if (is_object(reg)) out.push_back({pc, reg, def, capable && !failed, arith});
  };
  switch (in.op) {
    case Op::BINARY_O: {
      const bool ok = IsFloatArithmetic(in.d);
      add(in.b, false, ok, true);
      add(in.c, false, ok, true);
      add(in.a, true, ok, true);
      return;
    }
    case Op::COMPARE_O:
      add(in.b, false, true, true);
      add(in.c, false, true, true);
      add(in.a, true, false, false);
      return;
    case Op::JT_COMPARE_O:
    case Op::JF_COMPARE_O:
      add(in.a, false, true, true);
      add(in.b, false, true, true);
      return;
    case Op::GETITEM:
      add(in.b, false, false, false);
      add(in.c, false, false, false);
      add(in.a, true, true, false);
      return;
    case Op::GETITEM_I:
      add(in.b, false, false, false);
      add(in.a, true, true, false);
      return;
    case Op::SETITEM:
      add(in.a, false, false, false);
      add(in.b, false, false, false);
      add(in.c, false, true, false);
      return;
    case Op::MOVE_O:
      add(in.b, false, true, false);
      add(in.a, true, true, false);
      return;
    case Op::FOR_ITER:
    case Op::LOAD_ATTR:
      add(in.b, false, false, false);
      add(in.a, true, true, false);
      return;
    case Op::STORE_ATTR:
      add(in.a, false, false, false);
      add(in.b, false, true, false);
      return;
    case Op::BOX_F: add(in.a, true, true, false); return;
    case Op::RET_O: add(in.a, false, true, false); return;
    default:
      ForEachRegister(in, [&](int64_t reg, bool reads, bool writes) {
        if (reads) add(static_cast<int>(reg), false, false, false);
        if (writes) add(static_cast<int>(reg), true, false, false);
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
  for (size_t k = 0; k < code.slot_register.size(); ++k) machine->registers.push_back({Kind::kFloat});
  machine->constants = fn.constants;
  machine->code = code.code;
  machine->lines = fn.lines;
  machine->module = fn.module;
  machine->initial_constants = fn.initial_constants;
  machine->object_params = fn.object_params;
  machine->owned_objects = fn.owned_objects;
  machine->num_buffer_params = fn.num_buffer_params;
  machine->after_store = fn.after_store;
  machine->may_have_effects = fn.may_have_effects;
  machine->loop_headers = fn.loop_headers;
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

std::unique_ptr<UnboxedCode> BuildUnboxedCode(const FunctionCode& fn, const std::vector<bool>& failed) {
  const int n = static_cast<int>(fn.code.size());
  const int max_slots = fn.unbox_slots;  // (UnboxSlotsOf, when the module was loaded)
  if (max_slots <= 0) return nullptr;
  const int num_registers = fn.num_registers();

  // ---- Occurrences and definition sites --------------------------------------------
  std::vector<Occurrence> occurrences;
  std::vector<int> first_at(n + 1);
  for (int pc = 0; pc < n; ++pc) {
    first_at[pc] = static_cast<int>(occurrences.size());
    OccurrencesAt(fn, pc, pc < static_cast<int>(failed.size()) && failed[pc], occurrences);
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
  // A web is unboxed if it has a definition, every occurrence is capable, and
  // one does arithmetic.
  std::vector<char> bad(num_sites, 0), arith(num_sites, 0), defined(num_sites, 0);
  for (int reg = 0; reg < num_registers; ++reg) bad[webs.Find(real_sites + reg)] = 1;
  for (size_t i = 0; i < occurrences.size(); ++i) {
    const int web = web_of(i);
    if (web < 0) continue;  // (a use no definition reaches: unreachable code)
    if (!occurrences[i].capable) bad[web] = 1;
    if (occurrences[i].arith) arith[web] = 1;
    if (occurrences[i].def) defined[web] = 1;
  }
  auto unboxed_web = [&](int web) { return web >= 0 && !bad[web] && arith[web] && defined[web]; };
  // Whether the register of occurrence i (a definition) holds, in the
  // unboxed code, an object whose release runs no code: a float the code
  // boxed (a typed float, a slot moved out, arithmetic with a slot operand)
  // or a comparison's bool.
  auto makes_plain_object = [&](size_t i) {
    const Instr& in = fn.code[occurrences[i].pc];
    auto unboxed_use = [&](int reg) {
      for (int k = first_at[occurrences[i].pc]; k < first_at[occurrences[i].pc + 1]; ++k) {
        if (!occurrences[k].def && occurrences[k].reg == reg) return unboxed_web(web_of(k));
      }
      return false;
    };
    switch (in.op) {
      case Op::BOX_F: return true;
      case Op::MOVE_O: return unboxed_use(in.b);
      case Op::BINARY_O: return !occurrences[i].capable ? false : unboxed_use(in.b) || unboxed_use(in.c);
      case Op::COMPARE_O: return unboxed_use(in.b) || unboxed_use(in.c);
      default: return false;
    }
  };
  // Whether an unboxed definition of `reg` at pc replaces an object the
  // register may hold whose release could run code: one an object
  // definition left (a temporary the compiler reuses for other values).
  // There the definition releases it, as the object code's write would;
  // MOVE_F cannot, so such a web defined by a move stays an object (which
  // may make other definitions release: repeat).
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
        if (occ.def && (op == Op::MOVE_O || op == Op::BOX_F) && unboxed_web(web_of(i)) &&
            needs_clear(occ.pc, occ.reg)) {
          bad[web_of(i)] = 1;
          changed = true;
        }
      }
    }
  };
  settle();

  // ---- Slots: one per register with an unboxed web -----------------------------------
  std::vector<int> slot(num_registers, -1);
  auto code = std::make_unique<UnboxedCode>();
  bool dropped = false;
  for (size_t i = 0; i < occurrences.size(); ++i) {
    const int reg = occurrences[i].reg;
    if (slot[reg] >= 0 || !unboxed_web(web_of(i))) continue;
    if (static_cast<int>(code->slot_register.size()) == max_slots) {
      bad[web_of(i)] = 1;  // (out of slots: this register stays an object)
      dropped = true;
      continue;
    }
    slot[reg] = static_cast<int>(code->slot_register.size());
    code->slot_register.push_back(static_cast<uint8_t>(reg));
  }
  if (code->slot_register.empty()) return nullptr;
  // Out of slots, a register's later webs were marked above; its earlier ones
  // must go with them (all of a register's webs share its slot or none).
  for (size_t i = 0; i < occurrences.size(); ++i) {
    if (slot[occurrences[i].reg] < 0 && web_of(i) >= 0 && !bad[web_of(i)]) {
      bad[web_of(i)] = 1;
      dropped = true;
    }
  }
  // (What the dropped webs made plain may need releasing now; a register
  // whose webs all go keeps a slot it does not use.)
  if (dropped) settle();

  // Float constants that meet unboxed arithmetic get slots of their own, so
  // that the arithmetic stays on slots (and machine code runs it).
  auto float_constant = [&](int reg, double* value) {
    if (!fn.IsConstantRegister(reg) || fn.registers[reg].kind != Kind::kObject) return false;
    PyObject* object;
    const uint64_t bits = fn.initial_constants[reg - fn.first_constant()];
    std::memcpy(&object, &bits, sizeof object);
    if (object == nullptr || !PyFloat_CheckExact(object)) return false;
    *value = PyFloat_AS_DOUBLE(object);
    return true;
  };
  std::vector<char> constant_slot(num_registers, 0);
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = fn.code[pc];
    int operands[2] = {-1, -1};
    if ((in.op == Op::BINARY_O && IsFloatArithmetic(in.d)) || in.op == Op::COMPARE_O) {
      operands[0] = in.b, operands[1] = in.c;
    } else if (in.op == Op::JT_COMPARE_O || in.op == Op::JF_COMPARE_O) {
      operands[0] = in.a, operands[1] = in.b;
    } else {
      continue;
    }
    bool meets_slot = false;
    for (int i = first_at[pc]; i < first_at[pc + 1]; ++i) meets_slot |= unboxed_web(web_of(i)) && occurrences[i].capable;
    if (!meets_slot) continue;
    for (int reg : operands) {
      double value;
      if (slot[reg] >= 0 || !float_constant(reg, &value)) continue;
      if (static_cast<int>(code->slot_register.size()) == max_slots) break;
      slot[reg] = static_cast<int>(code->slot_register.size());
      code->slot_register.push_back(static_cast<uint8_t>(reg));
      code->constant_slots.emplace_back(slot[reg], value);
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
      (occ.def ? defs : uses)[pc] |= uint64_t{1} << slot[occ.reg];
      any = true;
    }
    if (!any) continue;
    const Instr in = fn.code[pc];
    Instr& to = code->code[pc];
    for (int reg : {in.a, in.b, in.c}) {
      if (reg < num_registers && constant_slot[reg]) read_unboxed[reg] = true;  // (always set: not in `live`)
    }
    auto slot_of = [&](int reg) { return static_cast<uint8_t>(num_registers + slot[reg]); };
    auto clear = [&](int reg) { return needs_clear(pc, reg) ? reg + 1 : 0; };
    switch (in.op) {
      case Op::BINARY_O: {
        const bool ua = written_unboxed[in.a], ub = read_unboxed[in.b], uc = read_unboxed[in.c];
        const int op = in.d >= kBinaryInPlace ? in.d - kBinaryInPlace : in.d;
        const auto binary = static_cast<BinaryOp>(op);
        const uint8_t a = ua ? slot_of(in.a) : in.a, b = ub ? slot_of(in.b) : in.b, c = uc ? slot_of(in.c) : in.c;
        if (ua && ub && uc && (binary == BinaryOp::ADD || binary == BinaryOp::SUB || binary == BinaryOp::MUL)) {
          const Op typed = binary == BinaryOp::ADD ? Op::ADD_F : binary == BinaryOp::SUB ? Op::SUB_F : Op::MUL_F;
          if (const int cleared = clear(in.a); cleared != 0) {
            to = {Op::FARITH_UF, a, b, c, op | cleared << 16};
          } else {
            to = {typed, a, b, c, 0};
          }
        } else {
          to = {Op::BINARY_UF, a, b, c, op | ua << 8 | ub << 9 | uc << 10 | (ua ? clear(in.a) : 0) << 16};
          ++code->guards;
        }
        break;
      }
      case Op::COMPARE_O: {
        const bool ub = read_unboxed[in.b], uc = read_unboxed[in.c];
        to = {Op::COMPARE_UF, in.a, ub ? slot_of(in.b) : in.b, uc ? slot_of(in.c) : in.c, in.d | ub << 5 | uc << 6};
        ++code->guards;
        break;
      }
      case Op::JT_COMPARE_O:
      case Op::JF_COMPARE_O: {
        const bool ua = read_unboxed[in.a], ub = read_unboxed[in.b];
        to = {in.op == Op::JT_COMPARE_O ? Op::JT_COMPARE_UF : Op::JF_COMPARE_UF, ua ? slot_of(in.a) : in.a,
              ub ? slot_of(in.b) : in.b, static_cast<uint8_t>(in.c | ua << 4 | ub << 5), in.d};
        ++code->guards;
        break;
      }
      case Op::GETITEM:
      case Op::GETITEM_I:
        to = {in.op == Op::GETITEM ? Op::GETITEM_GF : Op::GETITEM_I_GF, slot_of(in.a), in.b, in.c, clear(in.a)};
        ++code->guards;
        break;
      case Op::SETITEM: to = {Op::SETITEM_UF, in.a, in.b, slot_of(in.c), 0}; break;
      case Op::MOVE_O: {
        const bool ua = written_unboxed[in.a], ub = read_unboxed[in.b];
        if (ua && ub && !(constant_slot[in.b] && clear(in.a) != 0)) {
          to = {Op::MOVE_F, slot_of(in.a), slot_of(in.b), 0, 0};
        } else if (ua) {  // (from an object, or a constant where the register needs releasing)
          to = {Op::GUARD_F, slot_of(in.a), in.b, 0, clear(in.a)};
          ++code->guards;
        } else {
          to = {Op::BOX_F, in.a, slot_of(in.b), 0, 0};
        }
        break;
      }
      case Op::BOX_F: to = {Op::MOVE_F, slot_of(in.a), in.b, 0, 0}; break;
      case Op::FOR_ITER:
        to = {Op::FOR_ITER_GF, slot_of(in.a), in.b, 0, in.d};
        ++code->guards;
        break;
      case Op::LOAD_ATTR:
        to = {Op::LOAD_ATTR_GF, slot_of(in.a), in.b, 0, in.d};
        ++code->guards;
        break;
      case Op::STORE_ATTR: to = {Op::STORE_ATTR_UF, in.a, slot_of(in.b), 0, in.d}; break;
      case Op::RET_O: to = {Op::RET_UF, slot_of(in.a), 0, 0, 0}; break;
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
