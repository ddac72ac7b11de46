#include "asmjit-backend/codegen.h"

#include "vm/math_table.h"

namespace ppy::jit {

void RegistersOf(const FunctionCode& fn, const Instr& in, RegisterSet* reads, RegisterSet* writes) {
  const OpInfo& info = InfoOf(in.op);
  auto mark = [&](RegisterSet* set, int first, int count) {
    for (int i = 0; i < count && first + i < kMaxRegisters; ++i) set->set(first + i);
  };
  auto field = [&](Mode mode, int value) {
    switch (mode) {
      case Mode::krI:
      case Mode::krF:
      case Mode::krO:
      case Mode::krU:
      case Mode::krUd:
      case Mode::krUq:
      case Mode::krUf:
      case Mode::krUi: mark(reads, value, 1); break;
      case Mode::kwI:
      case Mode::kwF:
      case Mode::kwO:
      case Mode::kwU:
      case Mode::kwX: mark(writes, value, 1); break;
      case Mode::kuI:
        mark(reads, value, 1);
        mark(writes, value, 1);
        break;
      case Mode::krX:
      case Mode::ksO: mark(reads, value, in.c); break;
      case Mode::kcO: mark(reads, value, in.c + 1); break;
      case Mode::ktO: mark(writes, value, in.c); break;
      default: break;
    }
  };
  field(info.a, in.a);
  field(info.b, in.b);
  field(info.c, in.c);
  field(info.d, in.d);
}

bool Covers(const FunctionCode& fn, const Instr& in) {
  switch (in.op) {
    case Op::MATH_F:
    case Op::MATH_FI: return kMathInfo[in.d].fast1 != nullptr;
    case Op::MATH_FF: return kMathInfo[in.d].fast2 != nullptr;
    case Op::CALL_FN: {
      // Typed calls with typed results; a callee taking objects goes through
      // the interpreter, which owns reference counts.
      const FunctionCode& callee = *fn.module->functions[in.d];
      for (const Param& param : callee.params) {
        if (KindOf(param.type) == Kind::kObject) return false;
      }
      return KindOf(callee.result) != Kind::kObject;
    }
    default: break;
  }
  // Everything typed; nothing that touches an object register.
  if (HasFlag(in.op, kFlagObj)) return false;
  switch (in.op) {
    case Op::MOVE_O:
    case Op::RET_O:
    case Op::RET_NONE:
    case Op::CHECK_BOUND_O: return false;
    default: return true;
  }
}

std::vector<int32_t> LoopEntries(const FunctionCode& fn) {
  std::vector<int32_t> entries;
  for (int32_t header : fn.loop_headers) {
    // The loop is the code from its head to the last back edge that jumps there.
    int32_t end = header;
    for (int32_t pc = header; pc < static_cast<int32_t>(fn.code.size()); ++pc) {
      if (HasFlag(fn.code[pc].op, kFlagLoop) && fn.code[pc].d == header) end = pc;
    }
    bool covered = true;
    for (int32_t pc = header; pc <= end && covered; ++pc) covered = Covers(fn, fn.code[pc]);
    if (covered) entries.push_back(header);
  }
  return entries;
}

}  // namespace ppy::jit
