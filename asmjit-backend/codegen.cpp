#include "asmjit-backend/codegen.h"

#include "vm/math_table.h"

namespace ppy::jit {

void RegistersOf(const FunctionCode& fn, const Instr& in, RegisterSet* reads, RegisterSet* writes) {
  ForEachRegister(in, [&](int64_t reg, bool read, bool written) {
    if (reg < 0 || reg >= kMaxRegisters) return;
    if (read) reads->set(static_cast<size_t>(reg));
    if (written) writes->set(static_cast<size_t>(reg));
  });
}

bool Covers(const FunctionCode& fn, const Instr& in) {
  // Generated from vm/opcodes.def: machine code runs exactly the instructions
  // flagged JIT (and the unit test Jit.CompilesEveryInstructionFlaggedJit
  // holds CodeGen to it). Anything else leaves through a side exit.
  if (!HasFlag(in.op, kFlagJit)) return false;
  // Flagged instructions whose operands decide.
  switch (in.op) {
    case Op::MATH_F:
    case Op::MATH_FI: return kMathInfo[in.d].fast1 != nullptr;
    case Op::MATH_FF: return kMathInfo[in.d].fast2 != nullptr;
    // A nogil frame runs machine code without the GIL, and moving references
    // needs it: a @ppy.nogil function's machine code leaves MOVE_O to the
    // interpreter, which takes the GIL (other functions' machine code that
    // moves references is not entered by a nogil frame at all:
    // FunctionCode::moves_objects).
    case Op::MOVE_O: return !fn.nogil;
    case Op::CALL_FN: {
      // Typed calls with typed results; a callee taking objects goes through
      // the interpreter, which owns reference counts.
      const FunctionCode& callee = *fn.module->functions[in.d];
      for (const Param& param : callee.params) {
        if (KindOf(param.type) == Kind::kObject) return false;
      }
      return KindOf(callee.result) != Kind::kObject;
    }
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

bool EntersAtStart(const FunctionCode& fn) {
  // (Object code often starts with a MOVE_O, which machine code runs: an
  // entry for that alone would cost each call more than it saves.)
  return !fn.code.empty() && Covers(fn, fn.code[0]) && fn.code[0].op != Op::MOVE_O;
}

bool MachineCodeCanRun(const FunctionCode& fn) { return EntersAtStart(fn) || !LoopEntries(fn).empty(); }

// Small enough that running it in place costs less code than the call it
// replaces, and asmjit's allocator stays quick.
constexpr size_t kMaxInlineInstructions = 48;

bool InlinableCallee(const FunctionCode& caller, const FunctionCode& callee) {
  if (&caller == &callee || callee.code.empty() || callee.code.size() > kMaxInlineInstructions) return false;
  if (!callee.loop_headers.empty() || callee.may_have_effects) return false;
  const Kind result = KindOf(callee.result);
  if (result != Kind::kInt && result != Kind::kFloat) return false;
  for (const RegisterType& reg : callee.registers) {
    if (reg.kind != Kind::kInt && reg.kind != Kind::kFloat) return false;
  }
  for (const Instr& in : callee.code) {
    if (!Covers(callee, in) || HasFlag(in.op, kFlagCall) || HasFlag(in.op, kFlagLoop) || HasFlag(in.op, kFlagStore)) {
      return false;
    }
    // Forward jumps only: the inlined code is one pass from entry to a return.
    if (HasFlag(in.op, kFlagJump) && in.d <= static_cast<int32_t>(&in - callee.code.data())) return false;
  }
  return true;
}

void MarkInlinedCallees(const FunctionCode& fn) {
  for (const Instr& in : fn.code) {
    if (in.op != Op::CALL_FN || !Covers(fn, in)) continue;
    const FunctionCode& callee = *fn.module->functions[in.d];
    if (InlinableCallee(fn, callee)) callee.runtime->jit_inlined.store(true, std::memory_order_relaxed);
  }
}

}  // namespace ppy::jit
