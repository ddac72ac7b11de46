// The code generator: typed bytecode to machine code, for any backend.
//
// The machine code works on the interpreter's own frame. On entry it loads the
// typed registers it uses into virtual registers (a buffer register brings its
// data pointer and length along, and, if the function stores into it, the length
// a store may use: 0 for a read-only buffer, so that a store into one leaves for
// the interpreter, which raises what the exporter raises), then jumps to the entry pc:
// 0, or a loop header for on-stack replacement. Every instruction keeps its
// exact bytecode meaning. Whatever is unusual (an overflow, an index outside the
// buffer, a division by zero, a NaN where a fast path needs a number) leaves
// through a side exit: the registers the interpreter will read are stored back
// and the code returns the pc, so that the interpreter runs that very
// instruction and raises exactly what it raises. Instructions the machine code
// does not cover (object mode) leave the same way; the interpreter enters again
// at the next back edge.
//
// Bounds checks leave counted loops (range loops stepping by one) when the loop
// proves them: an access buf[i] or buf[base + i], with i the loop's counter and
// base, the bound and the buffer unchanged in the loop, stays inside the buffer
// on every iteration if it does on the first and the last. A guard at the loop's
// entry checks exactly that (and that a buffer the loop stores into is
// writable); if it fails, the loop runs on the interpreter, which raises the
// exact IndexError at the exact iteration.
#pragma once

#include <algorithm>
#include <bitset>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <string>
#include <vector>

#include <asmjit/core.h>

#include "asmjit-backend/backend.h"
#include "asmjit-backend/helpers.h"
#include "asmjit-backend/jit.h"
#include "vm/code.h"
#include "vm/interpreter.h"
#include "vm/runtime.h"
#include "vm/tiering.h"

namespace ppy::jit {

using RegisterSet = std::bitset<kMaxRegisters>;

// The registers an instruction reads and writes, from its operand modes.
void RegistersOf(const FunctionCode& fn, const Instr& in, RegisterSet* reads, RegisterSet* writes);

// Which instructions the machine code runs itself: those vm/opcodes.def flags
// JIT, where their operands allow (the rest are side exits).
bool Covers(const FunctionCode& fn, const Instr& in);

// The loop heads machine code can be entered at: those whose loop bodies it
// runs entirely. Sorted.
std::vector<int32_t> LoopEntries(const FunctionCode& fn);

// Whether a call of `fn` enters its machine code at its first instruction
// (FunctionRuntime::jit_enters_at_start): one machine code runs, but not a
// MOVE_O.
bool EntersAtStart(const FunctionCode& fn);

// Whether the interpreter would ever enter `fn`'s machine code: at its start
// (covered) or at a loop entry. Code for a function without either (object
// code) would never run, so none is made (CompileBlob).
bool MachineCodeCanRun(const FunctionCode& fn);

// Whether machine code for `caller` runs a typed call of `callee` (CALL_FN)
// as the callee's own instructions in place, with no frame (EmitInlineCall):
// a small function of ints and floats, without loops, calls or stores, with
// no effect a second run could repeat. Anything unusual in it (an overflow, a
// division by zero, a raise) makes the real call instead, from the start,
// which then does exactly what the interpreter does.
bool InlinableCallee(const FunctionCode& caller, const FunctionCode& callee);

// Marks the functions whose calls fn's machine code runs in place
// (FunctionRuntime::jit_inlined), for `ppy run --trace`.
void MarkInlinedCallees(const FunctionCode& fn);

template <typename B>
class CodeGen {
 public:
  using Int = typename B::Int;
  using Float = typename B::Float;
  using Label = typename B::Label;

  // `known`: int registers (parameters no instruction writes) whose values
  // the code may take as constants, for a value specialization; the
  // interpreter enters such code only with exactly those values.
  CodeGen(B& backend, const FunctionCode& fn, const KnownValues& known = {})
      : b_(backend), fn_(fn), known_(known.begin(), known.end()) {}

  // Instructions opcodes.def flags JIT that Generate found no case for:
  // CompileBlob refuses such code, and a unit test compiles every flagged one.
  const std::vector<Op>& missing() const { return missing_; }

  // Asks Generate to note the guards the code relies on (NoteGuard), which
  // guards() then gives in the order the code checks them. (Only `ppy dis
  // --jit` and the trace ask: a compile for running spends no time on words.)
  void NoteGuards() { note_guards_ = true; }
  const std::vector<JitGuard>& guards() const { return guards_; }

  void Generate() {
    Prepare();
    const int n = static_cast<int>(fn_.code.size());
    Int regs, result, context;
    b_.Begin(&regs, &result, &context, &entry_pc_);
    // The frame, the result and the context are needed only at exits, returns
    // and calls: they wait in stack slots so that loops have the registers.
    regs_slot_ = b_.NewSlot();
    result_slot_ = b_.NewSlot();
    context_slot_ = b_.NewSlot();
    b_.StoreSlot(regs, regs_slot_);
    b_.StoreSlot(result, result_slot_);
    b_.StoreSlot(context, context_slot_);
    LoadRegisters(regs);
    Dispatch();
    for (pc_ = 0; pc_ < n; ++pc_) {
      // (An element is never left pending across a label or a loop's entry.)
      if (pending_element_.reg >= 0 && (targets_[pc_] || fn_.IsLoopHeader(pc_))) LoadPendingElement();
      if (fn_.IsLoopHeader(pc_) && !counted_loops_.count(pc_) && !while_loops_.count(pc_)) b_.AlignLoop();
      if (targets_[pc_]) {
        b_.Bind(labels_[pc_]);
        ranges_.clear();  // (what the block before knew: not on every path here)
        nonzero_floats_.clear();
        sign_free_floats_.clear();
      }
      auto loop = counted_loops_.find(pc_);
      depth_marks_[b_.compiler().cursor()] = depth_[pc_];
      if (auto unrolled = unrolled_.find(pc_); unrolled != unrolled_.end()) {
        EmitUnrolled(loop->second, unrolled->second);
        continue;
      }
      if (auto fill = fills_.find(pc_); fill != fills_.end()) {
        EmitFill(loop->second, fill->second);
        continue;
      }
      if (auto sum = element_sums_.find(pc_); sum != element_sums_.end()) {
        EmitElementSum(loop->second, sum->second);
        continue;
      }
      if (loop != counted_loops_.end()) EmitGuards(loop->second);
      if (auto partial = partial_.find(pc_); partial != partial_.end()) EmitPartialPass(loop->second, partial->second);
      if (auto w = while_loops_.find(pc_); w != while_loops_.end()) EmitWhileGuard(w->first, w->second);
      if (chained_[pc_]) continue;
      if (auto chain = membership_.find(pc_); chain != membership_.end()) {
        EmitMembershipChain(chain->second);
        continue;
      }
      Instruction(fn_.code[pc_]);
    }
    depth_marks_[b_.compiler().cursor()] = 0;
    EmitExits();
    WeighVirtualRegisters();
    b_.End();
  }

 private:
  // ---- Analysis -----------------------------------------------------------------------

  void Analyze() {
    const int n = static_cast<int>(fn_.code.size());
    targets_.assign(n, false);
    jumps_to_.assign(n, {});
    targets_[0] = true;
    for (int32_t header : fn_.loop_headers) targets_[header] = true;
    for (int pc = 0; pc < n; ++pc) {
      const Instr& in = fn_.code[pc];
      if (HasFlag(in.op, kFlagJump)) {
        targets_[in.d] = true;
        jumps_to_[in.d].push_back(pc);
      }
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      if (Covers(fn_, in)) {
        used_ |= reads | writes;
        written_ |= writes;
        if (StoresInto(in) >= 0) stored_.set(StoresInto(in));
      }
    }
    // A buffer register another is copied from shares its store length, to
    // a fixed point: copies can chain in any order (`p, q = q, p` copies
    // through temporaries, after `p = a` copied a parameter).
    for (bool changed = true; changed;) {
      changed = false;
      for (const Instr& in : fn_.code) {
        if (in.op == Op::MOVE_U && stored_[in.a] != stored_[in.b]) {
          stored_.set(in.a);
          stored_.set(in.b);
          changed = true;
        }
      }
    }
    FindCountedLoops();
    // Liveness: what the interpreter may read after a side exit at pc.
    live_in_.assign(n, RegisterSet());
    for (bool changed = true; changed;) {
      changed = false;
      for (int pc = n - 1; pc >= 0; --pc) {
        const Instr& in = fn_.code[pc];
        RegisterSet out;
        uint32_t flags = InfoOf(in.op).flags;
        if (!(flags & kFlagEnd) && pc + 1 < n) out |= live_in_[pc + 1];
        if (flags & kFlagJump) out |= live_in_[in.d];
        RegisterSet reads, writes;
        RegistersOf(fn_, in, &reads, &writes);
        // A prange chunk ends: its loop's caller reads every register of the
        // chunk's frame (reductions, the last iteration's locals; vm/prange.h).
        if (in.op == Op::PRANGE_END) reads.set();
        RegisterSet live = reads | (out & ~writes);
        if (live != live_in_[pc]) {
          live_in_[pc] = live;
          changed = true;
        }
      }
    }
    FindLengthBoundedLoads();
    FindWhileLoops();
    FindIncrementsBelowLimits();
    FindFoldedChains();
    FindUnneededBaseDefinitions();
    FindStridedAccesses();
    FindProductInductions();
    FindCommonSubexpressions();
    FindFoldedOffsets();
    FindLoadsIntoArithmetic();
    FindLoadsIntoResults();
    FindRangeTests();
    FindMembershipChains();
    FindExactConversions();
    FindLoopDepths();
  }

  // Loads a while loop's test proves inside the buffer: `while i < n: c =
  // text[i]` with n = len(text). The load buf[x] needs no check when
  //   - x is never negative: every write of x in the function gives a value
  //     >= 0 from values >= 0 (a constant, a length, a sum or product that
  //     would have left on overflow, an unsigned element), and nothing reads
  //     x before some write (NonnegativeRegisters);
  //   - on the straight path back from the load (no jump lands in between)
  //     there is JLE_I m, x not taken, so x < m, with no write of x after
  //     it; and m is len(buf), the only write of m, of a buffer register the
  //     function never writes.
  // Only a torch tensor can change length during a call, when Python code
  // resizes it. A typed call after which it did leaves the machine code
  // (LeaveIfViewsMoved), and the interpreter follows the tensor; every entry
  // into the machine code then checks m <= len(buf) again (Dispatch), since m
  // may hold the old length. An m not yet written is 0, which passes.
  void FindLengthBoundedLoads() {
    const int n = static_cast<int>(fn_.code.size());
    std::vector<int> writes_of(fn_.num_registers(), 0);
    for (const Instr& in : fn_.code) {
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      for (int reg = 0; reg < fn_.num_registers(); ++reg) writes_of[reg] += writes[reg];
    }
    const std::vector<bool> nonnegative = NonnegativeRegisters();
    auto length_of = [&](int m, int buffer) {  // m is len(buffer), always
      if (writes_of[m] != 1 || writes_of[buffer] != 0 || m < fn_.num_params() || live_in_[0][m]) return false;
      for (const Instr& in : fn_.code) {
        if (in.op == Op::LEN_U && in.a == m) return in.b == buffer;
      }
      return false;
    };
    for (int pc = 0; pc < n; ++pc) {
      const Instr& in = fn_.code[pc];
      int buffer, base, index;
      bool store;
      if (!checked_[pc] || !FlatAccessOf(in, &buffer, &base, &index, &store) || store || base >= 0) continue;
      if (!nonnegative[index]) continue;
      for (int at = pc - 1; at >= 0 && !targets_[at + 1]; --at) {
        const Instr& earlier = fn_.code[at];
        if (earlier.op == Op::JLE_I && earlier.b == index && length_of(earlier.a, buffer)) {
          checked_[pc] = false;
          length_bounded_.insert(pc);
          length_bounds_.insert({earlier.a, buffer});
          break;
        }
        RegisterSet reads, writes;
        RegistersOf(fn_, earlier, &reads, &writes);
        if (writes[index] || (InfoOf(earlier.op).flags & kFlagEnd) || earlier.op == Op::JMP || earlier.op == Op::LOOP) {
          break;
        }
      }
    }
  }

  // Loops `while x < m:` (a head JLE_I m, x; a body with no loop in it; one
  // back edge, the closing LOOP; no jump into the body from outside) whose
  // body changes x only by `x += s` with steps s it never writes, and never
  // writes m. Each instruction of the body runs at most once per iteration,
  // and x holds its value from the head test (so x < m) until an add of it
  // runs: an add that no other add reaches from the head computes at most
  // m - 1 + s, and an access buf[x] that no add reaches indexes below m.
  // The loop's entry (EmitWhileGuard) checks, once,
  //   - every step >= 0: x never decreases;
  //   - m - 1 <= INT64_MAX - s for every step: those adds cannot overflow;
  //   - x >= 0 and m <= len(buf) (the store length for a store), for the
  //     accesses: they are inside their buffers;
  // and the body makes those adds and accesses without checks. A failed check
  // leaves for the interpreter at the head, which runs the loop. The back
  // edge goes past the checks (bodies_): nothing they read changes in the
  // loop, and a call that moves a buffer leaves the machine code.
  //
  // When every way around the loop adds to x, the loop runs in chunks
  // instead of counting ticks at its back edge (`chunked`): with every step
  // >= 1 (checked at the entry), x grows by at least s per iteration, so
  // `while x < lim` with lim = min(m, x + ticks * s) runs at most ticks
  // iterations; the head tests x < lim, and so does the back edge, which
  // goes past the head (the loop is rotated). At x >= lim with x < m a chunk
  // is over: check for signals, then the next chunk. (Iterations of a last
  // chunk are not charged to the ticks: a loop around it counts one tick per
  // entry, so a pending Ctrl-C waits at most ticks * ticks iterations.)
  // `while j < n: flags[j] = 0; j += i` (a sieve) and a tokenizer's
  // `while i < n: ... i += 1` run with no check but the loop's own test.
  struct WhileLoop {
    int header = 0;           // the pc of its test
    int end = 0;              // the pc of its closing LOOP
    int x = 0, m = 0;         // while R[x] < R[m]
    std::vector<int> steps;   // registers added to x by unchecked adds (all adds', when chunked)
    std::vector<std::pair<int, bool>> bounds;  // (buffer, store) of unchecked accesses
    bool chunked = false;
    bool nested = false;         // loops in its body (FindNestedWhileChunks): chunked, nothing more
    bool runs_to_bound = false;  // no way out but the head test (EmitWhileTest aligns its body)
    int span_step = -1;       // the one step of every add (lim = x + ticks * R[span_step]), or -1 for 1
    Int lim;                  // the chunk's limit
    Label chunk_start, chunk_end, after_test;
  };

  void FindWhileLoops() {
    const int n = static_cast<int>(fn_.code.size());
    for (int end = 0; end < n; ++end) {
      const Instr& close = fn_.code[end];
      const int header = close.d;
      if (close.op != Op::LOOP || header >= end || counted_loops_.count(header)) continue;
      const Instr& test = fn_.code[header];
      if (test.op != Op::JLE_I || (test.d > header && test.d <= end)) continue;
      WhileLoop loop;
      loop.header = header;
      loop.end = end;
      loop.x = test.b;
      loop.m = test.a;
      if (loop.x == loop.m || KindOf(loop.x) != Kind::kInt || WrittenIn(loop.m, header, end)) continue;
      // One way in (the head) and one way around (the closing LOOP), or
      // loops in the body (`nested`, below).
      bool simple = true, nested = false;
      for (int pc = 0; pc < n && simple; ++pc) {
        const Instr& in = fn_.code[pc];
        const bool inside = pc >= header && pc <= end;
        if (pc > header && pc <= end && fn_.IsLoopHeader(pc)) nested = true;
        if (!HasFlag(in.op, kFlagJump)) continue;
        if (inside && pc != end && in.d <= pc) nested = true;         // a loop in the body
        if (inside && pc != end && in.d <= header) simple = false;    // a way around but the closing LOOP
        if (!inside && in.d > header && in.d <= end) simple = false;  // a way into the body
      }
      if (!simple) continue;
      if (nested) {
        FindNestedWhileChunks(loop, end);
        continue;
      }
      // The adds of x (all its writes).
      std::vector<int> adds;
      auto step_of = [&](int pc) { return fn_.code[pc].b == loop.x ? fn_.code[pc].c : fn_.code[pc].b; };
      for (int pc = header + 1; pc < end && simple; ++pc) {
        const Instr& in = fn_.code[pc];
        RegisterSet reads, writes;
        RegistersOf(fn_, in, &reads, &writes);
        if (!writes[loop.x]) continue;
        const bool add = in.op == Op::ADD_I && in.a == loop.x && (in.b == loop.x) != (in.c == loop.x);
        if (!add) {
          simple = false;
          break;
        }
        const int step = step_of(pc);
        // (A known step and limit the guard would always fail: no guard.)
        const bool fails = ConstantInRange(step, 2, INT64_MAX) &&
                           ConstantInRange(loop.m, INT64_MAX - ConstantValueOf(step) + 2, INT64_MAX);
        if (WrittenIn(step, header, end) || ConstantInRange(step, INT64_MIN, -1) || fails) simple = false;
        adds.push_back(pc);
      }
      if (!simple) continue;
      const AddFlow flow = FlowOfAdds(header, end, adds);
      auto add_step = [&](int step) {
        if (std::find(loop.steps.begin(), loop.steps.end(), step) == loop.steps.end()) loop.steps.push_back(step);
      };
      for (int pc : adds) {
        if (flow.after_add[pc] || within_guard_.count(pc)) continue;  // (another add may have run)
        add_step(step_of(pc));
        within_guard_.insert(pc);
      }
      for (int pc = header + 1; pc < end; ++pc) {
        int buffer, base, index;
        bool store;
        if (flow.after_add[pc] || !checked_[pc] || !FlatAccessOf(fn_.code[pc], &buffer, &base, &index, &store)) {
          continue;
        }
        if (base >= 0 || index != loop.x || WrittenIn(buffer, header, end)) continue;
        checked_[pc] = false;
        if (std::find(loop.bounds.begin(), loop.bounds.end(), std::pair{buffer, store}) == loop.bounds.end()) {
          loop.bounds.push_back({buffer, store});
        }
      }
      // Chunks need every way around to add, by known or checked steps >= 1.
      loop.chunked = flow.reached[end] && flow.all_add[end];
      for (int pc : adds) loop.chunked = loop.chunked && !ConstantInRange(step_of(pc), 0, 0);
      if (loop.chunked || !loop.bounds.empty()) {  // (x must never decrease)
        for (int pc : adds) add_step(step_of(pc));
      }
      loop.runs_to_bound = true;
      for (int pc = header + 1; pc < end; ++pc) {
        const Instr& in = fn_.code[pc];
        if (HasFlag(in.op, kFlagEnd) || (HasFlag(in.op, kFlagJump) && in.d > end)) loop.runs_to_bound = false;
      }
      if (loop.chunked) {
        loop.span_step = step_of(adds.front());
        for (int pc : adds) {
          if (step_of(pc) != loop.span_step) loop.span_step = -1;
        }
      }
      if (!loop.steps.empty() || !loop.bounds.empty()) while_loops_[header] = loop;
    }
  }

  // A while loop `while x < m:` with loops in its body, a tokenizer's
  // `while i < n:` around its words' and numbers' own loops: where every
  // write of x in it (the inner loops' included) adds a known step >= 1 and
  // every way around adds, x grows by at least 1 an iteration, and the loop
  // runs in chunks as a loop without loops does (`chunked`; lim = min(m, x
  // + ticks)), instead of counting a tick per iteration. Nothing else: its
  // adds keep their checks (an add in an inner loop runs many times an
  // iteration) and so do its accesses, so its head needs no guard (and an
  // entry at an inner loop needs none either: Dispatch gives it lim = x, a
  // chunk that ends at the next test). Each inner loop counts its own
  // iterations or runs in chunks of its own: between two checks for signals
  // at most ticks outer iterations run, each with its inner loops' at most
  // ticks, as before.
  void FindNestedWhileChunks(WhileLoop& loop, int end) {
    const int header = loop.header;
    std::vector<int> adds;
    for (int pc = header + 1; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      if (!writes[loop.x]) continue;
      const bool add = in.op == Op::ADD_I && in.a == loop.x && (in.b == loop.x) != (in.c == loop.x);
      if (!add || !ConstantInRange(in.b == loop.x ? in.c : in.b, 1, INT64_MAX)) return;
      adds.push_back(pc);
    }
    // (An inner loop's back edge adds nothing FlowOfAdds does not see: its
    // head was reached before it.)
    const AddFlow flow = FlowOfAdds(header, end, adds);
    if (adds.empty() || !flow.reached[end] || !flow.all_add[end]) return;
    loop.chunked = true;
    loop.nested = true;
    loop.span_step = -1;
    while_loops_[header] = loop;
  }

  // Forward over the body [header + 1, end] of a while loop, along its
  // forward edges, for the adds to its x at `adds`: which pcs are reached,
  // whether some add may have run before pc in this iteration (after_add),
  // and whether one must have (all_add).
  struct AddFlow {
    std::vector<bool> reached, after_add, all_add;
  };
  AddFlow FlowOfAdds(int header, int end, const std::vector<int>& adds) const {
    AddFlow flow{std::vector<bool>(end + 1, false), std::vector<bool>(end + 1, false), std::vector<bool>(end + 1, true)};
    flow.reached[header + 1] = true;
    flow.all_add[header + 1] = false;
    for (int pc = header + 1; pc < end; ++pc) {
      if (!flow.reached[pc]) continue;
      const Instr& in = fn_.code[pc];
      const bool adds_here = std::find(adds.begin(), adds.end(), pc) != adds.end();
      auto to = [&](int next) {
        flow.reached[next] = true;
        flow.after_add[next] = flow.after_add[next] || flow.after_add[pc] || adds_here;
        flow.all_add[next] = flow.all_add[next] && (flow.all_add[pc] || adds_here);
      };
      if (!HasFlag(in.op, kFlagEnd)) to(pc + 1);
      if (HasFlag(in.op, kFlagJump) && in.d > pc && in.d <= end) to(in.d);
    }
    return flow;
  }

  // `i += 1` where `i < n` holds, on every path to it, since a test with
  // neither written after: i + 1 <= n <= INT64_MAX, no overflow check (a
  // tokenizer's `while i < n: c = text[i]; if c == 32: i += 1 ...`, where
  // the add sits after a join the block-local ranges forget). A forward
  // dataflow over the function of facts R[x] < R[m]: made by the fall-through
  // of JLE_I m, x and the taken branch of JLT_I x, m, killed by a write of
  // either, met by intersection at joins.
  void FindIncrementsBelowLimits() {
    const int n = static_cast<int>(fn_.code.size());
    using Facts = std::vector<std::pair<int, int>>;  // (x, m): R[x] < R[m]
    constexpr size_t kMaxFacts = 8;
    std::vector<std::optional<Facts>> in(n);          // nullopt: not reached yet
    in[0] = Facts{};
    auto meet = [&](int to, const Facts& facts) {
      if (to < 0 || to >= n) return false;
      if (!in[to]) {
        in[to] = facts;
        return true;
      }
      Facts kept;
      for (const auto& fact : *in[to]) {
        if (std::find(facts.begin(), facts.end(), fact) != facts.end()) kept.push_back(fact);
      }
      if (kept.size() == in[to]->size()) return false;
      in[to] = std::move(kept);
      return true;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (int pc = 0; pc < n; ++pc) {
        if (!in[pc]) continue;
        const Instr& ins = fn_.code[pc];
        RegisterSet reads, writes;
        RegistersOf(fn_, ins, &reads, &writes);
        Facts out;
        for (const auto& [x, m] : *in[pc]) {
          if (!writes[x] && !writes[m]) out.emplace_back(x, m);
        }
        Facts fall = out, taken = out;
        if (ins.op == Op::JLE_I && ins.a != ins.b) fall.emplace_back(ins.b, ins.a);
        if (ins.op == Op::JLT_I && ins.a != ins.b) taken.emplace_back(ins.a, ins.b);
        // (At most kMaxFacts, the newest: fewer facts only keep more
        // checks, and a large function stays quick to compile.)
        for (Facts* facts : {&fall, &taken}) {
          if (facts->size() > kMaxFacts) facts->erase(facts->begin());
        }
        const uint32_t flags = InfoOf(ins.op).flags;
        if (!(flags & kFlagEnd)) changed |= meet(pc + 1, fall);
        if (flags & kFlagJump) changed |= meet(ins.d, taken);
      }
    }
    for (int pc = 0; pc < n; ++pc) {
      const Instr& ins = fn_.code[pc];
      if (ins.op != Op::ADD_I || !in[pc]) continue;
      for (auto [x, k] : {std::pair<int, int>{ins.b, ins.c}, std::pair<int, int>{ins.c, ins.b}}) {
        if (!ConstantInRange(k, 0, 1)) continue;
        for (const auto& fact : *in[pc]) {
          if (fact.first == x) within_guard_.insert(pc);
        }
      }
    }
  }

  // The int registers that never hold a negative value (see
  // FindLengthBoundedLoads): a greatest fixpoint, starting from every int
  // register that is not a parameter and is written before it is read.
  std::vector<bool> NonnegativeRegisters() const {
    const int count = fn_.num_registers();
    std::vector<bool> nonnegative(count, false);
    for (int reg = fn_.num_params(); reg < count; ++reg) {
      if (KindOf(reg) != Kind::kInt) continue;
      nonnegative[reg] = fn_.IsConstantRegister(reg) ? ConstantInRange(reg, 0, INT64_MAX) : !live_in_[0][reg];
    }
    auto nonneg = [&](int reg) { return nonnegative[reg]; };
    for (bool changed = true; changed;) {
      changed = false;
      for (const Instr& in : fn_.code) {
        RegisterSet reads, writes;
        RegistersOf(fn_, in, &reads, &writes);
        for (int reg = 0; reg < count; ++reg) {
          if (!writes[reg] || !nonnegative[reg]) continue;
          bool keeps = false;
          switch (in.op) {
            case Op::MOVE_I: keeps = nonneg(in.b); break;
            case Op::ADD_I: case Op::MUL_I: keeps = nonneg(in.b) && nonneg(in.c); break;  // (overflow raises)
            case Op::FORLOOP_INC: keeps = reg == in.a && nonneg(in.a); break;
            case Op::LEN_U: keeps = true; break;
            case Op::LOAD_I: {
              auto range = ElementRange(fn_.registers[in.b].elem);
              keeps = range && range->low >= 0;
              break;
            }
            default: break;
          }
          if (!keeps) {
            nonnegative[reg] = false;
            changed = true;
          }
        }
      }
    }
    return nonnegative;
  }

  // Python's `low <= c <= high` (or its negation) as the compiler emits it,
  // two tests of one register against constants:
  //   JLT_I c, low -> X; JLT_I high, c -> X         (out of range: X)
  //   JLT_I c, low -> pc+2; JLE_I c, high -> Y      (in range: Y)
  // (each JLT_I or JLE_I, with the constant adjusted by one), becomes one
  // unsigned compare, as gcc emits it: c - low, wrapped, is at most
  // high - low exactly when c is in the range. Nothing may jump to the
  // second test, and neither may be a while loop's head (FindWhileLoops).
  void FindRangeTests() {
    const int n = static_cast<int>(fn_.code.size());
    for (int pc = 0; pc + 2 < n; ++pc) {
      const Instr& first = fn_.code[pc];
      const Instr& second = fn_.code[pc + 1];
      if (targets_[pc + 1] || while_loops_.count(pc) || while_loops_.count(pc + 1)) continue;
      if ((first.op != Op::JLT_I && first.op != Op::JLE_I) || (second.op != Op::JLT_I && second.op != Op::JLE_I)) {
        continue;
      }
      const int c = first.a;
      const std::optional<int64_t> k1 = ConstantOf(first.b);
      if (ConstantOf(c) || !k1 || (first.op == Op::JLE_I && *k1 == INT64_MAX)) continue;
      const int64_t low = first.op == Op::JLT_I ? *k1 : *k1 + 1;  // c < low leaves
      RangeTest test{c, low, 0, first.d, false};
      if (second.b == c && second.d == first.d) {  // c > high leaves for the same place
        const std::optional<int64_t> k2 = ConstantOf(second.a);
        if (!k2 || (second.op == Op::JLE_I && *k2 == INT64_MIN)) continue;
        test.high = second.op == Op::JLT_I ? *k2 : *k2 - 1;
      } else if (second.a == c && first.d == pc + 2) {  // c <= high jumps, the rest falls through
        const std::optional<int64_t> k2 = ConstantOf(second.b);
        if (!k2 || (second.op == Op::JLT_I && *k2 == INT64_MIN)) continue;
        test.high = second.op == Op::JLE_I ? *k2 : *k2 - 1;
        test.target = second.d;
        test.in_range_jumps = true;
      } else {
        continue;
      }
      // (Both constants small: one add and one compare with immediates.)
      const int64_t small = int64_t{1} << 30, high = test.high;
      if (low < high && -small < low && high < small) range_tests_[pc] = test;
    }
  }

  // Chains of equality tests of one int against small constants that all
  // lead to one place, as a parser tests for whitespace:
  //   JEQ_I c, 32 -> T; JEQ_I c, 10 -> T; JEQ_I c, 9 -> T; JNE_I c, 13 -> F
  // (T falls through), or ending JEQ_I c, k -> T with F falling through.
  // Made one at a time, a value outside the set (the usual byte) passes
  // every test. With every constant in [0, 63] the chain is one unsigned
  // compare with the greatest (c above it leaves for F at once, negative c
  // too) and one bit test of c in a mask of the set, as gcc lowers a switch
  // (`cmp c, 32; ja F; bt mask, c; jc T`). Three tests at least; no jump
  // from elsewhere lands inside the chain.
  struct MembershipChain {
    int c;               // the register tested
    uint64_t mask;       // bit k: c == k leads inside
    int64_t greatest;    // the greatest k
    int inside, outside; // where members and the rest go
    int end;             // the chain's last pc
  };
  void FindMembershipChains() {
    const int n = static_cast<int>(fn_.code.size());
    chained_.assign(n, false);
    for (int start = 0; start < n; ++start) {
      int c = -1, inside = -1;
      uint64_t mask = 0;
      int64_t greatest = 0;
      int end = start;
      auto member = [&](int pc) -> std::optional<int64_t> {  // the constant pc tests c against
        const Instr& in = fn_.code[pc];
        if (in.op != Op::JEQ_I && in.op != Op::JNE_I) return std::nullopt;
        std::optional<int64_t> k = ConstantOf(in.b);
        int tested = in.a;
        if (!k) k = ConstantOf(in.a), tested = in.b;
        if (!k || *k < 0 || *k > 63 || ConstantOf(tested) || (c >= 0 && tested != c)) return std::nullopt;
        c = tested;
        return k;
      };
      // JEQ_I c, k -> inside, for as long as they go
      for (int pc = start; pc < n && (pc == start || !targets_[pc]); ++pc) {
        const std::optional<int64_t> k = member(pc);
        if (!k || fn_.code[pc].op != Op::JEQ_I || (inside >= 0 && fn_.code[pc].d != inside)) break;
        inside = fn_.code[pc].d;
        mask |= uint64_t{1} << *k;
        greatest = std::max(greatest, *k);
        end = pc;
      }
      if (inside < 0) continue;
      int outside = end + 1;
      // A last JNE_I c, k -> outside, whose fall through is `inside`.
      if (end + 2 < n && !targets_[end + 1] && inside == end + 2) {
        if (const std::optional<int64_t> k = member(end + 1); k && fn_.code[end + 1].op == Op::JNE_I) {
          mask |= uint64_t{1} << *k;
          greatest = std::max(greatest, *k);
          ++end;
          outside = fn_.code[end].d;
        }
      }
      if (end - start < 2 || (inside >= start && inside <= end + 1 && inside != end + 1) ||
          (outside >= start && outside <= end)) {
        continue;
      }
      membership_[start] = {c, mask, greatest, inside, outside, end};
      for (int pc = start + 1; pc <= end; ++pc) chained_[pc] = true;
      start = end;
    }
  }

  // Loads whose element the next instruction takes as its operand, as gcc
  // does (x86-64: `vaddsd x, y, [element]` or `add x, [element]`, one
  // instruction for two): a float64 element into a register that only the
  // add, subtract or multiply right after reads (as its second operand;
  // either, for add and multiply), where nothing jumps in between and
  // nothing reads the register after, so no side exit hands it to the
  // interpreter. An int64 element likewise into a checked add or subtract
  // (prefix sums: `running += xs[i]`, `out[i] - out[i - 1]`), whose
  // overflow exit loads it for the interpreter (AddOrSubElement). The load
  // keeps its checks where it was; only the element's read moves
  // (LoadElementTo leaves it pending, the arithmetic takes it).
  //
  // A float64 element may also wait past one float add, subtract or
  // multiply that does not touch its register (passes_pending_): `s[q] +=
  // dx * m` loads s[q] before the multiply, and the add takes it. Such
  // arithmetic cannot leave, so no exit needs the register in between; and
  // where its result dies at the add, it is computed into the add's result
  // register (arithmetic_into_results_), so that the add is one `addsd r,
  // [element]` with no copy before it.
  void FindLoadsIntoArithmetic() {
    const int n = static_cast<int>(fn_.code.size());
    loads_into_arithmetic_.assign(n, false);
    passes_pending_.assign(n, false);
    arithmetic_into_results_.assign(n, -1);
    auto pure_float = [](Op op) { return op == Op::ADD_F || op == Op::SUB_F || op == Op::MUL_F; };
    for (int pc = 0; pc + 2 < n; ++pc) {
      const Instr& load = fn_.code[pc];
      bool is_float;
      switch (load.op) {
        case Op::LOAD_F64: case Op::LOAD_F: case Op::LOADX_F64: case Op::LOADN_F: is_float = true; break;
        case Op::LOAD_I64: case Op::LOAD_I: case Op::LOADX_I64: case Op::LOADN_I: is_float = false; break;
        default: continue;
      }
      const int r = load.a;
      int at = pc + 1;  // the arithmetic that takes the element
      const Instr& between = fn_.code[pc + 1];
      const Instr& next = fn_.code[pc + 2];
      if (is_float && pc + 3 < n && pure_float(between.op) && between.a != r && between.b != r && between.c != r &&
          !targets_[pc + 1] && same_as_[pc + 1] < 0 && (next.b == between.a || next.c == between.a)) {
        at = pc + 2;
      }
      const Instr& use = fn_.code[at];
      const ElemType elem = fn_.registers[load.b].elem;
      if (elem != (is_float ? ElemType::kF64 : ElemType::kI64) || targets_[at] || same_as_[at] >= 0) continue;
      const bool commutes = is_float ? use.op == Op::ADD_F || use.op == Op::MUL_F : use.op == Op::ADD_I;
      if (!commutes && use.op != (is_float ? Op::SUB_F : Op::SUB_I)) continue;
      if (use.b == use.c || live_in_[at + 1][r] || (!is_float && use.a == r)) continue;
      loads_into_arithmetic_[pc] = use.c == r || (commutes && use.b == r);
      if (!loads_into_arithmetic_[pc] || at == pc + 1) continue;
      passes_pending_[pc + 1] = true;
      const int product = between.a;  // into the add's result, if it dies there and the multiply reads no result
      // (A later repeat of the product copies its register, which must hold it: copied_from_.)
      if (use.a != r && use.a != product && use.a != between.b && use.a != between.c && !live_in_[at + 1][product] &&
          !copied_from_.count(product)) {
        arithmetic_into_results_[pc + 1] = use.a;
      }
    }
  }

  // A float element loaded as the first operand of arithmetic that takes
  // the next element as its memory operand (FindLoadsIntoArithmetic): `dx =
  // s[p] - s[q]`. In its own register the first element needs a copy into
  // the result's before the two-operand instruction (x86-64: movapd, then
  // `subsd dx, [s[q]]`), and asmjit's allocator cannot give both one
  // register: the element's is a temporary the body writes again while dx
  // lives. Loaded into the result's register instead, it needs none
  // (Instruction aliases the two for the three instructions). Only where
  // nothing else reads the element's register (it dies at the arithmetic)
  // and neither load can leave, so that no exit or out-of-line path needs
  // the register's own.
  void FindLoadsIntoResults() {
    const int n = static_cast<int>(fn_.code.size());
    loads_into_results_.assign(n, -1);
    auto float_load = [](Op op) {
      return op == Op::LOAD_F64 || op == Op::LOAD_F || op == Op::LOADX_F64 || op == Op::LOADN_F;
    };
    for (int pc = 0; pc + 3 < n; ++pc) {
      const Instr& load = fn_.code[pc];
      const Instr& use = fn_.code[pc + 2];
      if (!float_load(load.op) || !loads_into_arithmetic_[pc + 1] || loads_into_arithmetic_[pc]) continue;
      if (passes_pending_[pc + 2]) continue;  // (the element's taker is further on)
      if (targets_[pc + 1] || targets_[pc + 2] || same_as_[pc + 2] >= 0 || MayExit(pc) || MayExit(pc + 1)) continue;
      const int first = load.a, second = fn_.code[pc + 1].a;
      const bool commutes = use.op == Op::ADD_F || use.op == Op::MUL_F;
      if (!commutes && use.op != Op::SUB_F) continue;
      const bool operands = (use.b == first && use.c == second) || (commutes && use.c == first && use.b == second);
      if (!operands || use.a == first || use.a == second || live_in_[pc + 3][first] || copied_from_.count(first)) continue;
      loads_into_results_[pc] = use.a;
    }
  }

  // Constants folded into addresses: ADD_I x, y, k or SUB_I x, y, k (k a
  // known int) whose result only accesses without a check (a loop's guard
  // proved them) read, as their index, on the straight path until it dies,
  // with y unchanged and nothing that may leave for the interpreter (which
  // would read x) in between. The accesses address data + y * size + k *
  // size, and the arithmetic is skipped: nbody's `s[q + 3] += ...` (a load
  // and a store), prefix_sum's `out[i - 1]`.
  void FindFoldedOffsets() {
    const int n = static_cast<int>(fn_.code.size());
    std::set<int> hoisted;  // (their index comes from the guard)
    for (const auto& [header, loop] : counted_loops_) hoisted.insert(loop.invariant_accesses.begin(), loop.invariant_accesses.end());
    for (int pc = 0; pc < n; ++pc) {
      const Instr& in = fn_.code[pc];
      if ((in.op != Op::ADD_I && in.op != Op::SUB_I) || in.a == in.b || unneeded_[pc]) continue;
      if (!ConstantInRange(in.c, -(int64_t{1} << 24), int64_t{1} << 24) || KindOf(in.b) != Kind::kInt) continue;
      if (copied_from_.count(in.a) || invariant_owner_.count(pc)) continue;
      const int64_t k = in.op == Op::ADD_I ? ConstantValueOf(in.c) : -ConstantValueOf(in.c);
      std::vector<int> uses;
      bool ok = false;
      for (int at = pc + 1; at < n; ++at) {
        if (targets_[at]) break;
        if (!live_in_[at][in.a]) {
          ok = !uses.empty();
          break;
        }
        const Instr& use = fn_.code[at];
        RegisterSet reads, writes;
        RegistersOf(fn_, use, &reads, &writes);
        if (reads[in.a]) {
          int buffer, base, index;
          bool store;
          if (!FlatAccessOf(use, &buffer, &base, &index, &store) || base >= 0 || index != in.a || checked_[at] ||
              hoisted.count(at) || access_loop_.count(at) || folded_pcs_.count(at) || length_bounded_.count(at) ||
              (store && use.c == in.a)) {
            break;
          }
          uses.push_back(at);
        }
        if (MayExit(at) || (InfoOf(use.op).flags & (kFlagJump | kFlagEnd))) break;
        if (writes[in.b] || writes[in.a]) {
          ok = !uses.empty() && !(at + 1 < n && live_in_[at + 1][in.a] && !writes[in.a]);
          break;
        }
      }
      if (!ok) continue;
      folded_adds_.insert(pc);
      for (int at : uses) folded_offsets_[at] = {in.b, k};
    }
  }

  // The byte offset folded into the current access's address (FindFoldedOffsets).
  // (Or by SumIndex, for LOADX/STOREX with a known second register; plus
  // the trip of an unrolled copy, for an access by its counter.)
  int32_t ElementOffset(int buffer) const {
    int64_t k = 0;
    if (auto folded = folded_offsets_.find(pc_); folded != folded_offsets_.end()) k = folded->second.second;
    else if (sum_offset_.first == pc_) k = sum_offset_.second;
    if (copy_offset_.first == pc_) k += copy_offset_.second;
    if (auto row = row_offsets_.find(pc_); row != row_offsets_.end()) k += row->second;
    return static_cast<int32_t>(k * InfoOf(fn_.registers[buffer].elem).size);
  }

  // asmjit's allocator gives registers first to the virtual registers of
  // highest priority, their references per unit of live range plus a hundredth
  // of their weight; by default every weight is 1, so a value that lives through
  // the whole function (a buffer's data pointer, a local) ranks by how few
  // instructions it spans, not by how often the hot loops read it, and the
  // tokenizer's inner loops reloaded the text's data pointer and decremented
  // the signal ticks in memory. The classic spill cost instead: a machine
  // instruction at loop depth d (the back edges around its pc) counts
  // kLoopWeight[d] for each virtual register it reads or writes, and a
  // register weighs the sum, capped at 255 (WeighVirtualRegisters).
  static constexpr int kLoopWeight[] = {1, 8, 64, 255};

  void FindLoopDepths() {
    const int n = static_cast<int>(fn_.code.size());
    depth_.assign(n, 0);
    for (int pc = 0; pc < n; ++pc) {
      const Instr& in = fn_.code[pc];
      if (!HasFlag(in.op, kFlagJump) || in.d > pc) continue;
      for (int at = in.d; at <= pc; ++at) depth_[at] = std::min(depth_[at] + 1, 3);
    }
  }

  // Walks the emitted instructions: after a node in depth_marks_ (the last
  // node before a pc's code, or before the out-of-line code, depth 0) the
  // depth is that pc's.
  void WeighVirtualRegisters() {
    asmjit::BaseCompiler& cc = b_.compiler();
    std::vector<int> weight(cc.virtRegs().size(), 0);
    auto add = [&](uint32_t id, int depth) {
      if (!asmjit::Operand::isVirtId(id)) return;
      int& w = weight[asmjit::Operand::virtIdToIndex(id)];
      w = std::min(w + kLoopWeight[depth], 255);
    };
    int depth = 0;
    for (asmjit::BaseNode* node = cc.firstNode(); node; node = node->next()) {
      if (node->isInst()) {
        const asmjit::InstNode* inst = node->as<asmjit::InstNode>();
        for (uint32_t i = 0; i < inst->opCount(); ++i) {
          const asmjit::Operand& op = inst->operands()[i];
          if (op.isReg()) {
            add(op.id(), depth);
          } else if (op.isMem()) {
            const asmjit::BaseMem& mem = op.as<asmjit::BaseMem>();
            if (mem.hasBaseReg()) add(mem.baseId(), depth);
            if (mem.hasIndexReg()) add(mem.indexId(), depth);
          }
        }
      }
      if (auto mark = depth_marks_.find(node); mark != depth_marks_.end()) depth = mark->second;
    }
    for (size_t i = 0; i < weight.size(); ++i) {
      if (weight[i] > 1) cc.virtRegs()[i]->setWeight(static_cast<uint32_t>(weight[i]));
    }
  }

  // Local common subexpressions: int or float arithmetic (CommonOp) whose
  // operands an earlier instruction of the same kind already combined (an add
  // or a multiply in either order) on the path into it without a merge, with
  // neither operand nor that instruction's result written since, copies the
  // result: the inlined eval_a(i, j) computes i + j twice, Mandelbrot's loop
  // zr * zr twice. It cannot overflow or divide by zero: the earlier one
  // would have left first.
  void FindCommonSubexpressions() {
    const int n = static_cast<int>(fn_.code.size());
    same_as_.assign(n, -1);
    struct Computed {
      Op op;
      int b, c, a;
    };
    std::vector<Computed> block;
    for (int pc = 0; pc < n; ++pc) {
      if (targets_[pc]) block.clear();
      const Instr& in = fn_.code[pc];
      const bool arithmetic = CommonOp(in.op);
      if (arithmetic && !unneeded_[pc]) {
        for (const Computed& earlier : block) {
          const bool commutes = (in.op == Op::ADD_I || in.op == Op::MUL_I || in.op == Op::ADD_F || in.op == Op::MUL_F) &&
                                earlier.b == in.c && earlier.c == in.b;
          if (earlier.op == in.op && ((earlier.b == in.b && earlier.c == in.c) || commutes)) {
            same_as_[pc] = earlier.a;
            copied_from_.insert(earlier.a);
            break;
          }
        }
      }
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      std::erase_if(block, [&](const Computed& e) { return writes[e.a] || writes[e.b] || writes[e.c]; });
      if (arithmetic && !unneeded_[pc] && in.a != in.b && in.a != in.c) block.push_back({in.op, in.b, in.c, in.a});
    }
  }

  static bool CommonOp(Op op) {
    switch (op) {
      case Op::ADD_I: case Op::SUB_I: case Op::MUL_I:
      case Op::ADD_F: case Op::SUB_F: case Op::MUL_F: case Op::DIV_F: return true;
      default: return false;
    }
  }

  // The instructions that compute a folded access's offset (and its last
  // index, counter + 1) need not run in the loop when nothing else reads
  // their results: the access addresses from its row pointer and the
  // counter, and no side exit hands them to the interpreter while they are
  // live. Decided from the last instruction back, so that a computation whose
  // only readers are themselves skipped is skipped too.
  void FindFoldedChains() {
    unneeded_.assign(fn_.code.size(), false);
    std::set<int> candidates;
    for (const auto& [header, loop] : counted_loops_) {
      for (const FoldedAccess& folded : loop.folded) candidates.insert(folded.chain.begin(), folded.chain.end());
    }
    const int n = static_cast<int>(fn_.code.size());
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      const int def = *it;
      const int reg = fn_.code[def].a;
      bool skippable = false;
      for (int at = def + 1; at < n; ++at) {
        if (!live_in_[at][reg]) {
          skippable = true;
          break;
        }
        RegisterSet reads, writes;
        RegistersOf(fn_, fn_.code[at], &reads, &writes);
        const bool silent = unneeded_[at] || folded_pcs_.count(at);  // reads nothing of it
        if (reads[reg] && !silent) break;
        if (MayExit(at)) break;  // the interpreter would read it there
        if (writes[reg]) {
          skippable = true;
          break;
        }
      }
      unneeded_[def] = skippable;
    }
  }

  // Whether R[A] of the instruction at def can go unmade: on the straight
  // path after it, up to where it dies or is written again, only the access
  // at `use` reads it, as its index (a load or a float store: an int
  // store's value may be R[A] too), and no instruction may leave for the
  // interpreter, which would read it (the access neither: the interpreter
  // would run it again). The `unmade` pcs emit nothing: they neither read
  // it nor leave.
  bool OnlyIndexedBy(int def, int use, const std::set<int>& unmade = {}) const {
    const int reg = fn_.code[def].a, n = static_cast<int>(fn_.code.size());
    for (int at = def + 1; at < n; ++at) {
      if (!live_in_[at][reg]) return true;
      if (targets_[at]) return false;
      const Instr& in = fn_.code[at];
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      if (unmade.count(at)) {
        if (writes[reg]) return false;
        continue;
      }
      const bool as_index = at == use && (StoresInto(in) < 0 || in.op == Op::STORE_F64 || in.op == Op::STORE_F ||
                                          in.op == Op::STOREX_F64);
      if ((reads[reg] && !as_index) || MayExit(at) || (InfoOf(in.op).flags & (kFlagJump | kFlagEnd))) return false;
      if (writes[reg]) return true;
    }
    return false;
  }

  // A base the loop recomputes for hoisted accesses (buf[t + i], t = a + b
  // each iteration) need not be computed in the loop when nothing else reads
  // it: the guard computed its value, and no side exit between the computation
  // and its last use hands it to the interpreter.
  void FindUnneededBaseDefinitions() {
    // The sum t + counter of an access that became buf[t + counter] (see
    // FindCountedLoops): unmade if, up to where it is written again or
    // dies, only that access reads it and nothing may leave before.
    for (const auto& [pc, def] : access_index_def_) unneeded_[def] = OnlyIndexedBy(def, pc);
    for (const auto& [pc, def] : access_base_def_) {
      if (def < 0 || unneeded_[def]) continue;
      const int reg = fn_.code[def].a;
      const int end = loop_end_.at(access_loop_.at(pc));
      bool may_exit = false;
      for (int at = def + 1; at <= end; ++at) {
        if (!live_in_[at][reg]) {  // the interpreter's code reads it no more
          unneeded_[def] = true;
          break;
        }
        RegisterSet reads, writes;
        RegistersOf(fn_, fn_.code[at], &reads, &writes);
        if (reads[reg]) {
          auto use = access_base_def_.find(at);
          if (may_exit || use == access_base_def_.end() || use->second != def) break;
        }
        may_exit = may_exit || MayExit(at);
      }
    }
  }

  // Strength reduction of affine accesses (FindAffineAccesses): for
  // `b[k * n + j]` in the loop over k (an ADD_I then the access, or the
  // access's own LOADX/STOREX sum), with j and n unchanged by the loop and
  // nothing but the access reading k * n and k * n + j, as its index, and
  // no side exit handing them to the interpreter (OnlyIndexedBy), the
  // multiply and the add go unmade. The access is based[k] instead, with
  // based = data + (first - low) * size set by the guard (first: the index
  // at the loop's first iteration, low; so that based[low] is the first
  // element) and moved by (s - 1) * size bytes at each back edge: one add
  // per iteration in place of a multiply and an add. (Addresses wrap as the products would: only
  // the element's address need be exact.) Not in unrolled loops, which have
  // no back edge, nor in loops counting down.
  void FindStridedAccesses() {
    for (auto& [header, loop] : counted_loops_) {
      if (loop.down || unrolled_.count(header) || fills_.count(header) || element_sums_.count(header)) continue;
      for (AffineAccess& access : loop.affine) {
        // (A LOADX/STOREX second register is one more term: product_def is
        // then the index's own definition, and there is no sum.)
        if (access.scale < 0 || access.product_def < 0 || (access.extra && access.sum_def >= 0)) continue;
        bool invariant_terms = true;
        for (const auto& term : access.terms) invariant_terms = invariant_terms && term.def < 0 && !term.minus;
        if (!invariant_terms || unneeded_[access.product_def]) continue;
        // (The product read by the sum, which goes unmade with it.)
        if (!OnlyIndexedBy(access.product_def, access.pc, {access.sum_def})) continue;
        if (access.sum_def >= 0 && !OnlyIndexedBy(access.sum_def, access.pc)) continue;
        access.strided = true;
        unneeded_[access.product_def] = true;
        if (access.sum_def >= 0) unneeded_[access.sum_def] = true;
        strided_[access.pc] = {header, &access};
      }
    }
  }

  // Products `q = j * 6` an index is made of (AffineAccess::product_def)
  // that keep their multiply, made instead as gcc makes them: the register
  // carries the product from one iteration to the next, and each adds s to
  // it (x86-64: `add q, 6` where there was `imul q, j, 6`, whose three
  // cycles every address of nbody's row s[q .. q + 5] waited for). The
  // guard sets it one step short of the first iteration's product
  // (EmitGuardChecks). That takes a multiply the body makes exactly once
  // an iteration, on its straight path from the head (nothing jumps or
  // lands before it), the only write of q in the loop, with q dead at the
  // head, so that nothing, a side exit's interpreter included, reads the
  // value the guard set; and a loop whose counter steps by one each time
  // the body runs (not one run as unrolled copies of known counters).
  void FindProductInductions() {
    for (auto& [header, loop] : counted_loops_) {
      if (loop.down || unrolled_.count(header) || fills_.count(header) || element_sums_.count(header)) continue;
      const int end = loop_end_.at(header);
      std::set<int> defs;
      for (const AffineAccess& access : loop.affine) {
        if (access.product_def >= 0 && !unneeded_[access.product_def]) defs.insert(access.product_def);
      }
      for (int def : defs) {
        const Instr& in = fn_.code[def];
        const int q = in.a, scale = in.b == loop.counter ? in.c : in.b;
        if (q == loop.counter || live_in_[header][q]) continue;
        bool straight = true;
        for (int pc = header; pc < def && straight; ++pc) {
          straight = !targets_[pc + 1] && !HasFlag(fn_.code[pc].op, kFlagJump);
        }
        if (!straight || WrittenIn(q, header, def - 1) || WrittenIn(q, def + 1, end)) continue;
        loop.inductions.emplace_back(def, scale);
        inductions_[def] = scale;
      }
    }
  }

  // Whether the machine code for the instruction at pc may leave for the
  // interpreter (conservatively: all but a few that cannot).
  bool MayExit(int pc) const {
    if (unneeded_[pc]) return false;  // emits nothing
    if (folded_pcs_.count(pc)) {
      // An unchecked access; but a narrow int store checks its value's range,
      // and a u64 load its sign, and leave for the interpreter if it fails.
      const Instr& in = fn_.code[pc];
      if (in.op == Op::STOREN_I) return fn_.registers[in.a].elem != ElemType::kI64;
      if (in.op == Op::LOADN_I) return fn_.registers[in.b].elem == ElemType::kU64;
      return false;
    }
    if (invariant_owner_.count(pc)) return false;  // a copy of what the guard computed
    switch (fn_.code[pc].op) {
      case Op::ADD_F: case Op::SUB_F: case Op::MUL_F: case Op::MOVE_F: case Op::MOVE_I: return false;
      case Op::DIV_F: return nonzero_checked_[pc];
      case Op::LOADX_F64: case Op::STOREX_F64: case Op::LOAD_F64: case Op::STORE_F64:
      case Op::LOAD_I64: case Op::STORE_I64: case Op::LOAD_F: case Op::STORE_F: return checked_[pc];
      case Op::LOAD_I: return checked_[pc] || fn_.registers[fn_.code[pc].b].elem == ElemType::kU64;
      case Op::INDEX_U: return checked_[pc];  // a loop's guard checked it: a move or a multiply
      default: return true;
    }
  }

  // Whether R[A] of the invariant arithmetic at pc can go without the copy of
  // the guard's value: on the straight path after it, up to where it is
  // written again or dies, only accesses whose index the guard computed
  // (hoisted_indexes_, nbody's `s[p + 3] -= ...`) read it, as that index, and
  // nothing may leave for the interpreter, which would read it.
  bool OnlyCheckedIndexesRead(int pc) const {
    const int a = fn_.code[pc].a, n = static_cast<int>(fn_.code.size());
    for (int at = pc + 1; at < n; ++at) {
      if (targets_[at]) return false;
      if (!live_in_[at][a]) return true;
      const Instr& in = fn_.code[at];
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      if (reads[a] && !unneeded_[at]) {  // (an unmade instruction reads nothing)
        int buffer, base, index;
        bool store;
        if (!hoisted_indexes_.count(at) || !FlatAccessOf(in, &buffer, &base, &index, &store)) return false;
        if (store && in.op != Op::STORE_F64 && in.op != Op::STOREX_F64) return false;  // (an int value may be R[A])
      }
      if (MayExit(at) || (InfoOf(in.op).flags & (kFlagJump | kFlagEnd))) return false;
      if (writes[a]) return true;
    }
    return false;
  }

  // dst := from + R[scale] (or - R[scale], `back`), wrapping: a carried
  // product's step (FindProductInductions), with the scale as an immediate
  // where it is a known int32.
  void StepByScale(const Int& dst, const Int& from, int scale, bool back) {
    if (ConstantInRange(scale, INT32_MIN + 1, INT32_MAX)) {
      const int64_t k = ConstantValueOf(scale);
      b_.AddImm(dst, from, static_cast<int32_t>(back ? -k : k));
    } else if (back) {
      b_.Sub(dst, from, I(scale));
    } else {
      b_.Add(dst, from, I(scale));
    }
  }

  // Whether invariant arithmetic at pc, `x = y + k` or `y - k` with k a
  // known int, needs no value at all: OnlyCheckedIndexesRead holds, and
  // each access that reads x is one of a group (grouped_offsets_), which
  // addresses y + k itself, by a plain index (no base added).
  bool OnlyGroupedAccessesRead(int pc) const {
    const Instr& def = fn_.code[pc];
    if ((def.op != Op::ADD_I && def.op != Op::SUB_I) || !fn_.IsConstantRegister(def.c)) return false;
    if (!OnlyCheckedIndexesRead(pc)) return false;
    for (int at = pc + 1; at < static_cast<int>(fn_.code.size()) && live_in_[at][def.a]; ++at) {
      RegisterSet reads, writes;
      RegistersOf(fn_, fn_.code[at], &reads, &writes);
      int buffer, base, index;
      bool store;
      if (reads[def.a] && (!grouped_offsets_.count(at) || !FlatAccessOf(fn_.code[at], &buffer, &base, &index, &store) ||
                           base >= 0)) {
        return false;
      }
      if (writes[def.a]) break;
    }
    return true;
  }

  Kind KindOf(int reg) const { return fn_.registers[reg].kind; }

  // The buffer register an instruction stores into, or -1.
  static int StoresInto(const Instr& in) {
    switch (in.op) {
      case Op::STORE_F64: case Op::STORE_I64: case Op::STORE_F: case Op::STORE_I:
      case Op::STOREX_F64: case Op::STOREX_I64: case Op::ADDTO_F64: case Op::ADDTO_I64:
      case Op::STOREN_F: case Op::STOREN_I:
        return in.a;
      default:
        return -1;
    }
  }

  // A 1-d buffer access: its buffer, its index register, and for the
  // buf[base + index] forms (LOADX, STOREX) the base, -1 for the others.
  // False for any other instruction.
  static bool FlatAccessOf(const Instr& in, int* buffer, int* base, int* index, bool* store) {
    *base = -1;
    *store = false;
    switch (in.op) {
      case Op::LOAD_F64: case Op::LOAD_I64: case Op::LOAD_F: case Op::LOAD_I:
        *buffer = in.b; *index = in.c; return true;
      case Op::STORE_F64: case Op::STORE_I64: case Op::STORE_F: case Op::STORE_I:
        *buffer = in.a; *index = in.b; *store = true; return true;
      case Op::LOADX_F64: case Op::LOADX_I64:
        *buffer = in.b; *base = in.c; *index = in.d; return true;
      case Op::STOREX_F64: case Op::STOREX_I64:
        *buffer = in.a; *base = in.b; *index = in.c; *store = true; return true;
      default: return false;
    }
  }

  // A loop `for counter in range(k, limit)` closed by FORLOOP_INC, starting at a
  // constant k >= 0: pcs [header, end) are its body.
  struct RangedLoop {
    int header, end, counter, limit;
  };

  // A loop `for counter in range(.., limit)` closed by FORLOOP_INC, and the
  // buffer accesses in it whose bounds its entry guard checks.
  struct Access {
    int buffer;
    int base;  // -1 for buf[counter]
    bool store;
    int base_def = -1;  // for a base the loop recomputes (always alike): the pc that computes it
  };
  struct AxisAccess {
    int pc;
    int buffer, axis;
    int constant = -1;     // the index is counter + R[constant] (or - R[constant]), or the counter if -1
    bool minus = false;
    bool hoisted = false;  // the index does not change in the loop
    int def = -1;          // for a hoisted index the loop computes (alike each time): the pc that does
    int index_def = -1;    // for counter +/- constant: the pc that computes it
  };
  struct FoldedAccess {
    int pc;          // the LOADN_* or STOREN_*
    int buffer;
    std::vector<int> invariant;  // INDEX_U pcs whose hoisted results sum to the row's offset
    int constant = -1;           // the last axis's index: counter + R[constant] (- if minus), or the counter
    bool minus = false;
    std::vector<int> chain;  // the INDEX_U and ADD_I pcs that compute the offset, and the index's def
    Int based;
  };
  // An access whose index is counter * scale + the sum of `terms`, every
  // register but the counter unchanged by the loop (buf[k * n + j],
  // s[6 * j + 3]): the index moves monotonically with the counter, so the
  // guard checks it at the first and the last iteration, and the body's
  // access needs no check. (The index computation itself still runs, with
  // its overflow checks.)
  struct AffineAccess {
    int buffer;
    bool store;
    int scale;  // a register, or -1 for 1 (buf[t + counter])
    // Added (or, `minus`, subtracted: buf[counter - t]): a register the loop
    // never writes (def -1), or one it recomputes alike each iteration at def
    // (InvariantDefinition).
    struct Term {
      int reg, def;
      bool minus = false;
    };
    std::vector<Term> terms;
    // Where the access and its index are made: the access, the MUL_I of
    // counter * s, and the ADD_I adding the term (-1 if none).
    int pc = -1, product_def = -1, sum_def = -1;
    bool extra = false;  // (a LOADX/STOREX second register: the first term)
    // Strength-reduced (FindStridedAccesses): the access is based[counter]
    // with `based` moved by `delta` = (s - 1) * size bytes per iteration, so
    // the body computes no index; `based` and `delta` are set by the guard.
    bool strided = false;
    Int based, delta;
  };
  // An unrolled loop's copy being emitted (EmitUnrolled): the counter's
  // value there, and the trip, by which it is past the value its register
  // holds. Exits are per copy.
  //
  // A partially unrolled loop's copy (EmitPartialPass) is `partial`: the
  // counter's value is unknown there, its register holds the value of the
  // pass's first copy, and the copy's value is that plus `trip` (minus the
  // copy's number, in a loop counting down).
  struct UnrolledCopy {
    int counter = -1;
    int64_t value = 0;
    int64_t trip = 0;
    bool partial = false;
    auto operator<=>(const UnrolledCopy&) const = default;
  };

  struct CountedLoop {
    int header = 0;
    int counter = 0;
    int limit = 0;
    // Closed by FORLOOP with a step of -1 (range(start, stop, -1)): the
    // counter runs down to limit + 1 (see IterationBounds).
    bool down = false;
    std::vector<Access> accesses;
    std::vector<AffineAccess> affine;
    std::vector<int> nonzero_floats;  // float divisors the loop does not change
    std::vector<int> nonzero_ints;    // int divisors the loop does not change
    std::vector<int> exact_doubles;   // ints compared with floats, unchanged by the loop
    std::map<int, Int> data;          // buffer register -> the loop's copy of its data pointer
    // (buffer, base, base_def) -> data + base * element size, for
    // buf[base + counter] with a base whose value the loop does not change:
    // the access indexes by the counter.
    std::map<std::tuple<int, int, int>, Int> based;
    std::map<int, Int> base_values;  // base_def pc -> the value it computes, evaluated at the guard
    // INDEX_U instructions of N-d buffers the guard takes care of (see
    // FindAxisIndexes): an index that is the counter plus a constant, whose
    // range the guard checks, or one the loop never changes, whose whole
    // result (checked and scaled) the guard computes.
    std::vector<AxisAccess> axis_indexes;
    std::map<int, Int> hoisted;  // INDEX_U pc -> its result, for an unchanging index
    std::set<int> element_buffers;  // buffers of N-d accesses that use the loop's data pointer
    // N-d accesses folded into one pointer per row: the offset is a sum the
    // loop never changes (hoisted INDEX_U results) plus the counter plus a
    // constant along the last axis, so the access is based[counter] with
    // based = data + (sum + constant) * size, computed by the guard.
    std::vector<FoldedAccess> folded;
    std::set<int> writable;         // buffers of those the loop stores into
    // ADD_I, SUB_I and MUL_I pcs of operands the loop never changes, in this
    // loop and no loop around it (see FindInvariantArithmetic): the guard
    // computes each once, the body only copies the result.
    std::vector<int> invariant_arithmetic;
    // 1-d accesses whose index (and base) the loop never changes, s[p + 3]
    // in a loop over j (see FindInvariantAccesses): the guard computes and
    // checks the index once (hoisted_indexes_), the body uses it as it is.
    std::vector<int> invariant_accesses;
    // Accesses buf[int(x)] that float tests before them keep inside
    // [0, R[bound]) (FindBinnedAccesses): the guard checks R[bound] against
    // the buffer's length once.
    struct BinnedAccess {
      int pc, buffer, bound;
      bool inclusive;  // x <= R[bound] rather than x < R[bound]: int(x) may be R[bound] itself
      bool store;
      // x may lie in (-1, 0), where int(x) is 0 whatever R[bound] is: with
      // `x < m` and m <= 0, index 0 still needs an element.
      bool from_below;
    };
    std::vector<BinnedAccess> binned;
    // Buffers the loop reads or writes by a 1-d index (not the hoisted
    // accesses above) in its own body, outside any counted loop in it, and
    // never reassigns: the guard copies their data pointers and lengths into
    // the loop's own registers (`data`, `lengths`).
    std::set<int> local_buffers;
    std::map<int, std::pair<Int, Int>> lengths;  // buffer -> its length and store length, for local_buffers
    // The functions whose calls the loop runs in place (EmitInlineCall), in
    // a loop with no loop inside it: whether every one of their names still
    // holds them is checked where a name may have changed (EmitInlineOk),
    // not by each call.
    std::set<int> inline_callees;
    // Sums `acc += v` with v in [low, high] each iteration (FindBoundedSums):
    // each chunk checks acc + trips * high and acc + trips * low fit 64 bits.
    struct BoundedSum {
      int acc;
      int64_t low, high;
    };
    std::vector<BoundedSum> sums;
    // Elements `counts[int(x)] += c` adds to (FindBoundedElementSums): each
    // chunk checks that counts[0:elements] are all at most INT64_MAX - trips * total.
    struct BoundedElements {
      int buffer;
      int64_t elements, total;
    };
    std::vector<BoundedElements> element_sums;
    // Products counter * s that each iteration adds s to instead of
    // multiplying (FindProductInductions): (MUL_I pc, s).
    std::vector<std::pair<int, int>> inductions;
    Int left;    // iterations until the next Ctrl-C check or the loop's end (see ChunkStart)
    Label body;  // after the guard: where the back edge goes
    // A partially unrolled loop's (EmitPartialPass): the one-iteration body
    // its back edge goes to, and the chunk's end, where a pass that used up
    // the chunk goes.
    Label single, chunk_end;
  };

  // The accesses of the loop [header, end) whose index is affine in the
  // counter (AffineAccess), among those still checked: the index register's
  // last write before the access, on the body's straight path, is
  //   MUL_I x, counter, s  (or s, counter)             index = counter * s
  //   ADD_I x, m, t  (or t, m), m = counter * s as above, earlier on that
  //                  path, or m the counter itself
  //   SUB_I x, m, t  with m as for ADD_I                index = m - t
  // with s unchanged by the loop and t unchanged or recomputed alike each
  // iteration from unchanged values; LOADX/STOREX add their invariant second
  // register as one more term.
  void FindAffineAccesses(CountedLoop& loop, int end) {
    auto invariant = [&](int reg) { return !WrittenIn(reg, loop.header, end); };
    auto last_write = [&](int reg, int use) { return StraightPathWrite(reg, use, loop.header); };
    // counter * s computed into `reg` at def: s, or -1.
    auto scale_of = [&](int def) {
      if (def < 0) return -1;
      const Instr& in = fn_.code[def];
      if (in.op != Op::MUL_I) return -1;
      if (in.b == loop.counter && in.c != loop.counter && invariant(in.c)) return static_cast<int>(in.c);
      if (in.c == loop.counter && in.b != loop.counter && invariant(in.b)) return static_cast<int>(in.b);
      return -1;
    };
    for (int pc = loop.header; pc < end; ++pc) {
      int buffer, extra, index;
      bool store;
      if (!checked_[pc] || !FlatAccessOf(fn_.code[pc], &buffer, &extra, &index, &store)) continue;
      if (!invariant(buffer)) continue;
      if (extra >= 0 && !invariant(extra)) {
        if (!invariant(index)) continue;
        std::swap(index, extra);  // (the affine one first)
      }
      AffineAccess access{buffer, store, -1, {}};
      access.pc = pc;
      access.extra = extra >= 0;
      if (extra >= 0) access.terms.push_back({extra, -1});
      const int def = last_write(index, pc);
      if (def < 0) continue;
      const Instr& sum = fn_.code[def];
      access.scale = scale_of(def);
      bool affine = access.scale >= 0;
      if (affine) access.product_def = def;
      if (!affine && sum.op == Op::ADD_I && sum.b != sum.c) {
        for (auto [product, term] : {std::pair<int, int>{sum.b, sum.c}, std::pair<int, int>{sum.c, sum.b}}) {
          if (term == loop.counter) continue;
          int term_def = -1;
          if (!invariant(term)) {
            term_def = InvariantDefinition(term, def, loop.header, end);
            if (term_def < 0) continue;
          }
          if (product == loop.counter) {
            access.scale = -1;
          } else {
            access.scale = scale_of(last_write(product, def));
            if (access.scale < 0) continue;
            access.product_def = last_write(product, def);
            access.sum_def = def;
          }
          affine = true;
          access.terms.push_back({term, term_def});
          break;
        }
      }
      if (!affine && sum.op == Op::SUB_I && sum.b != sum.c && sum.c != loop.counter) {
        // counter - t, or counter * s - t
        const int product = sum.b, term = sum.c;
        int term_def = -1;
        if (!invariant(term)) term_def = InvariantDefinition(term, def, loop.header, end);
        if (invariant(term) || term_def >= 0) {
          if (product == loop.counter) {
            access.scale = -1;
            affine = true;
          } else {
            access.scale = scale_of(last_write(product, def));
            affine = access.scale >= 0;
          }
          if (affine) access.terms.push_back({term, term_def, true});
        }
      }
      if (!affine) continue;
      loop.affine.push_back(access);
      checked_[pc] = false;
      // The guard computed counter * s at the first and the last iteration
      // with overflow checks, and the index there within the buffer: every
      // iteration's product lies between, and so does its index when the
      // access adds nothing more (no LOADX second register).
      if (sum.op == Op::MUL_I) {
        within_guard_.insert(def);
        continue;
      }
      if (access.scale >= 0) {  // the product among the sum's operands
        for (int operand : {sum.b, sum.c}) {
          const int at = last_write(operand, def);
          if (at >= 0 && scale_of(at) >= 0) within_guard_.insert(at);
        }
      }
      if (extra < 0) within_guard_.insert(def);
    }
  }

  // The last instruction before `use` that writes `reg`, found on the
  // straight path back to `first` (no jump lands in between), or -1.
  int StraightPathWrite(int reg, int use, int first) const {
    for (int pc = use - 1; pc >= first; --pc) {
      if (targets_[pc + 1]) return -1;  // another path may reach the use
      RegisterSet reads, writes;
      RegistersOf(fn_, fn_.code[pc], &reads, &writes);
      if (writes[reg]) return pc;
    }
    return -1;
  }

  // Whether R[reg] at `use` is a copy of the counter of the loop at `header`
  // made earlier on the body's straight path (`for i in range(n)` where the
  // name i is also assigned elsewhere: the body begins with i = counter).
  bool CopiesCounter(int reg, int use, int header, int counter) const {
    const int def = StraightPathWrite(reg, use, header);
    return def >= 0 && fn_.code[def].op == Op::MOVE_I && fn_.code[def].b == counter;
  }

  bool WrittenIn(int reg, int first, int last) const {
    for (int pc = first; pc <= last; ++pc) {
      RegisterSet reads, writes;
      RegistersOf(fn_, fn_.code[pc], &reads, &writes);
      if (writes[reg]) return true;
    }
    return false;
  }

  void FindCountedLoops() {
    const int n = static_cast<int>(fn_.code.size());
    checked_.assign(n, true);
    nonzero_checked_.assign(n, true);
    for (int end = 0; end < n; ++end) {
      const Instr& close = fn_.code[end];
      const bool down = close.op == Op::FORLOOP && ConstantInRange(close.c, -1, -1);
      if ((close.op != Op::FORLOOP_INC && !down) || close.d > end) continue;
      CountedLoop loop;
      loop.header = close.d;
      loop.counter = close.a;
      loop.limit = close.b;
      loop.down = down;
      if (WrittenIn(loop.counter, loop.header, end - 1) || WrittenIn(loop.limit, loop.header, end)) continue;
      if (!down && StartsAtNonnegativeConstant(loop.header, loop.counter)) {
        ranged_loops_.push_back({loop.header, end, loop.counter, loop.limit});
      }
      for (int pc = loop.header; pc < end; ++pc) {
        int buffer, base, index;
        bool store;
        if (!FlatAccessOf(fn_.code[pc], &buffer, &base, &index, &store)) continue;
        if (base == loop.counter) std::swap(base, index);
        if (index != loop.counter && base < 0 && CopiesCounter(index, pc, loop.header, loop.counter)) {
          index = loop.counter;  // (the same value: the body never writes the counter)
        }
        // buf[t + counter] with the sum made just before (`a[i * n + k]`):
        // the access is buf[base + counter] with base t, as LOADX's, and the
        // sum may go unmade (FindUnneededBaseDefinitions).
        int index_def = -1;
        if (index != loop.counter && base < 0 && checked_[pc]) {
          const int def = StraightPathWrite(index, pc, loop.header);
          const Instr* sum = def >= 0 ? &fn_.code[def] : nullptr;
          if (sum != nullptr && sum->op == Op::ADD_I && sum->b != sum->c &&
              (sum->b == loop.counter || sum->c == loop.counter)) {
            const int t = sum->b == loop.counter ? sum->c : sum->b;
            if (t != sum->a && StraightPathWrite(t, pc, loop.header) < def) {
              base = t;
              index = loop.counter;
              index_def = def;
            }
          }
        }
        if (index != loop.counter || !checked_[pc]) continue;
        if (WrittenIn(buffer, loop.header, end)) continue;
        int base_def = -1;
        if (base >= 0 && WrittenIn(base, loop.header, end)) {
          base_def = InvariantDefinition(base, pc, loop.header, end);
          if (base_def < 0) continue;
        }
        loop.accesses.push_back({buffer, base, store, base_def});
        checked_[pc] = false;
        access_loop_[pc] = loop.header;
        access_base_[pc] = base;
        access_base_def_[pc] = base_def;
        if (index_def >= 0) access_index_def_[pc] = index_def;
      }
      FindAffineAccesses(loop, end);
      FindAxisIndexes(loop, end);
      // Checks of values the loop never changes: made once, at its entry.
      for (int pc = loop.header; pc < end; ++pc) {
        const Instr& in = fn_.code[pc];
        auto invariant = [&](int reg) { return !WrittenIn(reg, loop.header, end); };
        auto add = [](std::vector<int>& list, int reg) {
          if (std::find(list.begin(), list.end(), reg) == list.end()) list.push_back(reg);
        };
        switch (in.op) {
          case Op::DIV_F:
          case Op::FLOORDIV_F:
          case Op::MOD_F:
            if (!invariant(in.c) || !nonzero_checked_[pc]) break;
            add(loop.nonzero_floats, in.c);
            nonzero_checked_[pc] = false;
            break;
          case Op::FLOORDIV_I:
          case Op::MOD_I:
            if (!invariant(in.c) || !nonzero_checked_[pc] || ConstantInRange(in.c, 1, INT64_MAX)) break;
            add(loop.nonzero_ints, in.c);
            nonzero_checked_[pc] = false;
            break;
          case Op::LT_FI: case Op::LE_FI: case Op::GT_FI: case Op::GE_FI: case Op::EQ_FI: case Op::NE_FI:
            if (invariant(in.c) && !converted_.count(in.c)) add(loop.exact_doubles, in.c);
            break;
          case Op::JLT_FI: case Op::JLE_FI: case Op::JGT_FI: case Op::JGE_FI:
          case Op::JNLT_FI: case Op::JNLE_FI: case Op::JNGT_FI: case Op::JNGE_FI:
            if (invariant(in.b) && !converted_.count(in.b)) add(loop.exact_doubles, in.b);
            break;
          default: break;
        }
      }
      for (int reg : loop.exact_doubles) converted_[reg] = Float();
      FindInvariantArithmetic(loop, end);
      FindInvariantAccesses(loop, end);
      FindBinnedAccesses(loop, end);
      FindInlineCallees(loop, end);
      FindBoundedSums(loop, end);
      FindBoundedElementSums(loop, end);
      for (int pc = loop.header; pc < end; ++pc) {
        int buffer, base, index;
        bool store;
        const Instr& in = fn_.code[pc];
        if (in.op == Op::ADDTO_F64 || in.op == Op::ADDTO_I64) buffer = in.a;
        else if (!FlatAccessOf(in, &buffer, &base, &index, &store) || access_loop_.count(pc)) continue;
        if (local_owner_.count(pc) || WrittenIn(buffer, loop.header, end)) continue;
        local_owner_[pc] = loop.header;
        loop.local_buffers.insert(buffer);
      }
      bool guards = !loop.accesses.empty() || !loop.affine.empty() || !loop.axis_indexes.empty() ||
                    !loop.nonzero_floats.empty() || !loop.nonzero_ints.empty() || !loop.exact_doubles.empty() ||
                    !loop.invariant_arithmetic.empty() || !loop.invariant_accesses.empty() ||
                    !loop.binned.empty() || !loop.local_buffers.empty() ||
                    !loop.inline_callees.empty() || !loop.sums.empty() || !loop.element_sums.empty();
      if (const int trips = UnrolledTrips(loop, end); trips > 0) {
        unrolled_[loop.header] = trips;
        guards = true;
      } else if (auto byte = FillByte(loop, end)) {
        fills_[loop.header] = *byte;
        guards = true;
      } else if (auto acc = SummedElements(loop, end)) {
        element_sums_[loop.header] = *acc;
        guards = true;
      } else if (const int copies = PartialCopies(loop, end); copies > 0) {
        partial_[loop.header] = copies;
        guards = true;  // (a pass runs within a chunk of iterations)
      }
      if (guards) {
        counted_loops_[loop.header] = loop;
        loop_end_[loop.header] = end;
      }
    }
  }

  // Short loops of a known trip count run unrolled: `for i in range(16)`
  // (or range(cols) in a specialization for cols = 16) with a body of
  // straight-line code that machine code covers. The body is emitted once per
  // iteration, with the counter a known value in each copy (EmitUnrolled),
  // and no back edge: no compare, no branch, no chunk of ticks (the loop is
  // short; the loop around it counts them); the loop ends with the counter
  // at its last value, as the interpreter's does. Returns the trip count, or
  // 0 to keep the loop.
  //
  // Machine code is never entered at such a loop's head (Dispatch): an
  // interpreter that left in the middle finishes the loop itself, and enters
  // again at the next back edge of the loop around it.
  int UnrolledTrips(const CountedLoop& loop, int end) const {
    constexpr int64_t kMaxTrips = 16;
    constexpr int64_t kMaxInstructions = 160;  // the body's, times the trips
    if (loop.down || !StartsAtNonnegativeConstant(loop.header, loop.counter)) return 0;
    const int64_t start = ConstantValueOf(fn_.code[loop.header - 2].b);
    if (start > INT64_MAX - kMaxTrips || !ConstantInRange(loop.limit, start + 1, start + kMaxTrips)) return 0;
    const int64_t trips = ConstantValueOf(loop.limit) - start;
    if (trips * (end - loop.header) > kMaxInstructions || targets_[end]) return 0;
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      if ((pc > loop.header && targets_[pc]) || (InfoOf(in.op).flags & (kFlagJump | kFlagEnd)) || !Covers(fn_, in)) {
        return 0;
      }
    }
    return static_cast<int>(trips);
  }

  // Inner loops of a trip count known only at run time (counting up, or
  // down by one) run partially unrolled: a pass runs `copies` iterations,
  // the body once per iteration with no back edge between them
  // (EmitPartialPass), and the iterations a chunk leaves over run the body
  // alone. What a pass saves per iteration is the loop's own work, the
  // decrement and branch of its chunk and the counter's step (an access by
  // the counter adds the copy's trip to its address, as a fully unrolled
  // copy does), which in a short body is a good part of it: gcc -O2 takes
  // 25% less time on the suite's matmul with -funroll-loops, 15% on its
  // spectral norm. Only a body of straight-line code machine code covers,
  // whose calls run inline: a branch in it would need labels per copy, and
  // a real call costs much more than a back edge. Returns the iterations
  // per pass, or 0 to keep the loop as it is.
  int PartialCopies(const CountedLoop& loop, int end) const {
    constexpr int kCopies = 4;
    constexpr int kMaxWeight = 32;  // the body's instructions (an inlined callee's own), per copy
    if (targets_[end]) return 0;
    int weight = 0;
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      if ((pc > loop.header && targets_[pc]) || (InfoOf(in.op).flags & (kFlagJump | kFlagEnd)) || !Covers(fn_, in)) {
        return 0;
      }
      if (in.op == Op::CALL_FN) {
        const FunctionCode& callee = *fn_.module->functions[in.d];
        if (!InlinableCallee(fn_, callee)) return 0;
        weight += static_cast<int>(callee.code.size());
      } else {
        weight += 1;
      }
    }
    if (weight > kMaxWeight) return 0;
    return weight * 2 > kMaxWeight ? 2 : kCopies;
  }

  // Sums of bounded values: `count += flags[i]` (a u8 element), `n += 2`. In
  // a counted loop with no loop inside (so each instruction of the body runs
  // at most once per iteration), an ADD_I acc, acc, v that is acc's only
  // write, with v a constant or an element of a type narrower than 64 bits
  // loaded on the body's straight path before it, adds at most `trips`
  // values in [low, high]: if acc + trips * high and acc + trips * low fit
  // 64 bits, no add overflows, and the code checks that
  // instead, per chunk of iterations (ChunkStart), leaving for the
  // interpreter otherwise. (Not in an unrolled loop, which has no chunks.)
  void FindBoundedSums(CountedLoop& loop, int end) {
    if (loop.down || UnrolledTrips(loop, end) > 0) return;
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      if (HasFlag(in.op, kFlagLoop) || (HasFlag(in.op, kFlagJump) && in.d <= pc)) return;
    }
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      // (Never the counter or the limit: the body writes neither.)
      if (in.op != Op::ADD_I || (in.b == in.a) == (in.c == in.a) || within_guard_.count(pc)) continue;
      const int acc = in.a, v = in.b == acc ? in.c : in.b;
      bool once = true;
      for (int at = loop.header; at <= end && once; ++at) {
        RegisterSet reads, writes;
        RegistersOf(fn_, fn_.code[at], &reads, &writes);
        once = at == pc || !writes[acc];
      }
      if (!once) continue;
      std::optional<Range> range;
      if (ConstantInRange(v, INT32_MIN, INT32_MAX)) {
        range = Range{ConstantValueOf(v), ConstantValueOf(v)};
      } else if (const int def = StraightPathWrite(v, pc, loop.header); def >= 0 && fn_.code[def].op == Op::LOAD_I) {
        range = ElementRange(fn_.registers[fn_.code[def].b].elem);
      }
      if (!range) continue;
      loop.sums.push_back({acc, range->low, range->high});
      within_guard_.insert(pc);
    }
  }

  // The histogram's `counts[int(x)] += 1` (a binned ADDTO_I64: tests keep x
  // in [0, m), FindBinnedAccesses) where m is a known value of at most
  // kMaxBoundedElements (a value specialization's bins = 8) adds at most
  // trips * c to one of counts[0:m] in trips iterations. As for the bounded
  // sums: if no element exceeds INT64_MAX - trips * c, no add overflows, and
  // each chunk checks that instead (a scan of m elements per 4,096
  // iterations), leaving for the interpreter otherwise. Only where nothing
  // else can change the elements meanwhile: every instruction of the loop
  // runs in machine code, none is a call, and its only stores are such adds
  // of positive constants into the one buffer (whose register the loop never
  // changes); not in a nogil function, whose buffers other threads may write.
  static constexpr int64_t kMaxBoundedElements = 64;
  void FindBoundedElementSums(CountedLoop& loop, int end) {
    if (loop.down || UnrolledTrips(loop, end) > 0 || fn_.nogil || loop.binned.empty()) return;
    int buffer = -1;
    int64_t elements = 0, total = 0;
    std::vector<int> adds;
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      if (HasFlag(in.op, kFlagLoop) || (HasFlag(in.op, kFlagJump) && in.d <= pc)) return;
      if (!HasFlag(in.op, kFlagJit) || HasFlag(in.op, kFlagCall)) return;
      if (!HasFlag(in.op, kFlagStore)) continue;
      if (in.op != Op::ADDTO_I64 || (buffer >= 0 && in.a != buffer) || !ConstantInRange(in.c, 1, 1 << 20)) return;
      auto binned = std::find_if(loop.binned.begin(), loop.binned.end(), [&](const auto& b) { return b.pc == pc; });
      if (binned == loop.binned.end() || !ConstantInRange(binned->bound, 0, kMaxBoundedElements)) return;
      buffer = in.a;
      // (Index 0 even for m = 0 where x may lie in (-1, 0): see FindBinnedAccesses.)
      const int64_t touched = ConstantValueOf(binned->bound) + (binned->inclusive ? 1 : 0);
      elements = std::max({elements, touched, binned->from_below ? int64_t{1} : int64_t{0}});
      total += ConstantValueOf(in.c);
      adds.push_back(pc);
    }
    if (adds.empty()) return;
    loop.element_sums.push_back({buffer, elements, total});
    unchecked_adds_.insert(adds.begin(), adds.end());
  }

  // Whether the access at pc is buf[counter] of the loop at `header`, with
  // the index the counter itself (no base, no index computed in the loop),
  // checked by that loop's guard.
  bool GuardedAtCounter(int pc, int header) const {
    auto access = access_loop_.find(pc);
    return access != access_loop_.end() && access->second == header && access_base_.at(pc) < 0 &&
           access_base_def_.at(pc) < 0 && !access_index_def_.count(pc);
  }

  // A loop whose whole body is one store of a constant to buf[counter],
  // `for i in range(2, n): flags[i] = 1` (and the checked access the loop's
  // guard proved), fills bytes: a byte buffer with the value's byte, or any
  // buffer with 0 (0.0 for floats). Returns the byte, or nothing to keep the
  // loop. The loop runs as one memset (EmitFill).
  std::optional<int> FillByte(const CountedLoop& loop, int end) const {
    if (loop.down || end != loop.header + 1 || targets_[end]) return std::nullopt;
    const int pc = loop.header;
    const Instr& in = fn_.code[pc];
    if (!GuardedAtCounter(pc, loop.header)) return std::nullopt;
    const ElemType elem = fn_.registers[in.a].elem;
    switch (in.op) {
      case Op::STORE_I:
      case Op::STORE_I64: {
        if (ConstantInRange(in.c, 0, 0)) return 0;
        auto range = ElementRange(elem);
        if (!range || InfoOf(elem).size != 1 || !ConstantInRange(in.c, range->low, range->high)) return std::nullopt;
        return static_cast<int>(ConstantValueOf(in.c) & 0xff);
      }
      case Op::STORE_F64:
      case Op::STORE_F: {
        const auto value = FloatConstantOf(in.c);
        if (value && *value == 0.0 && !std::signbit(*value)) return 0;  // (+0.0)
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  }

  // A loop whose whole body adds buf[counter] to an int, `for i in range(n):
  // count += flags[i]` (the checked load the loop's guard proved, of an int
  // type narrower than 64 bits, then ADD_I acc, acc, element), sums a slice
  // of the buffer. Returns acc, or nothing to keep the loop. The loop runs as
  // one call of a helper that the C++ compiler vectorized (EmitElementSum).
  std::optional<int> SummedElements(const CountedLoop& loop, int end) const {
    if (loop.down || end != loop.header + 2 || targets_[loop.header + 1] || targets_[end]) return std::nullopt;
    const int pc = loop.header;
    const Instr& load = fn_.code[pc];
    const Instr& add = fn_.code[pc + 1];
    if (load.op != Op::LOAD_I || !GuardedAtCounter(pc, loop.header)) return std::nullopt;
    if (!ElementRange(fn_.registers[load.b].elem) || add.op != Op::ADD_I) return std::nullopt;
    const int element = load.a, acc = add.b == element ? add.c : add.b;
    if ((add.b == element) == (add.c == element) || add.a != acc || acc == loop.counter || acc == loop.limit ||
        element == loop.counter || element == loop.limit) {
      return std::nullopt;
    }
    return acc;
  }

  // Loop-invariant code motion for int arithmetic: an ADD_I, SUB_I or MUL_I
  // in the loop [header, end) whose operands the loop never writes computes
  // the same value in every iteration (`i * n` in matmul's loop over k), so
  // the loop's guard computes it, once per entry, and the body copies it.
  // An overflow at the guard leaves for the interpreter at the loop's first
  // instruction, which raises where the loop would have (or not at all, if
  // the computation is in a branch the loop never takes). Loops come inner
  // first: an outer loop that leaves the operands alone too takes the
  // instruction over, so that it runs once per entry of the outermost.
  void FindInvariantArithmetic(CountedLoop& loop, int end) {
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      if (in.op != Op::ADD_I && in.op != Op::SUB_I && in.op != Op::MUL_I) continue;
      if (WrittenIn(in.b, loop.header, end) || WrittenIn(in.c, loop.header, end)) continue;
      auto owner = invariant_owner_.find(pc);
      if (owner != invariant_owner_.end()) {
        std::vector<int>& inner = counted_loops_.at(owner->second).invariant_arithmetic;
        inner.erase(std::find(inner.begin(), inner.end(), pc));
      }
      invariant_owner_[pc] = loop.header;
      loop.invariant_arithmetic.push_back(pc);
    }
  }

  // Whether R[reg] at `use` in the loop [header, end) has the same value in
  // every iteration: the loop never writes it, or the write that reaches
  // `use` on the body's straight path is invariant arithmetic of this loop or
  // of one around it.
  bool InvariantAt(int reg, int use, const CountedLoop& loop, int end) const {
    if (!WrittenIn(reg, loop.header, end)) return true;
    const int def = StraightPathWrite(reg, use, loop.header);
    if (def < 0 || fn_.code[def].a != reg) return false;
    auto owner = invariant_owner_.find(def);
    return owner != invariant_owner_.end() && owner->second <= loop.header;
  }

  // The value of such a register at the loop's guard: the register itself,
  // or what the guard (this loop's or an outer one's) computed for its def.
  Int InvariantValueAt(int reg, int use, const CountedLoop& loop) {
    if (!WrittenIn(reg, loop.header, loop_end_.at(loop.header))) return I(reg);
    return invariant_values_.at(StraightPathWrite(reg, use, loop.header));
  }

  // 1-d accesses in the loop [header, end) whose index, and base for the X
  // forms, have the same value in every iteration (InvariantAt), of a buffer
  // the loop never reassigns: their index is checked once, by the guard.
  // An index outside the buffer there (or a store into a read-only one)
  // leaves for the interpreter at the loop's first instruction, which raises
  // at the first iteration, as CPython would. Only accesses that every
  // iteration makes take part (no jump before them in the body): one in a
  // branch might never run, and a guard that always failed would leave the
  // whole loop to the interpreter. The innermost loop takes an access.
  void FindInvariantAccesses(CountedLoop& loop, int end) {
    for (int pc = loop.header; pc < end; ++pc) {
      if (HasFlag(fn_.code[pc].op, kFlagJump)) return;
      int buffer, base, index;
      bool store;
      if (!checked_[pc] || !FlatAccessOf(fn_.code[pc], &buffer, &base, &index, &store)) continue;
      if (WrittenIn(buffer, loop.header, end) || !InvariantAt(index, pc, loop, end)) continue;
      if (base >= 0 && !InvariantAt(base, pc, loop, end)) continue;
      loop.invariant_accesses.push_back(pc);
      checked_[pc] = false;
    }
  }

  // Accesses buf[int(x)] in a loop [header, end) whose float x the tests
  // before them keep inside [0, m) on every path that reaches them, with m
  // an int the loop never changes: a histogram's
  //   if offset < 0.0 or offset >= bins: outside += 1
  //   else: counts[int(offset)] += 1
  // int(x) then lies in [0, m - 1]: trunc(x) <= x < m, exactly (the FI tests
  // compare a float with an int exactly, as Python does), and int() itself
  // leaves on NaN and the infinities, which the tests let through. So the
  // guard checks m <= len(buf) once (the store length for a store) and the
  // access needs no check. (With x <= m instead, int(x) may be m: m < len.)
  // Where x may lie in (-1, 0), int(x) is 0 even for m <= 0 (`x > -1.0 and
  // x < m` with m = 0): the guard checks len >= 1 as well.
  // Such an access sits in a branch: a guard that fails (a buffer shorter
  // than the bins its own test allows) leaves the loop to the interpreter
  // even if no x ever reaches the end, which is slow but right.
  void FindBinnedAccesses(CountedLoop& loop, int end) {
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      int buffer = 0, base = -1, index = 0;
      bool store = true;
      if (in.op == Op::ADDTO_F64 || in.op == Op::ADDTO_I64) buffer = in.a, index = in.b;
      else if (!FlatAccessOf(in, &buffer, &base, &index, &store) || base >= 0) continue;
      if (!checked_[pc] || WrittenIn(buffer, loop.header, end)) continue;
      // The index's write, on the straight path back: int(x).
      int convert = -1;
      for (int at = pc - 1; at >= loop.header && !targets_[at + 1]; --at) {
        RegisterSet reads, writes;
        RegistersOf(fn_, fn_.code[at], &reads, &writes);
        if (!writes[index]) continue;
        if (fn_.code[at].op == Op::F2I) convert = at;
        break;
      }
      if (convert < 0) continue;
      const FloatFacts facts = FloatTestFacts(fn_.code[convert].b, convert);
      if (!facts.Nonnegative() || facts.upper < 0 || WrittenIn(facts.upper, loop.header, end)) continue;
      loop.binned.push_back({pc, buffer, facts.upper, facts.upper_inclusive, store, facts.low < 0.0});
      checked_[pc] = false;
    }
  }

  // What the tests on the one path into `from` say of float register x:
  // walking back while each instruction has one way in, up to a write of x.
  struct FloatFacts {
    bool number = false;  // some test there fails for NaN
    double low = -INFINITY, high = INFINITY;  // x >= low, x <= high (strict: > and <)
    bool low_strict = false, high_strict = false;
    int upper = -1;  // x < R[upper] (x <= R[upper] if upper_inclusive), an int register
    bool upper_inclusive = false;
    // int(x) >= 0: x > -1.
    bool Nonnegative() const { return low > -1.0 || (low == -1.0 && low_strict); }
    // int(x) is exact: x is a number in [-2**63, 2**63).
    bool FitsInt64() const {
      constexpr double kTwo63 = 9223372036854775808.0;
      return number && low >= -kTwo63 && (upper >= 0 || high < kTwo63 || (high == kTwo63 && high_strict));
    }
  };

  // With `nan_test`: the nearest test of x on that path whose edge there is
  // the one a NaN takes, if no other branch between it and `from` could take
  // a NaN elsewhere (so a NaN that passes it surely reaches `from`), else -1.
  FloatFacts FloatTestFacts(int x, int from, int* nan_test = nullptr) const {
    enum Relation { kLt, kLe, kGt, kGe, kNone };
    auto relation_when_taken = [](Op op) {
      switch (op) {
        case Op::JLT_F: case Op::JLT_FI: case Op::JNGE_FI: return kLt;
        case Op::JLE_F: case Op::JLE_FI: case Op::JNGT_FI: return kLe;
        case Op::JGT_FI: case Op::JNLE_F: case Op::JNLE_FI: return kGt;
        case Op::JGE_FI: case Op::JNLT_F: case Op::JNLT_FI: return kGe;
        default: return kNone;
      }
    };
    // Ops whose jump is taken when the relation holds, which it never does
    // for NaN; the JN* ops jump when it does not (NaN included).
    auto holds_when_taken = [](Op op) {
      return op == Op::JLT_F || op == Op::JLE_F || op == Op::JLT_FI || op == Op::JLE_FI || op == Op::JGT_FI ||
             op == Op::JGE_FI;
    };
    FloatFacts facts;
    if (nan_test != nullptr) *nan_test = -1;
    bool nan_reaches = nan_test != nullptr;  // a NaN at `at` goes on to `from`
    int at = from;
    for (int steps = 0; steps < 64 && at > 0; ++steps) {
      // The one instruction that leads to `at`, and whether by its jump.
      std::vector<std::pair<int, bool>> ways;
      if (!HasFlag(fn_.code[at - 1].op, kFlagEnd)) ways.push_back({at - 1, false});
      for (int pc : jumps_to_[at]) ways.push_back({pc, true});
      if (ways.empty()) break;
      bool one = true;
      for (const auto& way : ways) one &= way.first == ways[0].first;
      if (!one) break;
      const int pc = ways[0].first;
      const bool taken = ways[0].second;
      const Instr& in = fn_.code[pc];
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      if (writes[x]) break;
      at = pc;
      Relation relation = relation_when_taken(in.op);
      // (A jump to the next pc arrives both ways: nothing known.)
      if (relation == kNone || ways.size() != 1 || (in.a == x) == (in.b == x)) {
        if (HasFlag(in.op, kFlagJump) && in.op != Op::JMP && ways.size() == 1) nan_reaches = false;
        continue;
      }
      if (nan_reaches && holds_when_taken(in.op) != taken) {
        *nan_test = pc;
        nan_reaches = false;
      }
      const int other = in.a == x ? in.b : in.a;
      if (!taken) relation = relation == kLt ? kGe : relation == kLe ? kGt : relation == kGt ? kLe : kLt;
      if (in.b == x) relation = relation == kLt ? kGt : relation == kLe ? kGe : relation == kGt ? kLt : kLe;
      facts.number |= holds_when_taken(in.op) == taken;
      std::optional<double> bound;
      if (KindOf(other) == Kind::kFloat) {
        bound = FloatConstantOf(other);
      } else if (auto known = ConstantOf(other); known && *known > -(int64_t{1} << 53) && *known < int64_t{1} << 53) {
        bound = static_cast<double>(*known);  // (exact: an int float() would round bounds x otherwise)
      }
      const bool strict = relation == kLt || relation == kGt;
      if (relation == kGe || relation == kGt) {
        if (bound && (*bound > facts.low || (*bound == facts.low && strict))) facts.low = *bound, facts.low_strict = strict;
      } else {
        if (bound && (*bound < facts.high || (*bound == facts.high && strict))) {
          facts.high = *bound, facts.high_strict = strict;
        }
        if (KindOf(other) == Kind::kInt && facts.upper < 0) facts.upper = other, facts.upper_inclusive = !strict;
      }
    }
    return facts;
  }

  // F2I instructions whose operand the tests before them keep a number
  // inside int64: `if 0.0 <= x < n: k = int(x)`. Their int() cannot fail,
  // so they truncate with no check (the fastest conversion there is).
  //
  // Python's tests let a NaN through where they are false: a histogram's
  //   if offset < 0.0 or offset >= bins: outside += 1
  //   else: counts[int(offset)] += 1
  // sends a NaN to int(), which raises. There the nearest test whose NaN
  // edge leads to the F2I (FloatTestFacts' nan_test) sends a NaN to a side
  // exit at itself instead (nan_exit_tests_: BranchFloatOrExit), where the
  // interpreter runs the test and what follows, raising as CPython does; the
  // edge the NaN took costs nothing more (the test's other edge does), and
  // int() truncates with no check. Only where a NaN that passes the test
  // surely meets int(), so the exit is taken only before an exception.
  void FindExactConversions() {
    for (int pc = 0; pc < static_cast<int>(fn_.code.size()); ++pc) {
      if (fn_.code[pc].op != Op::F2I) continue;
      int nan_test = -1;
      FloatFacts facts = FloatTestFacts(fn_.code[pc].b, pc, &nan_test);
      if (!facts.FitsInt64() && nan_test >= 0) {
        facts.number = true;
        if (!facts.FitsInt64()) continue;
        nan_exit_tests_.insert(nan_test);
      }
      if (facts.FitsInt64()) exact_conversions_.insert(pc);
    }
  }

  // A float test's jump at pc_ (BranchFloatOrExit where FindExactConversions chose it).
  void BranchFloatTest(FloatCond cond, const Float& a, const Float& b, const Label& target) {
    if (nan_exit_tests_.count(pc_)) BranchFloatOrExit(cond, a, b, target);
    else b_.BranchFloat(cond, a, b, target);
  }

  // A float test at pc_ that FindExactConversions sends a NaN out of
  // machine code from: with the jump its kind `cond` takes (Python's: the
  // ordered forms false, the kNot forms true for a NaN), a NaN goes to this
  // pc's side exit, and the edge a NaN would have taken pays nothing for it.
  void BranchFloatOrExit(FloatCond cond, const Float& a, const Float& b, const Label& target) {
    switch (cond) {
      case FloatCond::kLt: case FloatCond::kLe: case FloatCond::kGt: case FloatCond::kGe: {
        // A NaN falls through: jump on "cond or unordered" (cond's kNot
        // opposite), and tell the two apart out of line.
        static constexpr FloatCond kOrUnordered[] = {FloatCond::kNotGe, FloatCond::kNotGt, FloatCond::kNotLe,
                                                     FloatCond::kNotLt};
        const Label either = b_.NewLabel(), exit = Exit();  // (an inlined callee's exit is its call's)
        b_.BranchFloat(kOrUnordered[static_cast<int>(cond)], a, b, either);
        Cold([=, this] {
          b_.Bind(either);
          b_.BranchUnordered(a, b, exit);
          b_.Jump(target);
        });
        break;
      }
      case FloatCond::kNotLt: case FloatCond::kNotLe: case FloatCond::kNotGt: case FloatCond::kNotGe: {
        // A NaN jumps: jump on the ordered relation only, and tell a NaN
        // from the rest where the jump is not taken.
        static constexpr FloatCond kOrdered[] = {FloatCond::kGe, FloatCond::kGt, FloatCond::kLe, FloatCond::kLt};
        b_.BranchFloat(kOrdered[static_cast<int>(cond) - static_cast<int>(FloatCond::kNotLt)], a, b, target);
        b_.BranchUnordered(a, b, Exit());
        break;
      }
      default:
        b_.BranchFloat(cond, a, b, target);
        break;
    }
  }

  // The calls an innermost loop [header, end) runs in place: their guard (a
  // module function's name still holds it) moves to the loop's entry. Only
  // Python code can rebind a name, and machine code runs Python code only in
  // a call it makes (a typed call, or an inlined one's real call) and when it
  // checks for signals (a signal handler, or another thread while the GIL is
  // released there): after each, inside the loop, the guard runs again. A
  // loop with a loop inside it would check for signals in that one too, so
  // only innermost loops take part.
  void FindInlineCallees(CountedLoop& loop, int end) {
    std::set<int> callees;
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      if (pc > loop.header && fn_.IsLoopHeader(pc)) return;
      if (in.op == Op::CALL_FN && Covers(fn_, in) && InlinableCallee(fn_, *fn_.module->functions[in.d])) {
        callees.insert(in.d);
      }
    }
    loop.inline_callees = callees;
  }

  // The counted loop whose guard checks the inlined call at pc, or null.
  CountedLoop* InlineLoop(int pc) {
    for (auto& [header, loop] : counted_loops_) {
      if (header <= pc && pc < loop_end_.at(header) && loop.inline_callees.count(fn_.code[pc].d)) return &loop;
    }
    return nullptr;
  }

  // Leaves for the interpreter at `exit` unless the name of every function
  // the loop runs in place still holds it (the module namespace's version
  // word equals the one at which the interpreter's call last found it
  // there). Python code can rebind a name only where it runs: a signal
  // handler at a chunk's start or a back edge, a call the loop makes. So
  // this is checked there (and at the loop's guard), and the inlined calls
  // in the body test nothing: spectral norm's inner loop is two
  // instructions shorter per iteration. The interpreter runs the iteration,
  // making the call (which notes the version where the name holds the
  // function: a first call, in eager mode), and enters again at the next
  // back edge.
  void EmitInlineOk(CountedLoop& loop, const Label& exit) {
    if (loop.inline_callees.empty()) return;
    Int versions = b_.NewInt(), word = b_.NewInt(), now = b_.NewInt();
    b_.LoadInt(versions, FromSlot(context_slot_), static_cast<int32_t>(offsetof(JitCallContext, versions)));
    b_.LoadInt(word, versions, static_cast<int32_t>(offsetof(ModuleVersions, globals)));
    b_.BranchIntImm(IntCond::kEq, word, 0, exit);
    b_.LoadInt(now, word, 0);
    for (int d : loop.inline_callees) {
      Int bound = b_.NewInt();
      b_.LoadInt(bound, versions, static_cast<int32_t>(offsetof(ModuleVersions, bound)));
      b_.LoadInt(bound, bound, static_cast<int32_t>(d * sizeof(const uint64_t*)));
      b_.LoadInt(bound, bound, 0);
      b_.BranchInt(IntCond::kNe, now, bound, exit);
      EmitBoundCodeCheck(versions, d, exit);
    }
  }

  // Where the name of function d may hold the def's Python function in place
  // of its Function (BoundPython: a def whose calls from Python run as
  // Python), that the function still has the code it was bound with, as
  // CallModuleFunction checks (BoundCodeUnchanged); else to `changed`.
  void EmitBoundCodeCheck(const Int& versions, int d, const Label& changed) {
    Int bound = b_.NewInt(), function = b_.NewInt(), code = b_.NewInt();
    Label unchanged = b_.NewLabel();
    b_.LoadInt(bound, versions, static_cast<int32_t>(offsetof(ModuleVersions, bound_python)));
    b_.LoadInt(bound, bound, static_cast<int32_t>(d * sizeof(const BoundPython*)));
    b_.LoadInt(function, bound, static_cast<int32_t>(offsetof(BoundPython, function)));
    b_.BranchIntImm(IntCond::kEq, function, 0, unchanged);
    b_.LoadInt(function, function, static_cast<int32_t>(offsetof(PyFunctionObject, func_code)));
    b_.LoadInt(code, bound, static_cast<int32_t>(offsetof(BoundPython, code)));
    b_.BranchInt(IntCond::kNe, function, code, changed);
    b_.Bind(unchanged);
  }

  // INDEX_U in a counted loop, of a buffer the loop never reassigns (an N-d
  // access a[i, j]). Two shapes are common in stencils and matrix loops:
  //   - the index is the counter, or the counter plus or minus a constant
  //     (a[i, j + 1] in the loop over j): the guard checks that the first and
  //     the last iteration's index lie in [0, shape[axis]), so every one does;
  //   - the index does not change in the loop (a[i - 1, j] in the loop over j):
  //     the guard computes the instruction's whole result once.
  // Either way the body's INDEX_U needs no check. An index the guard finds
  // outside leaves for the interpreter, which raises at the exact iteration.
  void FindAxisIndexes(CountedLoop& loop, int end) {
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      if (in.op != Op::INDEX_U || !checked_[pc] || WrittenIn(in.b, loop.header, end)) continue;
      AxisAccess access{pc, in.b, in.c};
      const int index = in.d;
      if (!WrittenIn(index, loop.header, end)) {
        access.hoisted = true;
      } else if (index != loop.counter) {
        access.def = InvariantDefinition(index, pc, loop.header, end);
        if (access.def >= 0) {
          access.hoisted = true;
        } else if (!CounterPlusConstant(index, pc, loop, &access.constant, &access.minus, &access.index_def)) {
          continue;
        }
      }
      loop.axis_indexes.push_back(access);
      checked_[pc] = false;
      if (access.def >= 0) {  // the loop's own computation of the index may be skipped
        access_loop_[pc] = loop.header;
        access_base_def_[pc] = access.def;
      }
    }
    // The element accesses at offsets summed from checked INDEX_U results
    // need no check (OffsetFromIndexes): they address from the loop's copy
    // of the data pointer, and the guard checks once that the buffers the
    // loop stores into are writable.
    for (int pc = loop.header; pc < end; ++pc) {
      const Instr& in = fn_.code[pc];
      int buffer = -1, offset = -1;
      switch (in.op) {
        case Op::LOADN_F: case Op::LOADN_I: buffer = in.b; offset = in.c; break;
        case Op::STOREN_F: case Op::STOREN_I: buffer = in.a; offset = in.b; break;
        default: continue;
      }
      if (access_loop_.count(pc) || WrittenIn(buffer, loop.header, end) || !OffsetFromIndexes(buffer, offset, pc)) {
        continue;
      }
      access_loop_[pc] = loop.header;
      access_base_[pc] = -1;
      loop.element_buffers.insert(buffer);
      if (StoresInto(in) >= 0) {
        loop.writable.insert(buffer);
        writable_checked_.insert(pc);
      }
      FoldedAccess folded{pc, buffer};
      if (FoldsInto(loop, offset, pc, &folded)) {
        loop.folded.push_back(folded);
        folded_pcs_.insert(pc);
      }
    }
  }

  // Whether R[offset] at `use` is an ADD_I of (a) INDEX_U results the guard
  // computes (hoisted) and (b) exactly one guard-checked INDEX_U of the last
  // axis whose index is the counter (plus or minus a constant), each computed
  // in the block (see OffsetFromIndexes). Fills `folded`.
  bool FoldsInto(const CountedLoop& loop, int offset, int use, FoldedAccess* folded) const {
    int last_axis_terms = 0;
    std::function<bool(int, int)> walk = [&](int reg, int at) -> bool {
      for (int pc = at - 1; pc >= loop.header; --pc) {
        if (targets_[pc + 1]) return false;
        const Instr& in = fn_.code[pc];
        RegisterSet reads, writes;
        RegistersOf(fn_, in, &reads, &writes);
        if (!writes[reg]) continue;
        if (in.op == Op::ADD_I && in.a == reg) {
          folded->chain.push_back(pc);
          return walk(in.b, pc) && walk(in.c, pc);
        }
        if (in.op != Op::INDEX_U || in.a != reg || in.b != folded->buffer) return false;
        for (const AxisAccess& access : loop.axis_indexes) {
          if (access.pc != pc) continue;
          folded->chain.push_back(pc);
          if (access.hoisted) {
            folded->invariant.push_back(pc);
            return true;
          }
          if (in.c != fn_.registers[in.b].ndim - 1 || ++last_axis_terms > 1) return false;
          folded->constant = access.constant;
          folded->minus = access.minus;
          if (access.index_def >= 0) folded->chain.push_back(access.index_def);
          return true;
        }
        return false;
      }
      return false;
    };
    return walk(offset, use) && last_axis_terms == 1;
  }

  // Whether R[index] at `use` was set in its block by counter + c, c + counter
  // or counter - c, with c a constant register.
  bool CounterPlusConstant(int index, int use, const CountedLoop& loop, int* constant, bool* minus, int* def) const {
    for (int pc = use - 1; pc >= loop.header; --pc) {
      if (targets_[pc + 1]) return false;
      const Instr& in = fn_.code[pc];
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      if (!writes[index]) continue;
      auto is_constant = [&](int reg) { return ConstantInRange(reg, -(int64_t{1} << 40), int64_t{1} << 40); };
      if (in.op == Op::ADD_I && in.b == loop.counter && is_constant(in.c)) *constant = in.c;
      else if (in.op == Op::ADD_I && in.c == loop.counter && is_constant(in.b)) *constant = in.b;
      else if (in.op == Op::SUB_I && in.b == loop.counter && is_constant(in.c)) *constant = in.c, *minus = true;
      else return false;
      *def = pc;
      return in.a == index;
    }
    return false;
  }

  // `counter = k` with a constant k >= 0, then the loop's entry test, then the
  // loop: since the body never writes the counter and FORLOOP_INC stops before
  // the limit, k <= counter < limit holds everywhere in the body.
  bool StartsAtNonnegativeConstant(int header, int counter) const {
    if (header < 2 || targets_[header - 1]) return false;
    const Instr& test = fn_.code[header - 1];
    const Instr& init = fn_.code[header - 2];
    return test.op == Op::JLE_I && test.b == counter && init.op == Op::MOVE_I && init.a == counter &&
           ConstantInRange(init.b, 0, INT64_MAX);
  }

  // A constant register's value, or a value specialization's known one
  // (ConstantInRange says which registers have one).
  int64_t ConstantValueOf(int reg) const {
    auto known = known_.find(reg);
    return known != known_.end() ? known->second : fn_.constants[reg - fn_.first_constant()].bits;
  }

  // An int register's constant or known value, if it has one.
  std::optional<int64_t> ConstantOf(int reg) const {
    if (KindOf(reg) != Kind::kInt || !ConstantInRange(reg, INT64_MIN, INT64_MAX)) return std::nullopt;
    return ConstantValueOf(reg);
  }

  // What an index `counter + R[constant]` (`- R[constant]` if minus; the
  // counter alone if constant is -1) adds to the counter, when that is a
  // constant small enough to sit in an address.
  std::optional<int64_t> AddedConstant(int constant, bool minus) const {
    constexpr int64_t kNear = int64_t{1} << 20;
    if (constant < 0) return 0;
    if (!ConstantInRange(constant, -kNear, kNear)) return std::nullopt;
    return minus ? -ConstantValueOf(constant) : ConstantValueOf(constant);
  }

  // The float a constant register holds wherever it is read, if nothing
  // writes it.
  std::optional<double> FloatConstantOf(int reg) const {
    if (!fn_.IsConstantRegister(reg) || KindOf(reg) != Kind::kFloat || WrittenIn(reg, 0, fn_.code.size() - 1)) {
      return std::nullopt;
    }
    const ConstantValue& constant = fn_.constants[reg - fn_.first_constant()];
    if (constant.kind != Kind::kFloat) return std::nullopt;
    double value;
    std::memcpy(&value, &constant.bits, sizeof value);
    return value;
  }

  // The float R[reg] holds when the instruction at pc_ reads it, if known
  // here: a constant's (FloatConstantOf), or an int constant's that the
  // instruction just before converted into it, with no jump to pc_ between
  // (what `x ** 2` compiles to: I2F, then POW_F).
  std::optional<double> FloatOperandValue(int reg) const {
    if (auto value = FloatConstantOf(reg)) return value;
    if (pc_ == 0 || targets_[pc_]) return std::nullopt;
    const Instr& before = fn_.code[pc_ - 1];
    if (before.op != Op::I2F || before.a != reg) return std::nullopt;
    const std::optional<int64_t> integer = ConstantOf(before.b);
    if (!integer || *integer < -(int64_t{1} << 53) || *integer > (int64_t{1} << 53)) return std::nullopt;
    return static_cast<double>(*integer);
  }

  // Whether 1 / divisor is exact: a power of two whose reciprocal is a
  // normal float (so neither the divisor nor its reciprocal is subnormal).
  static bool ExactReciprocal(double divisor) {
    int exponent = 0;
    const double mantissa = std::frexp(divisor, &exponent);
    return (mantissa == 0.5 || mantissa == -0.5) && std::isnormal(divisor) && std::isnormal(1.0 / divisor);
  }

  bool ConstantInRange(int reg, int64_t low, int64_t high) const {
    if (auto known = known_.find(reg); known != known_.end()) return known->second >= low && known->second <= high;
    if (!fn_.IsConstantRegister(reg) || KindOf(reg) != Kind::kInt || WrittenIn(reg, 0, fn_.code.size() - 1)) {
      return false;
    }
    const ConstantValue& constant = fn_.constants[reg - fn_.first_constant()];
    return constant.kind == Kind::kInt && constant.bits >= low && constant.bits <= high;
  }

  // ---- Facts about int registers at the current pc, from the loops around it ----

  const RangedLoop* RangedLoopWith(int reg, bool counter) const {
    for (const RangedLoop& loop : ranged_loops_) {
      if (pc_ >= loop.header && pc_ < loop.end && (counter ? loop.counter : loop.limit) == reg) return &loop;
    }
    return nullptr;
  }

  // The instruction that last wrote `reg` before the current pc in its block, or -1.
  int DefinitionInBlock(int reg) const { return StraightPathWrite(reg, pc_, 0); }

  // counter + k with k a constant in [0, 1], the counter a ranged loop's here:
  // in [k, limit - 1 + k], so it neither overflows nor is negative.
  bool IsCounterPlusSmall(const Instr& in) const {
    if (in.op != Op::ADD_I) return false;
    return (RangedLoopWith(in.b, true) && ConstantInRange(in.c, 0, 1)) ||
           (RangedLoopWith(in.c, true) && ConstantInRange(in.b, 0, 1));
  }

  bool KnownNonnegative(int reg) const {
    if (ConstantInRange(reg, 0, INT64_MAX) || RangedLoopWith(reg, true) || RangedLoopWith(reg, false)) return true;
    if (auto range = RangeOf(reg); range && range->low >= 0) return true;
    int def = DefinitionInBlock(reg);
    return def >= 0 && IsCounterPlusSmall(fn_.code[def]);
  }

  // A ranged loop's limit exceeds its counter, which is >= 0, inside the body.
  bool KnownPositive(int reg) const { return ConstantInRange(reg, 1, INT64_MAX) || RangedLoopWith(reg, false); }

  // For `buf[t + i]` where the loop computes t = a op b from values it never
  // changes (so t is the same every iteration; lowering reuses registers, so
  // t's register may hold other values elsewhere in the loop): the pc of that
  // computation, found in the same block before `use`, or -1.
  int InvariantDefinition(int reg, int use, int header, int end) const {
    const int pc = StraightPathWrite(reg, use, header);
    if (pc < 0) return -1;
    const Instr& in = fn_.code[pc];
    bool arithmetic = in.op == Op::ADD_I || in.op == Op::SUB_I || in.op == Op::MUL_I;
    if (!arithmetic || in.a != reg || WrittenIn(in.b, header, end) || WrittenIn(in.c, header, end)) return -1;
    return pc;
  }

  // value := what the InvariantDefinition at `def` computes in the loop, an
  // overflow leaving for the interpreter (which raises where the loop would).
  void EmitInvariantDefinition(const Int& value, int def) {
    const Label exit = Exit();
    EmitArithmetic(value, fn_.code[def], &exit);
  }

  // dst := R[B] op R[C] for ADD_I, SUB_I or MUL_I, jumping to *overflow
  // when the result leaves int64, or wrapping when `overflow` is null (a
  // result whose range fits: ArithmeticRange). A known operand is an
  // immediate where the instruction takes one; dst is fresh, or a register
  // the interpreter does not read at the exit (see backend.h).
  void EmitArithmetic(const Int& dst, const Instr& in, const Label* overflow) {
    std::optional<int32_t> kb = Immediate(in.b), kc = Immediate(in.c);
    if (in.op != Op::MUL_I) {  // (-k must fit too)
      if (kb == INT32_MIN) kb.reset();
      if (kc == INT32_MIN) kc.reset();
    }
    if (in.op == Op::SUB_I) {
      kb.reset();  // (k - x takes the register form)
      if (kc) kc = -*kc;
    }
    const int x = kc ? in.b : in.c;  // the operand beside the immediate
    const std::optional<int32_t> k = kc ? kc : kb;
    if (k) {
      if (in.op == Op::MUL_I) overflow ? b_.MulCheckedImm(dst, I(x), *k, *overflow) : b_.MulImm(dst, I(x), *k);
      else overflow ? b_.AddCheckedImm(dst, I(x), *k, *overflow) : b_.AddImm(dst, I(x), *k);
      return;
    }
    if (!overflow && in.op == Op::ADD_I && (OffsetOf(in.b) != 0 || OffsetOf(in.c) != 0)) {
      // (b + t) + c is one add of b, c and t: `lea d, [b + c + t]`.
      b_.AddPlusImm(dst, ints_[in.b], ints_[in.c], OffsetOf(in.b) + OffsetOf(in.c));
      return;
    }
    switch (in.op) {
      case Op::ADD_I: overflow ? b_.AddChecked(dst, I(in.b), I(in.c), *overflow) : b_.Add(dst, I(in.b), I(in.c)); break;
      case Op::SUB_I: overflow ? b_.SubChecked(dst, I(in.b), I(in.c), *overflow) : b_.Sub(dst, I(in.b), I(in.c)); break;
      default: overflow ? b_.MulChecked(dst, I(in.b), I(in.c), *overflow) : b_.Mul(dst, I(in.b), I(in.c)); break;
    }
  }

  // The base of a hoisted access as the guard sees it: its register, or the
  // value its in-loop computation will give, computed by EmitGuardChecks.
  Int BaseAtGuard(CountedLoop& loop, const Access& access) {
    return access.base_def < 0 ? I(access.base) : loop.base_values.at(access.base_def);
  }

  // Entered from outside (not by its back edge): the guard, then the body.
  void EmitGuards(CountedLoop& loop) {
    EmitGuardChecks(loop);
    NoteCountedLoopGuards(loop);
    loop.body = b_.NewLabel();
    b_.AlignLoop();
    b_.Bind(loop.body);
    bodies_[loop.header] = loop.body;
  }

  // A while loop's entry (FindWhileLoops): the checks its unchecked adds and
  // accesses rely on, then, for a chunked loop, its first chunk's limit.
  // Every back edge goes past the checks.
  void EmitWhileGuard(int header, WhileLoop& loop) {
    NoteWhileLoopGuards(header, loop);
    const int64_t least = loop.chunked ? 1 : 0;  // the smallest step allowed
    for (int step : loop.steps) {
      if (immediate_[step]) {  // (>= least: FindWhileLoops)
        if (*immediate_[step] >= 2) {  // m - 1 <= INT64_MAX - s
          b_.BranchIntImm(IntCond::kGt, I(loop.m), INT64_MAX - *immediate_[step] + 1, Exit());
        }
        continue;
      }
      const Int s = I(step);
      b_.BranchIntImm(IntCond::kLt, s, least, Exit());
      Int room = b_.NewInt(), last = b_.NewInt();
      b_.MovImm(room, INT64_MAX);
      b_.Sub(room, room, s);
      b_.AddImm(last, I(loop.m), -1);  // (wraps for m = INT64_MIN: a needless exit, never a wrong pass)
      b_.BranchInt(IntCond::kGt, last, room, Exit());
    }
    if (!loop.bounds.empty()) {
      b_.BranchIntImm(IntCond::kLt, I(loop.x), 0, Exit());
      for (const auto& [buffer, store] : loop.bounds) {
        b_.BranchInt(IntCond::kGt, I(loop.m), store ? store_length_[buffer] : length_[buffer], Exit());
      }
    }
    if (!loop.chunked) {
      Label body = b_.NewLabel();
      b_.AlignLoop();
      b_.Bind(body);
      bodies_[header] = body;
      return;
    }
    // lim = min(m, x + ticks * s). With no tick left (ticks <= 0), lim <= x:
    // the head test fails, and the chunk's end checks for signals.
    if (!loop.lim.isValid()) loop.lim = b_.NewInt();  // (Dispatch may have made it)
    loop.chunk_start = b_.NewLabel();
    loop.chunk_end = b_.NewLabel();
    loop.after_test = b_.NewLabel();
    b_.Bind(loop.chunk_start);
    Label whole = b_.NewLabel(), set = b_.NewLabel();
    Int span = ticks_;
    if (loop.span_step >= 0 && !ConstantInRange(loop.span_step, 1, 1)) {
      span = b_.NewInt();
      b_.MulChecked(span, ticks_, I(loop.span_step), whole);
    }
    // (With x within a counter's range (FindCounters), x + ticks cannot
    // overflow: ticks is at most kBackEdgesPerCheck, and never far below 0.)
    const std::optional<Range> x = RangeOf(loop.x);
    if (span == ticks_ && x && x->low >= -kCounterBound && x->high <= kCounterBound) {
      b_.Add(loop.lim, I(loop.x), span);
    } else {
      b_.AddChecked(loop.lim, I(loop.x), span, whole);
    }
    b_.BranchInt(IntCond::kLe, loop.lim, I(loop.m), set);
    b_.Bind(whole);  // (x + span > m, or an overflow: past m, or below x if no tick is left)
    b_.Mov(loop.lim, I(loop.m));
    b_.BranchIntImm(IntCond::kGt, ticks_, 0, set);
    b_.Mov(loop.lim, I(loop.x));
    b_.Bind(set);
  }

  // The head test of a chunked while loop (at its head): x < lim, or the
  // chunk's end, out of line: the loop's end if x >= m, else the next chunk.
  void EmitWhileTest(WhileLoop& loop, int exit) {
    b_.BranchInt(IntCond::kGe, I(loop.x), loop.lim, loop.chunk_end);
    // Padding here runs at every entry. A loop with no way out but this test
    // runs to its bound (a sieve's `while j < n: flags[j] = 0; j += i`), and
    // its body, aligned, ran 7% faster on an Intel Xeon; one that stops at
    // some element (a `break` at a delimiter) is often entered for a few
    // iterations, once per token of a tokenizer, which ran 5% slower with
    // the padding.
    if (loop.runs_to_bound) b_.AlignLoop();
    b_.Bind(loop.after_test);
    ColdAtThisPc([=, this, &loop] {
      b_.Bind(loop.chunk_end);
      b_.BranchInt(IntCond::kGe, I(loop.x), I(loop.m), labels_[exit]);
      const Label resume = ExitAt(loop.header);
      CheckSignals(&resume);  // (the chunk ran up to every tick left; the ticks restart)
      b_.Jump(loop.chunk_start);
    });
  }

  // A back edge to `header`: a chunked while loop's test, past its head, or
  // a tick counted, past its loop's guard if it has one.
  void LoopBack(int header) {
    if (auto w = while_loops_.find(header); w != while_loops_.end() && w->second.chunked) {
      b_.BranchInt(IntCond::kLt, I(w->second.x), w->second.lim, w->second.after_test);
      b_.Jump(w->second.chunk_end);
      return;
    }
    auto body = bodies_.find(header);
    BackEdge(body != bodies_.end() ? body->second : labels_[header], header);
  }

  // Every hoisted access must stay inside its buffer from the counter's value
  // now to limit - 1; a failed check leaves through the current pc's exit. Then
  // what the body relies on: the loop's data pointers, converted ints, the
  // chunk counter. Emitted at the loop's head, and again for an on-stack entry
  // at a loop nested in this one (see Dispatch()).
  void EmitGuardChecks(CountedLoop& loop) {
    // Accesses of one element (the load and the store of `s[p + 3] -= x`)
    // share one index, checked once: against the store length if either
    // stores, which is the length or 0.
    auto value_key = [&](int reg, int pc) {
      return WrittenIn(reg, loop.header, loop_end_.at(loop.header)) ? StraightPathWrite(reg, pc, loop.header)
                                                                     : -1 - reg;
    };
    std::map<std::tuple<int, int, int>, std::vector<int>> elements;  // (buffer, base, index) -> pcs
    std::vector<std::tuple<int, int, int>> order;
    for (int pc : loop.invariant_accesses) {
      int buffer = 0, base = -1, index = 0;
      bool store = false;
      FlatAccessOf(fn_.code[pc], &buffer, &base, &index, &store);
      auto key = std::make_tuple(buffer, base >= 0 ? value_key(base, pc) : INT32_MIN, value_key(index, pc));
      if (elements[key].empty()) order.push_back(key);
      elements[key].push_back(pc);
    }
    // Elements that differ only by a constant added to one value (nbody's
    // s[p], s[p + 1] ... s[p + 5]) share one register, the value itself,
    // with each constant in the address: the guard checks the least and the
    // greatest index inside the buffer, so that none needs Python's negative
    // index rule (a group that would leaves for the interpreter). One
    // register instead of six keeps the loop's values in registers.
    struct Offset {
      int root = -1, root_pc = -1;  // the register, and where its value is read
      int64_t key = 0, k = 0;       // its value key; the constant
    };
    auto offset_of = [&](int pc) -> std::optional<Offset> {
      int buffer = 0, base = -1, index = 0;
      bool store = false;
      FlatAccessOf(fn_.code[pc], &buffer, &base, &index, &store);
      constexpr int64_t kFar = int64_t{1} << 20;
      Offset offset{index, pc};
      if (base >= 0) {
        if (ConstantInRange(index, -kFar, kFar)) offset = {base, pc, 0, ConstantValueOf(index)};
        else if (ConstantInRange(base, -kFar, kFar)) offset = {index, pc, 0, ConstantValueOf(base)};
        else return std::nullopt;
      }
      const int end = loop_end_.at(loop.header);
      if (const int def = StraightPathWrite(offset.root, pc, loop.header); def >= 0) {
        const Instr& sum = fn_.code[def];
        const bool add = sum.op == Op::ADD_I, sub = sum.op == Op::SUB_I;
        int y = -1;
        int64_t c = 0;
        if ((add || sub) && ConstantInRange(sum.c, -kFar, kFar)) y = sum.b, c = ConstantValueOf(sum.c);
        else if (add && ConstantInRange(sum.b, -kFar, kFar)) y = sum.c, c = ConstantValueOf(sum.b);
        if (y < 0 || y == sum.a) return std::nullopt;
        offset = {y, def, 0, offset.k + (sub ? -c : c)};
      }
      if (WrittenIn(offset.root, loop.header, end)) {
        // (Invariant arithmetic of this loop, made below, or of one around it.)
        const int def = StraightPathWrite(offset.root, offset.root_pc, loop.header);
        auto owner = invariant_owner_.find(def);
        if (def < 0 || owner == invariant_owner_.end() || owner->second > loop.header) return std::nullopt;
        offset.key = def;
      } else {
        offset.key = -1 - offset.root;
      }
      return offset;
    };
    std::map<std::pair<int, int64_t>, std::vector<std::pair<std::tuple<int, int, int>, Offset>>> by_value;
    for (const auto& key : order) {
      if (auto offset = offset_of(elements.at(key).front())) {
        by_value[{std::get<0>(key), offset->key}].push_back({key, *offset});
      }
    }
    struct ElementGroup {
      std::pair<int, int64_t> key;  // (buffer, the value's key)
      Offset first;                 // (the value: its register, where it is read)
      int64_t low = INT64_MAX, high = INT64_MIN;
      bool any_store = false;
    };
    std::vector<ElementGroup> element_groups;
    std::set<std::tuple<int, int, int>> grouped;
    std::set<int> roots;
    for (const auto& [group_key, members] : by_value) {
      ElementGroup group{group_key, members.front().second};
      for (const auto& [key, offset] : members) {
        group.low = std::min(group.low, offset.k);
        group.high = std::max(group.high, offset.k);
        for (int at : elements.at(key)) group.any_store |= StoresInto(fn_.code[at]) >= 0;
      }
      if (group.low == group.high) continue;  // (one element: the usual way, Python's rule and all)
      Int& value = grouped_values_[group_key];
      if (!value.isValid()) value = b_.NewInt();
      for (const auto& [key, offset] : members) {
        grouped.insert(key);
        for (int at : elements.at(key)) {
          grouped_offsets_[at] = {value, offset.k};
          hoisted_indexes_[at] = value;  // (for OnlyCheckedIndexesRead; IndexRegister asks grouped_offsets_ first)
        }
      }
      roots.insert(group.first.root);
      element_groups.push_back(group);
    }
    // The loop's invariant arithmetic, once. An element's index `p + 3` that
    // only grouped accesses read (as p, with 3 in the address) needs no
    // value: its group's check of p + least and p + greatest leaves on any
    // overflow it could have (nbody: three adds and their checks fewer each
    // time the loop over j starts).
    for (int def : loop.invariant_arithmetic) {
      if (OnlyGroupedAccessesRead(def) && !roots.count(fn_.code[def].a)) {
        unmade_invariants_.insert(def);
        continue;
      }
      Int& value = invariant_values_[def];
      if (!value.isValid()) value = b_.NewInt();
      EmitInvariantDefinition(value, def);
    }
    for (const ElementGroup& group : element_groups) {
      const int buffer = group.key.first;
      const Int& value = grouped_values_.at(group.key);
      b_.Mov(value, InvariantValueAt(group.first.root, group.first.root_pc, loop));
      Int least = value, most = b_.NewInt();
      if (group.low != 0) {
        least = b_.NewInt();
        b_.AddCheckedImm(least, value, static_cast<int32_t>(group.low), Exit());
      }
      b_.AddCheckedImm(most, value, static_cast<int32_t>(group.high), Exit());
      b_.BranchIntImm(IntCond::kLt, least, 0, Exit());
      b_.BranchInt(IntCond::kGe, most, group.any_store ? store_length_[buffer] : length_[buffer], Exit());
    }
    for (const auto& key : order) {
      if (grouped.count(key)) continue;
      const std::vector<int>& pcs = elements.at(key);
      const int pc = pcs.front();
      int buffer = 0, base = -1, index = 0;
      bool store = false, any_store = false;
      for (int at : pcs) {
        FlatAccessOf(fn_.code[at], &buffer, &base, &index, &store);
        any_store |= store;
      }
      FlatAccessOf(fn_.code[pc], &buffer, &base, &index, &store);
      Int value = InvariantValueAt(index, pc, loop);
      if (base >= 0) {
        Int sum = b_.NewInt();
        b_.AddChecked(sum, InvariantValueAt(base, pc, loop), value, Exit());
        value = sum;
      }
      Int& hoisted = hoisted_indexes_[pc];
      if (!hoisted.isValid()) hoisted = b_.NewInt();
      const Int& bound = any_store ? store_length_[buffer] : length_[buffer];
      b_.Mov(hoisted, Normalized(value, bound, length_[buffer], Exit(), false));
      for (int at : pcs) hoisted_indexes_[at] = hoisted;
    }
    // Recomputed bases: the value the loop's computation will give (an
    // overflow leaves for the interpreter, which raises where the loop would).
    std::set<int> computed;
    for (const Access& access : loop.accesses) {
      if (access.base_def < 0 || !computed.insert(access.base_def).second) continue;
      Int& value = loop.base_values[access.base_def];
      if (!value.isValid()) value = b_.NewInt();
      EmitInvariantDefinition(value, access.base_def);
    }
    Int low, end;  // the counter's values from now on: [low, end)
    if (!loop.accesses.empty() || !loop.affine.empty() || !loop.axis_indexes.empty()) {
      IterationBounds(loop, &low, &end);
    }
    for (const Access& access : loop.accesses) {
      Int first = b_.NewInt(), last = b_.NewInt();
      if (access.base >= 0) {
        Int base = BaseAtGuard(loop, access);
        b_.AddChecked(first, base, low, Exit());
        b_.AddChecked(last, base, end, Exit());
      } else {
        b_.Mov(first, low);
        b_.Mov(last, end);
      }
      b_.BranchIntImm(IntCond::kLt, first, 0, Exit());
      b_.BranchInt(IntCond::kGt, last, length_[access.buffer], Exit());
      if (access.store) RequireWritable(access.buffer);
    }
    // Affine indexes: in range at the first and the last iteration (either
    // may be the larger), so at every one. An overflow on the way leaves.
    // Accesses that differ only by constants added (s[q], s[q + 1] ...
    // s[q + 5], the load and the store of s[q + 3]) are checked as a group:
    // counter * s once per scale, the group's other terms once, then the
    // least constant against 0 and the greatest against the length (the
    // store length if any of them stores), at both ends.
    std::map<int, std::pair<Int, Int>> products;  // scale register (-1: the counter) -> (first, last)
    auto product = [&](int scale) {
      if (auto known = products.find(scale); known != products.end()) return known->second;
      Int first = b_.NewInt(), last = b_.NewInt();
      b_.AddImm(last, end, -1);  // (end > low: no overflow)
      if (scale >= 0) {
        b_.MulChecked(first, low, I(scale), Exit());
        b_.MulChecked(last, last, I(scale), Exit());
      } else {
        b_.Mov(first, low);
      }
      return products[scale] = {first, last};
    };
    auto constant_term = [&](const typename AffineAccess::Term& term) {
      return term.def < 0 && ConstantInRange(term.reg, INT32_MIN / 2, INT32_MAX / 2);
    };
    struct Group {
      int buffer, scale;
      std::vector<typename AffineAccess::Term> terms;  // the terms that are not constants
      int64_t low = INT64_MAX, high = INT64_MIN;
      bool store = false;
      std::vector<std::pair<AffineAccess*, int64_t>> members;  // with each one's constant
    };
    std::vector<Group> groups;
    for (AffineAccess& access : loop.affine) {
      std::vector<typename AffineAccess::Term> terms;
      int64_t constant = 0;
      for (const auto& term : access.terms) {
        if (!constant_term(term)) terms.push_back(term);
        else constant += term.minus ? -ConstantValueOf(term.reg) : ConstantValueOf(term.reg);
      }
      auto same = [&](const Group& group) {
        if (group.buffer != access.buffer || group.scale != access.scale || group.terms.size() != terms.size()) {
          return false;
        }
        for (size_t t = 0; t < terms.size(); ++t) {
          const auto &x = group.terms[t], &y = terms[t];
          if (x.reg != y.reg || x.def != y.def || x.minus != y.minus) return false;
        }
        return true;
      };
      auto group = std::find_if(groups.begin(), groups.end(), same);
      if (group == groups.end()) group = groups.insert(groups.end(), Group{access.buffer, access.scale, terms});
      group->low = std::min(group->low, constant);
      group->high = std::max(group->high, constant);
      group->store |= access.store;
      group->members.emplace_back(&access, constant);
    }
    for (Group& group : groups) {
      const auto [product_first, product_last] = product(group.scale);
      Int first = b_.NewInt(), last = b_.NewInt();
      b_.Mov(first, product_first);
      b_.Mov(last, product_last);
      for (const auto& term : group.terms) {
        Int value = I(term.reg);
        if (term.def >= 0) {  // what the loop's computation will give
          value = b_.NewInt();
          EmitInvariantDefinition(value, term.def);
        }
        if (term.minus) {
          b_.SubChecked(first, first, value, Exit());
          b_.SubChecked(last, last, value, Exit());
        } else {
          b_.AddChecked(first, first, value, Exit());
          b_.AddChecked(last, last, value, Exit());
        }
      }
      // With a scale known not to be negative the index grows with the
      // counter: the least at the first iteration, the greatest at the last,
      // and those two checks prove the others.
      const Int& bound = group.store ? store_length_[group.buffer] : length_[group.buffer];
      const bool growing = group.scale < 0 || ConstantInRange(group.scale, 0, INT64_MAX);
      for (const Int& index : {first, last}) {
        const bool at_first = index.id() == first.id();
        Int least = index, most = index;
        if (group.low != 0 && (!growing || at_first)) {
          least = b_.NewInt();
          b_.AddCheckedImm(least, index, static_cast<int32_t>(group.low), Exit());
        }
        if (group.high != 0 && (!growing || !at_first)) {
          most = b_.NewInt();
          b_.AddCheckedImm(most, index, static_cast<int32_t>(group.high), Exit());
        }
        if (!growing || at_first) b_.BranchIntImm(IntCond::kLt, least, 0, Exit());
        if (!growing || !at_first) b_.BranchInt(IntCond::kGe, most, bound, Exit());
      }
      for (auto [access, constant] : group.members) {
        if (!access->strided) continue;
        // based = data + (first + constant - low) * size; delta = (s - 1) * size
        const int size = InfoOf(fn_.registers[access->buffer].elem).size;
        if (!access->based.isValid()) {
          access->based = b_.NewInt();
          access->delta = b_.NewInt();
        }
        Int offset = b_.NewInt();
        b_.Sub(offset, first, low);
        if (constant != 0) b_.AddImm(offset, offset, static_cast<int32_t>(constant));
        b_.AddScaled(access->based, data_[access->buffer], offset, __builtin_ctz(size));
        b_.AddImm(access->delta, I(access->scale), -1);
        b_.MulImm(access->delta, access->delta, size);
      }
    }
    // Products carried from one iteration to the next (FindProductInductions):
    // at the loop's head, one step short of the first iteration's, which the
    // guard computed above with its overflow check (the subtraction wraps
    // where that value leaves int64; the first step brings it back). At an
    // entry at a loop nested in this one (Dispatch), the iteration's own:
    // its multiply ran before, in the interpreter, and the next iteration
    // steps from it.
    for (const auto& [def, scale] : loop.inductions) {
      const Int& q = I(fn_.code[def].a);
      if (pc_ != loop.header) b_.Mov(q, product(scale).first);
      else StepByScale(q, product(scale).first, scale, true);
    }
    // The loop gets its own copy of each buffer's data pointer: a short-lived
    // register the allocator keeps in the loop, while the function-long one may
    // wait on the stack. An access buf[base + counter] gets the pointer
    // data + base * size, so that the loop adds nothing to address it.
    // (The registers are made once; each emission of the guard sets them.)
    std::set<std::tuple<int, int, int>> set;
    for (const Access& access : loop.accesses) {
      if (!set.insert({access.buffer, access.base, access.base_def}).second) continue;
      if (access.base >= 0) {
        Int& local = loop.based[{access.buffer, access.base, access.base_def}];
        if (!local.isValid()) local = b_.NewInt();
        int shift = __builtin_ctz(InfoOf(fn_.registers[access.buffer].elem).size);
        b_.AddScaled(local, data_[access.buffer], BaseAtGuard(loop, access), shift);
        continue;
      }
      CopyData(loop, access.buffer);
    }
    for (int buffer : loop.local_buffers) {
      if (!loop.lengths.count(buffer)) loop.lengths[buffer] = {b_.NewInt(), stored_[buffer] ? b_.NewInt() : Int()};
      CopyData(loop, buffer);
      auto& [length, store_length] = loop.lengths.at(buffer);
      b_.Mov(length, length_[buffer]);
      if (stored_[buffer]) b_.Mov(store_length, store_length_[buffer]);
    }
    EmitAxisIndexGuards(loop, low, end);
    for (int buffer : loop.writable) RequireWritable(buffer);
    for (int buffer : loop.element_buffers) CopyData(loop, buffer);
    // Accesses of one row that differ by known constants (a stencil's
    // src[i, j - 1], src[i, j], src[i, j + 1]) share one pointer, the row's,
    // each constant in its address: fewer registers for the loop.
    std::map<std::pair<int, std::vector<uint32_t>>, Int> rows;  // (view, the row's hoisted registers) -> based
    for (FoldedAccess& folded : loop.folded) {
      // based = data + (hoisted sum + constant) * size: the guard checked
      // every term, and the sum is an element's offset less the counter. A
      // known constant goes into the address instead (row_offsets_).
      const std::optional<int64_t> k = AddedConstant(folded.constant, folded.minus);
      Int* shared = nullptr;
      if (k) {
        row_offsets_[folded.pc] = *k;
        std::vector<uint32_t> hoisted;
        for (int pc : folded.invariant) hoisted.push_back(loop.hoisted.at(pc).id());
        std::sort(hoisted.begin(), hoisted.end());
        auto [it, fresh] = rows.try_emplace({folded.buffer, hoisted});
        shared = &it->second;
        if (!fresh) {
          folded.based = *shared;
          folded_[folded.pc] = {folded.based, loop.counter};
          continue;
        }
      }
      Int row = b_.NewInt();
      b_.MovImm(row, 0);
      for (int pc : folded.invariant) b_.Add(row, row, loop.hoisted.at(pc));
      if (!k) {
        if (folded.minus) b_.Sub(row, row, I(folded.constant));
        else b_.Add(row, row, I(folded.constant));
      }
      if (!folded.based.isValid()) folded.based = b_.NewInt();
      b_.AddScaled(folded.based, data_[folded.buffer], row,
                   __builtin_ctz(InfoOf(fn_.registers[folded.buffer].elem).size));
      if (shared) *shared = folded.based;
      folded_[folded.pc] = {folded.based, loop.counter};
    }
    for (const auto& binned : loop.binned) {  // m <= len (m < len for x <= m)
      const Int& length = binned.store ? store_length_[binned.buffer] : length_[binned.buffer];
      b_.BranchInt(binned.inclusive ? IntCond::kGe : IntCond::kGt, I(binned.bound), length, Exit());
      if (binned.from_below && !binned.inclusive) b_.BranchIntImm(IntCond::kLt, length, 1, Exit());
    }
    for (int reg : loop.nonzero_floats) b_.BranchFloatZero(F(reg), Exit());
    for (int reg : loop.nonzero_ints) b_.BranchIntImm(IntCond::kEq, I(reg), 0, Exit());
    for (int reg : loop.exact_doubles) {
      RequireExactDouble(I(reg));
      if (!converted_[reg].isValid()) converted_[reg] = b_.NewFloat();
      b_.IntToFloat(converted_[reg], I(reg));
    }
    if (!unrolled_.count(loop.header)) {
      if (!loop.left.isValid()) loop.left = b_.NewInt();
      ChunkStart(loop, Exit());
    }
    EmitInlineOk(loop, Exit());
  }

  // An unrolled loop (UnrolledTrips) at pc_, its head: the guard, then the
  // body once per iteration; pc_ ends at the closing FORLOOP_INC, which
  // emits only the counter's last value.
  //
  // The loop is entered only from the straight path before it, where the
  // counter was set to the start: in the copy for trip t the counter is the
  // known value start + t (UnrolledCopy), an immediate to the instructions
  // that read it, while its register keeps the start. An access by the
  // counter takes that register with t elements added to its address
  // (UncheckedIndex); an exit stores start + t (each copy has exits of its
  // own); arithmetic of known values folds (KnownResult).
  void EmitUnrolled(CountedLoop& loop, int trips) {
    const int end = loop_end_.at(loop.header);
    const int64_t start = ConstantValueOf(fn_.code[loop.header - 2].b);
    EmitGuardChecks(loop);
    unrolled_loop_ = &loop;
    for (int trip = 0; trip < trips; ++trip) {
      EnterCopy({loop.counter, start + trip, trip});
      EmitCopy(loop.header, end);
    }
    EnterCopy({});
    unrolled_loop_ = nullptr;
    copy_offset_ = {-1, 0};
    pc_ = end;
    if (trips > 1) b_.MovImm(I(loop.counter), start + trips - 1);
  }

  // A partially unrolled loop (PartialCopies) at pc_, just past its guard
  // (loop.body, where each chunk starts): while the chunk has `copies`
  // iterations left, a pass runs them, the body once per copy; the
  // iterations left over run the one-iteration body that follows, whose
  // back edge (FORLOOP_INC) goes to loop.single. On return pc_ is the
  // loop's head again, for that body.
  //
  // In the copy for trip t the counter's register keeps the value of the
  // pass's first iteration: an access by the counter adds t elements to
  // its address (UncheckedIndex), an add reading its value folds t into its
  // constant and any other reader gets a register set to counter + t
  // (OffsetOf, I()), and an exit stores that (each copy has exits of its
  // own). The strength-reduced pointers of strided
  // accesses move by their step after each copy, as the back edge moves
  // them; the counter moves by `copies` once per pass. A chunk has at least
  // one iteration, so a pass that leaves none left ended the chunk.
  void EmitPartialPass(CountedLoop& loop, int copies) {
    const int end = loop_end_.at(loop.header);
    Label pass = b_.NewLabel();
    loop.single = b_.NewLabel();
    loop.chunk_end = b_.NewLabel();
    b_.BranchIntImm(IntCond::kLt, loop.left, copies, loop.single);
    b_.AlignLoop();
    b_.Bind(pass);
    const int step = loop.down ? -1 : 1;
    for (int trip = 0; trip < copies; ++trip) {
      EnterCopy({loop.counter, 0, trip * step, true});
      EmitCopy(loop.header, end);
      if (pending_element_.reg >= 0) LoadPendingElement();
      MoveStridedPointers(loop);
    }
    EnterCopy({});
    copy_offset_ = {-1, 0};
    pc_ = loop.header;
    b_.AddImm(ints_[loop.counter], ints_[loop.counter], copies * step);
    b_.AddImm(loop.left, loop.left, -copies);
    b_.BranchIntImm(IntCond::kGe, loop.left, copies, pass);
    b_.BranchIntImm(IntCond::kEq, loop.left, 0, loop.chunk_end);
    b_.AlignLoop();
    b_.Bind(loop.single);
  }

  // One copy of an unrolled loop's body, [header, end), as EnterCopy set it.
  void EmitCopy(int header, int end) {
    for (pc_ = header; pc_ < end; ++pc_) {
      depth_marks_[b_.compiler().cursor()] = depth_[pc_];
      Instruction(fn_.code[pc_]);
    }
  }

  // The strength-reduced pointers of a loop's strided accesses move by one
  // iteration's step (FindStridedAccesses): at the back edge, and after
  // each copy of a partial pass.
  void MoveStridedPointers(CountedLoop& loop) {
    for (AffineAccess& access : loop.affine) {
      if (access.strided) b_.Add(access.based, access.based, access.delta);
    }
  }

  // A chunked loop's back edge (ChunkStart), past the counter's step: on to
  // the body while the chunk has iterations left, else on to the chunk's end
  // (a partially unrolled loop's single-iteration body, and the label its
  // passes jump to when they use the chunk up: EmitPartialPass).
  void ChunkBackEdge(CountedLoop& loop) {
    const bool partial = partial_.count(loop.header) > 0;
    b_.DecrementAndBranchPositive(loop.left, partial ? loop.single : loop.body);
    if (partial) b_.Bind(loop.chunk_end);
  }

  // A filling loop (FillByte) at pc_, its head: the guard (which proved
  // buf[counter .. limit - 1] inside the buffer and writable), one memset of
  // those elements, and the counter at its last value, as the interpreter
  // leaves it; pc_ ends at the closing FORLOOP_INC, which emits nothing.
  // (The guard's chunk charged the ticks for up to a chunk of iterations: a
  // memset is quick, whatever its length.)
  void EmitFill(CountedLoop& loop, int byte) {
    const int end = loop_end_.at(loop.header);
    const Instr& store = fn_.code[loop.header];
    EmitGuardChecks(loop);
    const int size = InfoOf(fn_.registers[store.a].elem).size;
    Int at = b_.NewInt(), value = b_.NewInt(), bytes = b_.NewInt();
    b_.AddScaled(at, data_[store.a], I(loop.counter), __builtin_ctz(size));
    b_.MovImm(value, byte);
    b_.Sub(bytes, I(loop.limit), I(loop.counter));
    if (size > 1) b_.MulImm(bytes, bytes, size);
    b_.CallIntHelper(Helpers(), HelperOffset(offsetof(JitHelpers, fill)), {at, value, bytes});
    b_.AddImm(I(loop.counter), I(loop.limit), -1);
    pc_ = end;
  }

  // A summing loop (SummedElements) at pc_, its head: the guard (which
  // proved buf[counter .. limit - 1] inside the buffer), a check that acc
  // plus any sum of that many elements fits 64 bits (if not, the
  // interpreter runs the loop, and leaves 64 bits where Python's int would),
  // one call of the sum helper, and the registers as the interpreter leaves
  // them: the counter at its last value and the element's register holding
  // the last element. pc_ ends at the closing FORLOOP_INC, which emits
  // nothing. (As for a fill, the guard's chunk charged the ticks.)
  void EmitElementSum(CountedLoop& loop, int acc) {
    const int end = loop_end_.at(loop.header);
    const Instr& load = fn_.code[loop.header];
    EmitGuardChecks(loop);
    const ElemType elem = fn_.registers[load.b].elem;
    const Range range = *ElementRange(elem);
    Int trips = b_.NewInt();
    b_.Sub(trips, I(loop.limit), I(loop.counter));
    for (int64_t bound : {range.high, range.low}) {  // (trips >= 1, so each extreme is reachable)
      if (bound == 0) continue;
      Int most = b_.NewInt(), scaled = b_.NewInt(), total = b_.NewInt();
      b_.MovImm(most, bound);
      b_.MulChecked(scaled, most, trips, Exit());
      b_.AddChecked(total, scaled, I(acc), Exit());
    }
    Int at = b_.NewInt(), kind = b_.NewInt();
    b_.AddScaled(at, data_[load.b], I(loop.counter), __builtin_ctz(InfoOf(elem).size));
    b_.MovImm(kind, static_cast<int64_t>(elem));
    Int sum = b_.CallIntHelper(Helpers(), HelperOffset(offsetof(JitHelpers, sum)), {at, trips, kind});
    b_.Add(I(acc), I(acc), sum);
    b_.AddImm(I(loop.counter), I(loop.limit), -1);
    b_.LoadElement(elem, I(load.a), data_[load.b], I(loop.counter), 0);
    pc_ = end;
  }

  // Makes `copy` the unrolled copy being emitted (none: counter -1), its
  // counter's value known (see I()).
  void EnterCopy(const UnrolledCopy& copy) {
    if (copy_.counter >= 0 && !copy_.partial) immediate_[copy_.counter].reset();
    copy_ = copy;
    if (copy_.counter >= 0 && !copy_.partial) immediate_[copy_.counter] = copy_.value;
  }

  // Whether buf[R[base] + k] in an unrolled copy is one the loop's guard
  // checked: an access buf[R[base] + counter] of the loop, with a base the
  // loop never writes, covers every k among the counter's values (`out[t +
  // (i + 1) % 16]` beside `out[t + i]`); a store needs a covering store,
  // which proved the buffer writable.
  bool CoveredInCopy(int buffer, int base, int64_t k, bool store) const {
    if (unrolled_loop_ == nullptr) return false;
    const int64_t start = copy_.value - copy_.trip;
    if (k < start || k >= start + unrolled_.at(unrolled_loop_->header)) return false;
    for (const Access& access : unrolled_loop_->accesses) {
      if (access.buffer == buffer && access.base == base && access.base_def < 0 && (access.store || !store)) {
        return true;
      }
    }
    return false;
  }

  // The index register of an access the code does not check, by R[reg]: in
  // an unrolled copy the counter's own register, which holds the loop's
  // start, with the trip added to the address (ElementOffset); any other
  // register as it is.
  Int UncheckedIndex(int reg) {
    if (reg != copy_.counter) return I(reg);
    copy_offset_ = {pc_, copy_.trip};
    return ints_[reg];
  }

  // The loop's own copy of a buffer's data pointer (CountedLoop::data): a
  // short-lived register the allocator keeps in the loop, made once and set
  // by each emission of the guard.
  void CopyData(CountedLoop& loop, int buffer) {
    Int& local = loop.data[buffer];
    if (!local.isValid()) local = b_.NewInt();
    b_.Mov(local, data_[buffer]);
  }

  // The guard's part for the INDEX_Us of FindAxisIndexes. Accesses alike
  // are checked once (a stencil's src[i, j - 1], src[i, j]
  // and src[i, j + 1]): a hoisted index of the same view, axis and value
  // is scaled once and shared, and the counter plus known constants on one
  // view's axis are checked as a span, its least constant at the first
  // iteration and its greatest at the last.
  void EmitAxisIndexGuards(CountedLoop& loop, const Int& low, const Int& end) {
    std::map<std::pair<int, int>, Int> sizes;  // (view, axis) -> its length
    auto size_of = [&](int buffer, int axis) {
      auto [it, fresh] = sizes.try_emplace({buffer, axis});
      if (fresh) {
        it->second = b_.NewInt();
        b_.LoadInt(it->second, ints_[buffer], ViewField(offsetof(BufferView, shape), axis));
      }
      return it->second;
    };
    std::map<std::tuple<int, int, int, int>, int> scaled;  // (view, axis, index register, its def) -> pc
    std::map<std::pair<int, int>, std::pair<int64_t, int64_t>> spans;  // (view, axis) -> least, greatest constant
    for (const AxisAccess& access : loop.axis_indexes) {
      const Instr& in = fn_.code[access.pc];
      if (access.hoisted) {
        auto [it, fresh] = scaled.try_emplace({access.buffer, access.axis, in.d, access.def}, access.pc);
        if (!fresh) {
          loop.hoisted[access.pc] = loop.hoisted.at(it->second);
          continue;
        }
      } else if (const std::optional<int64_t> k = AddedConstant(access.constant, access.minus)) {
        auto [it, fresh] = spans.try_emplace({access.buffer, access.axis}, *k, *k);
        it->second = {std::min(it->second.first, *k), std::max(it->second.second, *k)};
        continue;
      }
      EmitAxisIndexGuard(loop, access, low, end, size_of(access.buffer, access.axis));
    }
    for (const auto& [view, span] : spans) {
      Int first = b_.NewInt(), last = b_.NewInt();
      b_.AddCheckedImm(first, low, static_cast<int32_t>(span.first), Exit());
      b_.AddCheckedImm(last, end, static_cast<int32_t>(span.second), Exit());
      b_.BranchIntImm(IntCond::kLt, first, 0, Exit());
      b_.BranchInt(IntCond::kGt, last, size_of(view.first, view.second), Exit());
    }
  }

  // One INDEX_U's part, `size` the length of its view's axis.
  void EmitAxisIndexGuard(CountedLoop& loop, const AxisAccess& access, const Int& low, const Int& end,
                          const Int& size) {
    const Instr& in = fn_.code[access.pc];
    if (access.hoisted) {
      Int index = I(in.d);
      if (access.def >= 0) {  // what the loop's computation will give
        const Instr& def = fn_.code[access.def];
        index = b_.NewInt();
        if (def.op == Op::ADD_I) b_.AddChecked(index, I(def.b), I(def.c), Exit());
        if (def.op == Op::SUB_I) b_.SubChecked(index, I(def.b), I(def.c), Exit());
        if (def.op == Op::MUL_I) b_.MulChecked(index, I(def.b), I(def.c), Exit());
      }
      Int& value = loop.hoisted[access.pc];
      if (!value.isValid()) value = b_.NewInt();
      ScaleByStride(value, access.buffer, access.axis, AxisIndex(size, index));
      return;
    }
    // The counter's range now, [low, end), moved by the constant.
    Int first = b_.NewInt(), last = b_.NewInt();
    if (access.constant < 0) {
      b_.Mov(first, low);
      b_.Mov(last, end);
    } else if (access.minus) {
      b_.SubChecked(first, low, I(access.constant), Exit());
      b_.SubChecked(last, end, I(access.constant), Exit());
    } else {
      b_.AddChecked(first, low, I(access.constant), Exit());
      b_.AddChecked(last, end, I(access.constant), Exit());
    }
    b_.BranchIntImm(IntCond::kLt, first, 0, Exit());
    b_.BranchInt(IntCond::kGt, last, size, Exit());
  }

  // dst := index * strides[axis] of the view in `buffer`; the innermost axis
  // steps by one element in every frame machine code runs (see INDEX_U).
  void ScaleByStride(const Int& dst, int buffer, int axis, const Int& index) {
    if (axis == fn_.registers[buffer].ndim - 1) {
      b_.Mov(dst, index);
      return;
    }
    Int stride = b_.NewInt();
    b_.LoadInt(stride, ints_[buffer], ViewField(offsetof(BufferView, strides), axis));
    b_.MulChecked(dst, index, stride, Exit());  // within the view: never overflows
  }

  // The values the counter takes from now to the loop's end, [low, end):
  // [counter, limit) counting up; (limit, counter] counting down, which
  // leaves for the interpreter in the one case that has no int64 end,
  // counter = 2**63 - 1. (The body runs only while the counter is inside.)
  void IterationBounds(const CountedLoop& loop, Int* low, Int* end) {
    if (!loop.down) {
      *low = I(loop.counter);
      *end = I(loop.limit);
      return;
    }
    *low = b_.NewInt();
    *end = b_.NewInt();
    b_.AddImm(*low, I(loop.limit), 1);  // (limit < counter: no overflow)
    b_.AddCheckedImm(*end, I(loop.counter), 1, Exit());
  }

  // A counted loop runs in chunks: `left` counts down the iterations to the
  // loop's end or to the next Ctrl-C check, whichever comes first, so that its
  // back edge is one decrement and branch. The chunk is charged to the
  // function's tick counter up front. Inside the loop counter < limit (counting
  // up), so limit - counter is in [1, 2**64): exact as an unsigned number even
  // where it wraps as a signed one, and compared with the ticks unsigned.
  //
  // The chunk's bounded sums (FindBoundedSums) are checked here, for its at
  // most `left` iterations: acc + left * high (and + left * low) must fit
  // 64 bits, else the code leaves through `exit` (at the loop's entry, the
  // guard's exit; at a chunk's end, the head, with the counter at the next
  // iteration's value, as the interpreter's FORLOOP_INC leaves it). Per
  // chunk, not per loop: a loop of range(2**62) that breaks early still runs
  // here.
  void ChunkStart(CountedLoop& loop, const Label& exit) {
    Label have_ticks = b_.NewLabel(), small = b_.NewLabel();
    b_.BranchIntImm(IntCond::kGt, ticks_, 0, have_ticks);
    CheckSignals(&exit);
    EmitInlineOk(loop, exit);  // (a signal handler may have rebound a name)
    b_.Bind(have_ticks);
    if (loop.down) b_.Sub(loop.left, I(loop.counter), I(loop.limit));
    else b_.Sub(loop.left, I(loop.limit), I(loop.counter));
    b_.BranchInt(IntCond::kUle, loop.left, ticks_, small);
    b_.Mov(loop.left, ticks_);
    b_.Bind(small);
    b_.Sub(ticks_, ticks_, loop.left);
    for (const auto& sum : loop.sums) {  // (left <= ticks <= 4096 and |bound| < 2**32: no overflow)
      // (A counter stays within +-(2**63 - 2**61) (FindCounters): plus at most 2**44, it fits.)
      if (counter_ranges_.count(sum.acc)) continue;
      for (int64_t bound : {sum.high > 0 ? sum.high : 0, sum.low < 0 ? sum.low : 0}) {
        if (bound == 0) continue;  // (only a positive high can overflow upward, a negative low downward)
        Int most = b_.NewInt();
        b_.MovImm(most, bound);
        b_.Mul(most, most, loop.left);
        b_.AddChecked(most, most, I(sum.acc), exit);
      }
    }
    for (const auto& sums : loop.element_sums) {  // (left * total <= 2**12 * 2**26: no overflow)
      if (sums.elements == 0) continue;
      Int limit = b_.NewInt(), element = b_.NewInt(), k = b_.NewInt();
      if (sums.total == 1) {
        b_.Mov(limit, loop.left);
      } else {
        b_.MovImm(limit, sums.total);
        b_.Mul(limit, limit, loop.left);
      }
      b_.MovImm(element, INT64_MAX);
      b_.Sub(limit, element, limit);
      b_.MovImm(k, 0);
      Label next = b_.NewLabel();
      b_.Bind(next);
      b_.LoadElement(ElemType::kI64, element, data_[sums.buffer], k, 0);
      b_.BranchInt(IntCond::kGt, element, limit, exit);
      b_.AddImm(k, k, 1);
      b_.BranchIntImm(IntCond::kLt, k, sums.elements, next);
    }
  }

  // ---- Ranges of int registers, within a block ----------------------------------------
  //
  // What the code knows of an int register's value where it is used: a
  // known value, a counter of a range loop starting at a constant >= 0
  // (below its limit), a parameter of an inlined callee (the caller's
  // argument's range), or what the arithmetic that wrote it in this block
  // makes of its operands' ranges. Arithmetic whose result range fits 64 bits
  // needs no overflow check; a float converted from an int range without 0
  // is no zero divisor; an int within 2**53 converts to a double exactly.
  // With a value specialization's limits (n = 250) the index and counter
  // arithmetic of a loop nest usually needs no check at all.

  struct Range {
    int64_t low, high;
  };

  std::optional<Range> RangeOf(int reg) const {
    if (KindOf(reg) != Kind::kInt) return std::nullopt;
    if (immediate_[reg]) return Range{*immediate_[reg], *immediate_[reg]};
    if (auto it = stable_ranges_.find(reg); it != stable_ranges_.end()) return it->second;
    if (auto it = ranges_.find(reg); it != ranges_.end()) return it->second;  // (within a counter's: see NoteFallThrough)
    if (auto it = counter_ranges_.find(reg); it != counter_ranges_.end()) return it->second;
    if (const RangedLoop* loop = RangedLoopWith(reg, true)) {
      auto limit = RangeOf(loop->limit);
      return Range{0, (limit ? limit->high : INT64_MAX) - 1};
    }
    if (RangedLoopWith(reg, false)) return Range{1, INT64_MAX};
    for (const auto& [header, loop] : counted_loops_) {  // below the limit counting up, above it counting down
      if (loop.counter != reg || pc_ < header || pc_ >= loop_end_.at(header)) continue;
      auto limit = RangeOf(loop.limit);
      if (!loop.down) {
        if (limit && limit->high == INT64_MIN) return std::nullopt;  // (never runs)
        return Range{INT64_MIN, (limit ? limit->high : INT64_MAX) - 1};
      }
      if (limit && limit->low < INT64_MAX) return Range{limit->low + 1, INT64_MAX};
    }
    return std::nullopt;
  }

  // What ADD_I, SUB_I, MUL_I, FLOORDIV_I or MOD_I computes when both
  // operands hold known values here (an unrolled copy's counter, arithmetic
  // of it, a specialization's parameters), if that raises nothing: Python's
  // result, within 64 bits, for the code to move as a constant.
  std::optional<int64_t> KnownResult(const Instr& in) const {
    switch (in.op) {  // (B and C are registers of these only)
      case Op::ADD_I: case Op::SUB_I: case Op::MUL_I: case Op::FLOORDIV_I: case Op::MOD_I: break;
      default: return std::nullopt;
    }
    const auto x = RangeOf(in.b), y = RangeOf(in.c);
    if (!x || !y || x->low != x->high || y->low != y->high) return std::nullopt;
    const int64_t u = x->low, v = y->low;
    int64_t result;
    switch (in.op) {
      case Op::ADD_I: if (__builtin_add_overflow(u, v, &result)) return std::nullopt; return result;
      case Op::SUB_I: if (__builtin_sub_overflow(u, v, &result)) return std::nullopt; return result;
      case Op::MUL_I: if (__builtin_mul_overflow(u, v, &result)) return std::nullopt; return result;
      case Op::FLOORDIV_I:
      case Op::MOD_I: {
        if (v == 0 || (u == INT64_MIN && v == -1)) return std::nullopt;
        int64_t quotient = u / v, remainder = u % v;
        if (remainder != 0 && (remainder < 0) != (v < 0)) {  // C truncates; Python floors
          quotient -= 1;
          remainder += v;
        }
        return in.op == Op::FLOORDIV_I ? quotient : remainder;
      }
      default: return std::nullopt;
    }
  }

  // The range of ADD_I, SUB_I or MUL_I's result, if both operands have one
  // and every value in it fits 64 bits. `clamped`: the range of a result
  // the code went on with, which an overflow would have left (checked
  // arithmetic): the part within 64 bits. (1 + (i + j) * (i + j + 1) // 2,
  // with i, j >= 0, is never 0, however large.)
  std::optional<Range> ArithmeticRange(const Instr& in, bool clamped = false) const {
    auto x = RangeOf(in.b), y = RangeOf(in.c);
    if (!x || !y) return std::nullopt;
    __int128 low, high;
    if (in.op == Op::ADD_I) {
      low = static_cast<__int128>(x->low) + y->low;
      high = static_cast<__int128>(x->high) + y->high;
    } else if (in.op == Op::SUB_I) {
      low = static_cast<__int128>(x->low) - y->high;
      high = static_cast<__int128>(x->high) - y->low;
    } else if (in.op == Op::MUL_I) {
      const __int128 products[] = {static_cast<__int128>(x->low) * y->low, static_cast<__int128>(x->low) * y->high,
                                   static_cast<__int128>(x->high) * y->low, static_cast<__int128>(x->high) * y->high};
      low = *std::min_element(std::begin(products), std::end(products));
      high = *std::max_element(std::begin(products), std::end(products));
    } else {
      return std::nullopt;
    }
    if (clamped) {
      if (low > INT64_MAX || high < INT64_MIN) return std::nullopt;  // (always overflows)
      low = std::max<__int128>(low, INT64_MIN);
      high = std::min<__int128>(high, INT64_MAX);
    }
    if (low < INT64_MIN || high > INT64_MAX) return std::nullopt;
    return Range{static_cast<int64_t>(low), static_cast<int64_t>(high)};
  }

  // After an instruction: the ranges of the registers it wrote.
  void NoteRanges(const Instr& in) {
    RegisterSet reads, writes;
    RegistersOf(fn_, in, &reads, &writes);
    std::optional<Range> result;
    bool nonzero_float = false;
    switch (in.op) {
      // (Past the instruction the result is exact: an overflow left.)
      case Op::ADD_I: case Op::SUB_I: case Op::MUL_I: result = ArithmeticRange(in, true); break;
      case Op::MOVE_I: result = RangeOf(in.b); break;
      case Op::FLOORDIV_I:
      case Op::MOD_I:
        if (auto x = RangeOf(in.b); x && ConstantInRange(in.c, 1, INT64_MAX)) {
          const int64_t divisor = ConstantValueOf(in.c);
          auto floor_div = [&](int64_t v) { return v / divisor - (v % divisor < 0 ? 1 : 0); };
          if (in.op == Op::FLOORDIV_I) result = Range{floor_div(x->low), floor_div(x->high)};
          else if (x->low >= 0 && x->high < divisor) result = x;
          else result = Range{0, divisor - 1};
        }
        break;
      case Op::LEN_U: case Op::SHAPE_U: result = Range{0, INT64_MAX}; break;
      case Op::LOAD_I: result = ElementRange(fn_.registers[in.b].elem); break;
      case Op::I2F:
        if (auto x = RangeOf(in.b)) nonzero_float = x->low > 0 || x->high < 0;
        break;
      default: break;
    }
    // Floats that are >= 0 or NaN (never below 0): a square, abs, sqrt, and
    // sums, products and quotients of such. sqrt of one needs no domain
    // check (sqrt(NaN) is NaN in Python too): `sqrt(dx*dx + dy*dy + dz*dz)`.
    bool sign_free = false;
    auto free = [&](int reg) { return sign_free_floats_.count(reg) > 0; };
    switch (in.op) {
      case Op::MUL_F: sign_free = in.b == in.c || (free(in.b) && free(in.c)); break;
      case Op::ADD_F: case Op::DIV_F: sign_free = free(in.b) && free(in.c); break;
      case Op::MOVE_F: sign_free = free(in.b); break;
      case Op::ABS_F: case Op::SQRT_F: sign_free = true; break;
      default: break;
    }
    if (auto known = KnownResult(in)) result = Range{*known, *known};  // (a constant the code moved)
    for (int reg = 0; reg < fn_.num_registers(); ++reg) {
      if (!writes[reg]) continue;
      ranges_.erase(reg);
      nonzero_floats_.erase(reg);
      sign_free_floats_.erase(reg);
    }
    if (result && writes[in.a]) ranges_[in.a] = *result;
    if (nonzero_float) nonzero_floats_.insert(in.a);
    if (sign_free) sign_free_floats_.insert(in.a);
    if (in.op == Op::JLT_I || in.op == Op::JLE_I) NoteFallThrough(in);
  }

  // The values an int element of a narrow type holds.
  static std::optional<Range> ElementRange(ElemType elem) {
    switch (elem) {
      case ElemType::kI32: return Range{INT32_MIN, INT32_MAX};
      case ElemType::kU32: return Range{0, UINT32_MAX};
      case ElemType::kI16: return Range{INT16_MIN, INT16_MAX};
      case ElemType::kU16: return Range{0, UINT16_MAX};
      case ElemType::kI8: return Range{INT8_MIN, INT8_MAX};
      case ElemType::kU8: return Range{0, UINT8_MAX};
      case ElemType::kBool: return Range{0, 1};
      default: return std::nullopt;  // (i64, and u64, which leaves above INT64_MAX)
    }
  }

  // Past JLT_I x, y (or JLE_I) not taken, x >= y (x > y) holds: each bounds
  // the other. Even unknown ranges learn something: after `while i < n`'s
  // test, i < n <= 2**63 - 1, so `i += 1` cannot overflow.
  void NoteFallThrough(const Instr& in) {
    const Range full{INT64_MIN, INT64_MAX};
    Range x = RangeOf(in.a).value_or(full), y = RangeOf(in.b).value_or(full);
    const int64_t gap = in.op == Op::JLE_I ? 1 : 0;  // x >= y + gap
    if (gap && (y.low == INT64_MAX || x.high == INT64_MIN)) return;  // (never falls through)
    x.low = std::max(x.low, y.low + gap);
    y.high = std::min(y.high, x.high - gap);
    if (x.low > x.high || y.low > y.high) return;
    if (!immediate_[in.a]) ranges_[in.a] = x;
    if (!immediate_[in.b]) ranges_[in.b] = y;
  }

  // The back edge of a counted loop counting down (FORLOOP, step -1): R[A]
  // > R[B] >= INT64_MIN, so R[A] - 1 cannot overflow; when the loop ends the
  // counter steps back to its last value, as the interpreter's does (which
  // never stores the value past the end).
  void CountDown(CountedLoop& loop, int a, int bb) {
    Label end = b_.NewLabel();
    b_.AddImm(I(a), I(a), -1);
    if (loop.left.isValid()) {
      ChunkBackEdge(loop);
      BranchCompare(IntCond::kLe, a, bb, end);
      ChunkStart(loop, ExitAt(loop.header));  // a chunk ended before the loop did: ticks_ is 0
      b_.Jump(loop.body);
    } else {
      BranchCompare(IntCond::kLe, a, bb, end);
      BackEdge(loop.body, loop.header, &loop);
    }
    b_.Bind(end);
    b_.AddImm(I(a), I(a), 1);
  }

  // ---- Registers -----------------------------------------------------------------------

  Int FromSlot(int slot) {
    Int value = b_.NewInt();
    b_.LoadSlot(value, slot);
    return value;
  }

  // The analyses, a label per jump target, and a slot per register for its
  // virtual registers (made as the code needs them).
  void Prepare() {
    Analyze();
    const int n = static_cast<int>(fn_.code.size());
    labels_.resize(n);
    for (int pc = 0; pc < n; ++pc) {
      if (targets_[pc]) labels_[pc] = b_.NewLabel();
    }
    const int count = fn_.num_registers();
    immediate_.assign(count, std::nullopt);
    for (int reg = 0; reg < count; ++reg) immediate_[reg] = ConstantOf(reg);
    ints_.resize(count);
    floats_.resize(count);
    data_.resize(count);
    length_.resize(count);
    store_length_.resize(count);
    FindCounters();
  }

  // Counters that cannot overflow in any run: an int local (not a parameter,
  // no known value) that every instruction writing it either sets to a known
  // value within 2**61 or moves by one, always the same way (`words += 1`).
  // From a fresh frame's 0 or its least (greatest) known value, it gets
  // more than 2**62 away only after 2**62 of those increments (as many
  // instructions run: decades of a core's time), so its range is [least,
  // 2**61 + 2**62] ([-2**61 - 2**62, greatest]) wherever it is read, and
  // `+= 1` needs no overflow check (the tokenizer's three counts: one `jo`
  // per token). The interpreter runs the same instructions, so a value it
  // hands to machine code at a loop's entry keeps the bound too.
  static constexpr int64_t kCounterStart = int64_t{1} << 61;
  static constexpr int64_t kCounterBound = kCounterStart + (int64_t{1} << 62);  // (2**63 - 2**61)
  void FindCounters() {
    const int count = fn_.num_registers();
    std::vector<int64_t> least(count, 0), greatest(count, 0);  // (a fresh frame's registers are 0)
    std::vector<int> step(count, 0);  // +1, -1; 0: none seen yet
    std::vector<bool> excluded(count, false);
    for (int reg = 0; reg < count; ++reg) {
      excluded[reg] = reg < fn_.num_params() || KindOf(reg) != Kind::kInt || immediate_[reg].has_value();
    }
    for (const Instr& in : fn_.code) {
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      for (int reg = 0; reg < count; ++reg) {
        if (!writes[reg] || excluded[reg]) continue;
        std::optional<int64_t> value;
        if (in.op == Op::MOVE_I && in.a == reg) value = ConstantOf(in.b);
        if (value && *value >= -kCounterStart && *value <= kCounterStart) {
          least[reg] = std::min(least[reg], *value);
          greatest[reg] = std::max(greatest[reg], *value);
          continue;
        }
        int by = 0;
        if (in.op == Op::ADD_I && in.a == reg && (in.b == reg) != (in.c == reg)) {
          const std::optional<int64_t> k = ConstantOf(in.b == reg ? in.c : in.b);
          if (k && (*k == 1 || *k == -1)) by = static_cast<int>(*k);
        } else if (in.op == Op::SUB_I && in.a == reg && in.b == reg && in.c != reg) {
          const std::optional<int64_t> k = ConstantOf(in.c);
          if (k && (*k == 1 || *k == -1)) by = -static_cast<int>(*k);
        }
        if (by == 0 || (step[reg] != 0 && step[reg] != by)) {
          excluded[reg] = true;
          continue;
        }
        step[reg] = by;
      }
    }
    for (int reg = 0; reg < count; ++reg) {
      if (excluded[reg] || step[reg] == 0) continue;
      counter_ranges_[reg] = step[reg] > 0 ? Range{least[reg], kCounterBound} : Range{-kCounterBound, greatest[reg]};
    }
  }

  void LoadRegisters(const Int& regs) {
    const int count = fn_.num_registers();
    ticks_ = b_.NewInt();
    if (!fn_.loop_headers.empty()) b_.MovImm(ticks_, kBackEdgesPerCheck);  // (no loop reads it otherwise)
    // A scalar the code writes before any read, from every entry (the start
    // and the loop heads Dispatch enters at), needs no load: the result of
    // `return a + b`. (A while loop's bound is read at every entry, written
    // or not: FindLengthBoundedLoads.)
    RegisterSet at_entry = live_in_[0];
    for (int32_t pc : LoopEntries(fn_)) at_entry |= live_in_[pc];
    for (const auto& [bound, buffer] : length_bounds_) at_entry.set(bound);
    for (int reg = 0; reg < count; ++reg) {
      if (!used_[reg]) continue;
      int32_t slot = static_cast<int32_t>(reg * sizeof(Value));
      switch (KindOf(reg)) {
        case Kind::kInt:
          if (immediate_[reg]) break;  // (see I())
          ints_[reg] = b_.NewInt();
          if (at_entry[reg]) b_.LoadInt(ints_[reg], regs, slot);
          break;
        case Kind::kFloat:
          floats_[reg] = b_.NewFloat();
          if (at_entry[reg]) b_.LoadFloat(floats_[reg], regs, slot);
          break;
        case Kind::kBuffer:
          ints_[reg] = b_.NewInt();
          data_[reg] = b_.NewInt();
          length_[reg] = b_.NewInt();
          if (stored_[reg]) store_length_[reg] = b_.NewInt();
          b_.LoadInt(ints_[reg], regs, slot);
          LoadView(reg);
          break;
        case Kind::kObject: break;
      }
    }
    // The float constants of the callees it runs in place, set once here
    // rather than at every call (GenerateInline).
    for (const Instr& in : fn_.code) {
      if (in.op != Op::CALL_FN || !Covers(fn_, in)) continue;
      const FunctionCode& callee = *fn_.module->functions[in.d];
      if (!InlinableCallee(fn_, callee)) continue;
      for (int reg = callee.num_params(); reg < callee.num_registers(); ++reg) {
        if (!callee.IsConstantRegister(reg) || callee.registers[reg].kind != Kind::kFloat) continue;
        const uint64_t bits = callee.initial_constants[reg - callee.num_params()];
        if (float_constants_.count(bits)) continue;
        Float value = b_.NewFloat();
        b_.FloatFromBits(value, bits);
        float_constants_[bits] = value;
      }
    }
  }

  // A buffer register not assigned yet at this entry (a loop's copy of a
  // parameter) holds null: its fields read as empty until MOVE_U fills them.
  void LoadView(int reg) {
    Label unassigned = b_.NewLabel(), done = b_.NewLabel();
    b_.BranchIntImm(IntCond::kEq, ints_[reg], 0, unassigned);
    LoadViewFields(reg);
    b_.Jump(done);
    b_.Bind(unassigned);
    b_.MovImm(data_[reg], 0);
    b_.MovImm(length_[reg], 0);
    if (stored_[reg]) b_.MovImm(store_length_[reg], 0);
    b_.Bind(done);
  }

  void LoadViewFields(int reg) {
    b_.LoadInt(data_[reg], ints_[reg], static_cast<int32_t>(offsetof(BufferView, data)));
    b_.LoadInt(length_[reg], ints_[reg], static_cast<int32_t>(offsetof(BufferView, length)));
    if (!stored_[reg]) return;
    Label writable = b_.NewLabel();
    Int readonly = b_.NewInt();
    b_.Mov(store_length_[reg], length_[reg]);
    b_.LoadU8(readonly, ints_[reg], static_cast<int32_t>(offsetof(BufferView, readonly)));
    b_.BranchIntImm(IntCond::kEq, readonly, 0, writable);
    b_.MovImm(store_length_[reg], 0);
    b_.Bind(writable);
  }

  // After a typed call, which may have run Python code that resized or
  // re-pointed a torch tensor (RefreshTorchViews then moved its view): if any
  // view's data or length differs from the copies this code holds, the
  // interpreter resumes after the call, and the next entry loads the views
  // (and checks hoisted bounds) afresh.
  void LeaveIfViewsMoved() {
    std::set<std::string> buffers;
    for (int reg = 0; reg < fn_.num_registers() && note_guards_; ++reg) {
      if (used_[reg] && KindOf(reg) == Kind::kBuffer) buffers.insert(NameOf(reg));
    }
    if (!buffers.empty()) {
      NoteGuard(pc_, "the call leaves " + Listed(buffers) + " where " + (buffers.size() > 1 ? "they were" : "it was") +
                         " (a tensor it resized: the interpreter goes on after the call)");
    }
    Label exit = ExitAt(pc_ + 1);
    for (int reg = 0; reg < fn_.num_registers(); ++reg) {
      if (!used_[reg] || KindOf(reg) != Kind::kBuffer) continue;
      Label unassigned = b_.NewLabel();
      Int field = b_.NewInt();
      b_.BranchIntImm(IntCond::kEq, ints_[reg], 0, unassigned);
      b_.LoadInt(field, ints_[reg], static_cast<int32_t>(offsetof(BufferView, data)));
      b_.BranchInt(IntCond::kNe, field, data_[reg], exit);
      b_.LoadInt(field, ints_[reg], static_cast<int32_t>(offsetof(BufferView, length)));
      b_.BranchInt(IntCond::kNe, field, length_[reg], exit);
      b_.Bind(unassigned);
    }
  }

  void Dispatch() {
    // A length a while loop's test relies on may be stale (a tensor that
    // shrank while the interpreter ran): no entry then (FindLengthBoundedLoads).
    if (!length_bounds_.empty()) {
      Label fits = b_.NewLabel(), stale = b_.NewLabel();
      for (const auto& [bound, buffer] : length_bounds_) b_.BranchInt(IntCond::kGt, I(bound), length_[buffer], stale);
      b_.Jump(fits);
      b_.Bind(stale);
      b_.Return(entry_pc_);
      b_.Bind(fits);
    }
    std::vector<int32_t> entries = {0};
    std::vector<int32_t> loops = LoopEntries(fn_);
    entries.insert(entries.end(), loops.begin(), loops.end());
    // An entry at a loop nested in guarded counted loops skips their heads:
    // it runs their guards first (exiting where it entered if one fails).
    std::vector<std::pair<int32_t, Label>> nested;
    for (int32_t pc : entries) {
      if (unrolled_.count(pc)) continue;  // (no loop there: see UnrolledTrips)
      bool inside_guarded = false;
      for (const auto& [header, end] : loop_end_) inside_guarded |= header < pc && pc <= end;
      for (const auto& [header, loop] : while_loops_) inside_guarded |= loop.nested && header < pc && pc <= loop.end;
      if (!inside_guarded) {
        b_.BranchIntImm(IntCond::kEq, entry_pc_, pc, labels_[pc]);
        continue;
      }
      nested.emplace_back(pc, b_.NewLabel());
      b_.BranchIntImm(IntCond::kEq, entry_pc_, pc, nested.back().second);
    }
    // An entry that is not one: resume the interpreter where it asked to start.
    b_.Return(entry_pc_);
    for (const auto& [pc, label] : nested) {
      b_.Bind(label);
      pc_ = pc;
      for (auto& [header, loop] : counted_loops_) {  // by header: outer loops first
        if (header < pc && pc <= loop_end_.at(header)) EmitGuardChecks(loop);
      }
      // A chunked while loop around it: a chunk that ends at its next test,
      // which checks for signals and starts a whole one (FindNestedWhileChunks).
      for (auto& [header, loop] : while_loops_) {
        if (!loop.nested || header >= pc || pc > loop.end) continue;
        if (!loop.lim.isValid()) loop.lim = b_.NewInt();
        b_.Mov(loop.lim, I(loop.x));
      }
      b_.Jump(labels_[pc]);
    }
    pc_ = 0;
  }

  // A chain of equality tests (FindMembershipChains): above the greatest
  // constant (unsigned, so negative too) goes outside; else the mask's bit
  // says. Whichever place is next in the code is fallen into.
  void EmitMembershipChain(const MembershipChain& chain) {
    if (pending_element_.reg >= 0) LoadPendingElement();  // (as any instruction that is not its taker)
    const Int c = I(chain.c);
    b_.BranchIntImm(IntCond::kUgt, c, chain.greatest, labels_[chain.outside]);
    Int mask = b_.NewInt();
    b_.MovImm(mask, static_cast<int64_t>(chain.mask));
    if (chain.outside == chain.end + 1) {
      b_.BranchBit(mask, c, true, labels_[chain.inside]);
    } else {
      b_.BranchBit(mask, c, false, labels_[chain.outside]);
      if (chain.inside != chain.end + 1) b_.Jump(labels_[chain.inside]);
    }
  }

  // ---- Guards, in words (JitGuard) -------------------------------------------------------
  //
  // What `ppy dis --jit` and `ppy run --trace` list: each check the code
  // makes of an assumption rather than of the program's semantics, where it
  // is made and what its failure hands to the interpreter. (A side exit for
  // an overflow or an index out of range is the program's semantics: the
  // interpreter raises there. Those are not listed.)

  void NoteGuard(int pc, std::string what) {
    if (!note_guards_ || inline_) return;  // (every check of an inlined callee falls back to the call: the call's guard)
    for (const JitGuard& guard : guards_) {
      if (guard.pc == pc && guard.what == what) return;  // (an exit's path emitted twice)
    }
    guards_.push_back({pc, std::move(what)});
  }

  // A buffer register's name in guards' texts: a parameter's own, quoted,
  // also for a copy of one (the loop's copy of `for k in keys`, a call's
  // argument).
  std::string NameOf(int reg) const {
    int source = reg;
    for (const Instr& in : fn_.code) {
      if (in.op != Op::MOVE_U || in.a != reg) continue;
      if (source != reg && source != in.b) return "a local buffer";  // (copies of different ones)
      source = in.b;
    }
    return source < fn_.num_params() ? "'" + fn_.params[source].name + "'" : "a local buffer";
  }

  static std::string Listed(const std::set<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
    return text;
  }

  // What EmitGuardChecks checked at a counted loop's head. (Noted at the
  // closing FORLOOP_INC, whose line is the `for` statement's.)
  void NoteCountedLoopGuards(const CountedLoop& loop) {
    if (!note_guards_) return;
    const int line_pc = loop_end_.at(loop.header);
    std::set<std::string> buffers;
    for (const Access& access : loop.accesses) buffers.insert(NameOf(access.buffer));
    for (const AffineAccess& access : loop.affine) buffers.insert(NameOf(access.buffer));
    for (const AxisAccess& access : loop.axis_indexes) buffers.insert(NameOf(access.buffer));
    for (const FoldedAccess& access : loop.folded) buffers.insert(NameOf(access.buffer));
    for (const auto& access : loop.binned) buffers.insert(NameOf(access.buffer));
    for (int pc : loop.invariant_accesses) {
      int buffer = 0, base = -1, index = 0;
      bool store = false;
      FlatAccessOf(fn_.code[pc], &buffer, &base, &index, &store);
      buffers.insert(NameOf(buffer));
    }
    std::vector<std::string> parts;
    if (!buffers.empty()) {
      std::string part = "its indexes of " + Listed(buffers) + " stay inside " +
                         (buffers.size() > 1 ? "those buffers" : "the buffer") + " on every iteration";
      if (!loop.writable.empty()) part += " (and a buffer it stores into is writable)";
      parts.push_back(part);
    }
    if (!loop.nonzero_floats.empty() || !loop.nonzero_ints.empty()) {
      parts.push_back("the divisors it never changes are not zero");
    }
    if (!loop.exact_doubles.empty()) parts.push_back("the ints it compares with floats are exact as floats");
    if (!loop.sums.empty()) parts.push_back("its sums of bounded terms fit in 64 bits (at each chunk of iterations)");
    if (!parts.empty()) {
      std::string text = "the loop's head checks that ";
      for (size_t k = 0; k < parts.size(); ++k) text += (k ? "; that " : "") + parts[k];
      NoteGuard(line_pc, text + " (if not, the interpreter runs the loop)");
    }
    if (!loop.inline_callees.empty()) {
      std::set<std::string> names;
      for (int d : loop.inline_callees) names.insert(fn_.module->functions[d]->name);
      NoteGuard(line_pc, names.size() > 1 ? "the loop's head checks that the names " + Listed(names) +
                                                " still hold the functions it runs in place of their calls (if "
                                                "not, the interpreter runs the loop)"
                                          : "the loop's head checks that the name " + Listed(names) +
                                                " still holds the function it runs in place of its calls (if "
                                                "not, the interpreter runs the loop)");
    }
  }

  // What EmitWhileGuard checks at the head of the while loop at `header`.
  void NoteWhileLoopGuards(int header, const WhileLoop& loop) {
    if (!note_guards_) return;
    std::vector<std::string> parts;
    bool steps = false;
    for (int step : loop.steps) steps |= !immediate_[step] || *immediate_[step] >= 2;
    if (steps) parts.push_back("its counter's steps are positive and cannot take it past 64 bits");
    std::set<std::string> buffers;
    for (const auto& [buffer, store] : loop.bounds) buffers.insert(NameOf(buffer));
    if (!buffers.empty()) {
      parts.push_back("its indexes of " + Listed(buffers) + " stay inside " +
                      (buffers.size() > 1 ? "those buffers" : "the buffer") + " up to its limit");
    }
    if (parts.empty()) return;
    std::string text = "the loop's head checks that ";
    for (size_t k = 0; k < parts.size(); ++k) text += (k ? "; that " : "") + parts[k];
    NoteGuard(header, text + " (if not, the interpreter runs the loop)");
  }

  // ---- Inlined calls ---------------------------------------------------------------------

  // A typed call of `callee` (InlinableCallee), function index d, arguments in
  // B..B+count-1, result into A: the callee's instructions run here, on
  // virtual registers of their own, while the name the call looks up still
  // holds the callee. The guard compares the module's namespace version with
  // the one at which the name last held it (CallModuleFunction keeps that),
  // as the interpreter's direct call does; a rebound name, a first call, and
  // every exit of the inlined code jump to `call`, the real call. Nothing
  // before an exit had an effect (InlinableCallee): the call starts afresh.
  void EmitInlineCall(int d, const FunctionCode& callee, int first_arg, int result, const Label& done,
                      const Label& call) {
    if (InlineLoop(pc_)) {  // checked where the name may have changed (EmitInlineOk)
      CodeGen inner(b_, callee);
      inner.GenerateInline(*this, first_arg, result, done, call);
      return;
    }
    if (note_guards_) {
      NoteGuard(pc_, "the name " + callee.name + " still holds the function its call runs in place (if not, the "
                     "call is made)");
    }
    Int versions = b_.NewInt(), word = b_.NewInt(), now = b_.NewInt(), bound = b_.NewInt();
    b_.LoadInt(versions, FromSlot(context_slot_), static_cast<int32_t>(offsetof(JitCallContext, versions)));
    b_.LoadInt(word, versions, static_cast<int32_t>(offsetof(ModuleVersions, globals)));
    b_.BranchIntImm(IntCond::kEq, word, 0, call);
    b_.LoadInt(now, word, 0);
    b_.LoadInt(bound, versions, static_cast<int32_t>(offsetof(ModuleVersions, bound)));
    b_.LoadInt(bound, bound, static_cast<int32_t>(d * sizeof(const uint64_t*)));
    b_.LoadInt(bound, bound, 0);
    b_.BranchInt(IntCond::kNe, now, bound, call);
    EmitBoundCodeCheck(versions, d, call);
    CodeGen inner(b_, callee);
    inner.GenerateInline(*this, first_arg, result, done, call);
  }

  // The body of an inlined call: parameters copied from the caller's
  // argument registers, constants as immediates, every other register the
  // code reads before writing (none, in code the compiler made) zero as in
  // a fresh frame; then the instructions in order, and the out-of-line
  // pieces after them.
  void GenerateInline(CodeGen& caller, int first_arg, int result, const Label& done, const Label& call) {
    inline_ = true;
    inline_fallback_ = call;
    inline_done_ = done;
    if (ppy::KindOf(fn_.result) == Kind::kFloat) inline_result_float_ = caller.F(result);
    else inline_result_int_ = caller.I(result);
    context_slot_ = caller.context_slot_;
    Prepare();
    const int n = static_cast<int>(fn_.code.size());
    const int count = fn_.num_registers();
    for (int reg = 0; reg < count; ++reg) {
      if (!used_[reg] || immediate_[reg]) continue;
      const bool is_float = KindOf(reg) == Kind::kFloat;
      if (is_float) floats_[reg] = b_.NewFloat();
      else ints_[reg] = b_.NewInt();
      uint64_t bits = 0;
      if (reg < fn_.num_params()) {
        // A parameter the callee never writes is the caller's argument
        // register itself, which nothing here writes either: no copy.
        const bool written = WrittenIn(reg, 0, n - 1);
        if (is_float) {
          if (written) b_.Mov(floats_[reg], caller.F(caller.Argument(first_arg + reg)));
          else floats_[reg] = caller.F(caller.Argument(first_arg + reg));
        } else if (const int arg = caller.Argument(first_arg + reg); !written && caller.OffsetOf(arg) != 0) {
          ints_[reg] = caller.ints_[arg];  // (the argument's offset stays pending: OffsetOf)
          param_offsets_[reg] = caller.OffsetOf(arg);
        } else {
          if (written) b_.Mov(ints_[reg], caller.I(arg));
          else ints_[reg] = caller.I(arg);
        }
        auto range = caller.RangeOf(caller.Argument(first_arg + reg));
        if (range && !written) stable_ranges_[reg] = *range;
        continue;
      }
      if (fn_.IsConstantRegister(reg)) {
        bits = fn_.initial_constants[reg - fn_.num_params()];
        auto held = caller.float_constants_.find(bits);
        if (is_float && held != caller.float_constants_.end() && !WrittenIn(reg, 0, n - 1)) {
          floats_[reg] = held->second;  // (LoadRegisters)
          continue;
        }
      } else if (!live_in_[0][reg]) {
        continue;
      }
      if (is_float) b_.FloatFromBits(floats_[reg], bits);
      else b_.MovImm(ints_[reg], static_cast<int64_t>(bits));
    }
    // The float register every return returns (`return 1.0 / d`) is the
    // caller's result register itself: no copy at the return. Not when an
    // argument is that register (`acc = f(acc)`: writing it would clobber
    // the parameter), nor for a parameter, a constant or one read first.
    int returned = -1;
    for (const Instr& in : fn_.code) {
      if (in.op == Op::RET_F) returned = (returned == -1 || returned == in.a) ? in.a : -2;
    }
    if (returned >= fn_.num_params() && !fn_.IsConstantRegister(returned) && !live_in_[0][returned]) {
      bool clobbers = false;
      for (int param = 0; param < fn_.num_params(); ++param) {
        if (KindOf(param) == Kind::kFloat) clobbers |= floats_[param].id() == inline_result_float_.id();
      }
      if (!clobbers) floats_[returned] = inline_result_float_;
    }
    for (pc_ = 0; pc_ < n; ++pc_) {
      if (targets_[pc_]) b_.Bind(labels_[pc_]);
      Instruction(fn_.code[pc_]);
    }
    if (falls_into_done_) return;  // (see FallsIntoDone)
    b_.Jump(inline_fallback_);  // (code ends in a return or a raise)
    for (const auto& emit : cold_) emit();
  }

  // Whether the inlined callee's return at the current pc can end the code
  // without a jump: it is the last instruction, and nothing follows it (no
  // out-of-line pieces), so the caller's `done` is bound right after.
  bool FallsIntoDone() const {
    return inline_ && pc_ + 1 == static_cast<int>(fn_.code.size()) && cold_.empty() &&
           (fn_.code[pc_].op == Op::RET_I || fn_.code[pc_].op == Op::RET_F);
  }

  // Whether the MOVE_I or MOVE_F at pc fills an argument register of a
  // CALL_FN that runs its callee in place, which can then read the source
  // register itself: the moves of the call's arguments follow each other up
  // to the call (no jump lands in between, and none writes another's
  // source), and nothing reads the argument register after the call. The
  // move waits in deferred_ for the real call, out of line, which makes it.
  bool DeferArgument(int pc) {
    const int n = static_cast<int>(fn_.code.size());
    const Instr& move = fn_.code[pc];
    int call = pc + 1;
    auto is_move = [](Op op) { return op == Op::MOVE_I || op == Op::MOVE_F; };
    while (call < n && !targets_[call] && is_move(fn_.code[call].op) && fn_.code[call].a != move.b &&
           fn_.code[call].b != move.a) {
      ++call;
    }
    if (call >= n || targets_[call] || fn_.code[call].op != Op::CALL_FN || inline_) return false;
    const Instr& in = fn_.code[call];
    if (!Covers(fn_, in) || !InlinableCallee(fn_, *fn_.module->functions[in.d])) return false;
    if (move.a < in.b || move.a >= in.b + in.c || move.a == in.a || move.b == move.a) return false;
    if (call + 1 < n && live_in_[call + 1][move.a]) return false;
    deferred_[move.a] = move.b;
    return true;
  }

  // The register holding argument register `reg`'s value at a call: the
  // source of its deferred move, or itself.
  int Argument(int reg) const {
    auto it = deferred_.find(reg);
    return it != deferred_.end() ? it->second : reg;
  }

  // CALL_FN A, B, C, D made for real: the interpreter's typed call of
  // function D (call_typed). The arguments are the frame's own registers
  // B..B+C-1 and the result its register A: storing their current values
  // there is what a side exit would do anyway. Then what the call may have
  // changed: views, and the names inlined callees rely on.
  void EmitTypedCall(const FunctionCode& callee, int a, int bb, int c, int d) {
    Int regs = FromSlot(regs_slot_);
    for (int i = 0; i < c; ++i) {
      int reg = bb + i;
      int32_t slot = static_cast<int32_t>(reg * sizeof(Value));
      if (KindOf(reg) == Kind::kFloat) b_.StoreFloat(F(reg), regs, slot);
      else b_.StoreInt(I(reg), regs, slot);
    }
    Int caller = b_.NewInt(), index = b_.NewInt(), args = b_.NewInt(), result = b_.NewInt();
    b_.LoadInt(caller, FromSlot(context_slot_), static_cast<int32_t>(offsetof(JitCallContext, function)));
    b_.MovImm(index, d);
    b_.AddImm(args, regs, static_cast<int32_t>(bb * sizeof(Value)));
    b_.AddImm(result, regs, static_cast<int32_t>(a * sizeof(Value)));
    Int ok = b_.CallIntHelper(Helpers(), HelperOffset(offsetof(JitHelpers, call_typed)), {caller, index, args, result});
    b_.BranchIntImm(IntCond::kEq, ok, 0, ErrorExit());
    Int frame = FromSlot(regs_slot_);
    int32_t slot = static_cast<int32_t>(a * sizeof(Value));
    if (ppy::KindOf(callee.result) == Kind::kFloat) b_.LoadFloat(F(a), frame, slot);
    else b_.LoadInt(I(a), frame, slot);
    LeaveIfViewsMoved();
    for (auto& [header, loop] : counted_loops_) {  // the call ran Python code
      if (header <= pc_ && pc_ < loop_end_.at(header)) EmitInlineOk(loop, ExitAt(pc_ + 1));
    }
  }

  // The virtual register of int register `reg`. One whose value the code
  // knows (a constant no instruction writes, or a value specialization's
  // parameter) has none for the whole function: each use gets a fresh one set
  // to the value, which the allocator keeps only as long as that use needs
  // it, so that loops keep their registers for what changes. (Instructions
  // that take an immediate ask Immediate() first.)
  //
  // A register whose value is its virtual register plus a constant
  // (OffsetOf: a partially unrolled copy's counter, an inlined callee's
  // parameter given it) gets a fresh register set to that at each use;
  // an unchecked add folds the constant instead (EmitArithmetic).
  Int I(int reg) const {
    if (const int32_t offset = OffsetOf(reg); offset != 0) {
      Int value = b_.NewInt();
      b_.AddImm(value, ints_[reg], offset);
      return value;
    }
    if (!immediate_[reg]) return ints_[reg];
    Int value = b_.NewInt();
    b_.MovImm(value, *immediate_[reg]);
    return value;
  }

  // What an int register's value is past its virtual register's: in a
  // partially unrolled copy the counter's trip (EmitPartialPass), in an
  // inlined callee a parameter's argument's (GenerateInline).
  int32_t OffsetOf(int reg) const {
    if (copy_.partial && reg == copy_.counter) return static_cast<int32_t>(copy_.trip);
    auto it = param_offsets_.find(reg);
    return it != param_offsets_.end() ? it->second : 0;
  }

  // The value of an int register the code knows here (see I(); or one this
  // block computed from known values, KnownResult), if it fits the 32-bit
  // immediate of an add or a compare.
  std::optional<int32_t> Immediate(int reg) const {
    std::optional<int64_t> value = immediate_[reg];
    if (!value) {
      if (auto range = ranges_.find(reg); range != ranges_.end() && range->second.low == range->second.high) {
        value = range->second.low;
      }
    }
    if (!value || *value < INT32_MIN || *value > INT32_MAX) return std::nullopt;
    return static_cast<int32_t>(*value);
  }
  const Float& F(int reg) const { return floats_[reg]; }

  // The side exit that resumes the interpreter at the current instruction.
  Label Exit() { return ExitAt(pc_); }

  Label ExitAt(int pc) {
    if (inline_) return inline_fallback_;
    auto it = exits_.find({pc, copy_});
    if (it != exits_.end()) return it->second;
    Label label = b_.NewLabel();
    exits_[{pc, copy_}] = label;
    return label;
  }

  // The exit for an exception already set (a signal, a failed call) at this pc.
  Label ErrorExit() {
    if (inline_) return inline_fallback_;
    auto it = error_exits_.find({pc_, copy_});
    if (it != error_exits_.end()) return it->second;
    Label label = b_.NewLabel();
    error_exits_[{pc_, copy_}] = label;
    return label;
  }

  // (An exit in an unrolled copy stores that copy's counter: see EnterCopy.)
  void EmitExits() {
    for (const auto& emit : cold_) emit();
    for (const auto& [key, label] : exits_) {
      const auto& [pc, copy] = key;
      EnterCopy(copy);
      b_.Bind(label);
      StoreLiveRegisters(pc);
      b_.ReturnImm(pc);
    }
    for (const auto& [key, label] : error_exits_) {
      const auto& [pc, copy] = key;
      EnterCopy(copy);
      b_.Bind(label);
      // A typed call's error may be a grown int its caller keeps (see
      // RaiseGrownInt): the interpreter then goes on from the next
      // instruction, with the frame's registers as they are here.
      if (fn_.code[pc].op == Op::CALL_FN) StoreLiveRegisters(pc);
      b_.ReturnImm(JitErrorAt(pc));
    }
    EnterCopy({});
  }

  // Stores the registers live at `pc` that machine code has written into the
  // frame, which is what the interpreter reads when it resumes there.
  void StoreLiveRegisters(int pc) {
    Int regs = FromSlot(regs_slot_);
    RegisterSet store = live_in_[pc] & written_;
    for (int reg = 0; reg < fn_.num_registers(); ++reg) {
      if (!store[reg]) continue;
      int32_t slot = static_cast<int32_t>(reg * sizeof(Value));
      switch (KindOf(reg)) {
        case Kind::kInt: b_.StoreInt(I(reg), regs, slot); break;  // (an unrolled copy's counter is known)
        case Kind::kBuffer: b_.StoreInt(ints_[reg], regs, slot); break;
        case Kind::kFloat: b_.StoreFloat(floats_[reg], regs, slot); break;
        case Kind::kObject: break;
      }
    }
  }

  // ---- Shared pieces ---------------------------------------------------------------------

  // A back edge to `target`, checking for signals every few thousand; a
  // handler may rebind a name, so `loop`'s inlined callees are checked again.
  // (A chunked loop around this one may have charged every tick left: the
  // count then goes below 0, which checks at once.)
  void BackEdge(const Label& target, int header, CountedLoop* loop = nullptr) {
    b_.DecrementAndBranchPositive(ticks_, target);
    const Label resume = ExitAt(header);
    CheckSignals(&resume);
    if (loop) EmitInlineOk(*loop, ExitAt(loop->header));
    b_.Jump(target);
  }

  // Ctrl-C: a pending signal leaves through the error exit; the ticks
  // restart. `resume` (null where there is none) is where the interpreter
  // takes over when the helper says the code must leave for a GIL switch
  // (JitHelpers::check_signals): the loop's head, the registers stored as
  // there. Not from an inlined callee, whose exits redo the call.
  void CheckSignals(const Label* resume) {
    const bool may_leave = resume != nullptr && !inline_;
    Int leave = b_.NewInt();
    b_.MovImm(leave, may_leave ? 1 : 0);
    Int pending = b_.CallIntHelper(Helpers(), HelperOffset(offsetof(JitHelpers, check_signals)), {leave});
    if (may_leave) b_.BranchIntImm(IntCond::kEq, pending, 2, *resume);
    b_.BranchIntImm(IntCond::kNe, pending, 0, ErrorExit());
    b_.MovImm(ticks_, kBackEdgesPerCheck);
  }

  // Leaves for the interpreter unless object register `reg` holds null (an
  // unboxed version's instruction that would release what it holds).
  void ExitUnlessNull(int reg) {
    Int regs = FromSlot(regs_slot_);
    Int object = b_.NewInt();
    b_.LoadInt(object, regs, static_cast<int32_t>(reg * sizeof(Value)));
    b_.BranchIntImm(IntCond::kNe, object, 0, Exit());
  }

  // The item R[seq][R[index]] of an unboxed version's list or tuple read, in
  // a fresh register: R[seq] an exact list or tuple, the index inside it
  // (negative from the end), the item exactly of `item_type`; anything else
  // jumps to `exit`. A list's items are behind its ob_item pointer, a
  // tuple's inside the object; both keep their length in ob_size. It reads
  // the objects and takes no reference (unboxed code runs with the GIL held,
  // and nothing here runs Python code).
  Int SequenceItemOrExit(int seq, int index_reg, PyTypeObject* item_type, const Label& exit) {
    Int object = b_.NewInt(), type = b_.NewInt(), expected = b_.NewInt(), items = b_.NewInt();
    b_.LoadInt(object, FromSlot(regs_slot_), static_cast<int32_t>(seq * sizeof(Value)));
    b_.LoadInt(type, object, static_cast<int32_t>(offsetof(PyObject, ob_type)));
    const Label list = b_.NewLabel(), have_items = b_.NewLabel();
    b_.MovImm(expected, reinterpret_cast<int64_t>(&PyList_Type));
    b_.BranchInt(IntCond::kEq, type, expected, list);
    b_.MovImm(expected, reinterpret_cast<int64_t>(&PyTuple_Type));
    b_.BranchInt(IntCond::kNe, type, expected, exit);
    b_.AddImm(items, object, static_cast<int32_t>(offsetof(PyTupleObject, ob_item)));
    b_.Jump(have_items);
    b_.Bind(list);
    b_.LoadInt(items, object, static_cast<int32_t>(offsetof(PyListObject, ob_item)));
    b_.Bind(have_items);
    Int length = b_.NewInt(), index = b_.NewInt();
    b_.LoadInt(length, object, static_cast<int32_t>(offsetof(PyVarObject, ob_size)));
    b_.Mov(index, I(index_reg));
    const Label counted = b_.NewLabel();
    b_.BranchIntImm(IntCond::kGe, index, 0, counted);
    b_.Add(index, index, length);
    b_.Bind(counted);
    b_.BranchInt(IntCond::kUge, index, length, exit);  // (and below 0)
    Int item = b_.NewInt();
    b_.LoadElement(ElemType::kI64, item, items, index, 0);
    ExitUnlessType(item, item_type, exit);
    return item;
  }

  // Jumps to `exit` unless `object`'s type is exactly `type`.
  void ExitUnlessType(const Int& object, PyTypeObject* type, const Label& exit) {
    Int actual = b_.NewInt(), expected = b_.NewInt();
    b_.LoadInt(actual, object, static_cast<int32_t>(offsetof(PyObject, ob_type)));
    b_.MovImm(expected, reinterpret_cast<int64_t>(type));
    b_.BranchInt(IntCond::kNe, actual, expected, exit);
  }

  // The object in object register `reg`, in a fresh register, if it is
  // exactly of `type`; else jumps to `exit`.
  Int ObjectOfTypeOrExit(int reg, PyTypeObject* type, const Label& exit) {
    Int regs = FromSlot(regs_slot_);
    Int object = b_.NewInt();
    b_.LoadInt(object, regs, static_cast<int32_t>(reg * sizeof(Value)));
    ExitUnlessType(object, type, exit);
    return object;
  }

  // The value of `object`, an exact int, into `dst`, if it has at most two
  // 30-bit digits (within 2**60, which covers the ints programs keep in
  // lists); a wider one jumps to `exit`. The digits are read as each
  // CPython lays them out: `ob_size` on 3.11, `lv_tag` from 3.12.
  void ReadListInt(const Int& dst, const Int& object, const Label& exit) {
    Int low = b_.NewInt(), high = b_.NewInt(), zero = b_.NewInt(), size = b_.NewInt();
    const Label two_digits = b_.NewLabel(), positive = b_.NewLabel(), done = b_.NewLabel();
    b_.MovImm(zero, 0);
#if PY_VERSION_HEX >= 0x030C0000
    // lv_tag: the digit count above 3 bits, the sign below (0 positive,
    // 1 zero, 2 negative); one digit at most below 2 << 3.
    constexpr int32_t kDigits = offsetof(PyLongObject, long_value.ob_digit);
    Int tag = b_.NewInt(), sign = b_.NewInt();
    b_.LoadInt(tag, object, static_cast<int32_t>(offsetof(PyLongObject, long_value.lv_tag)));
    b_.LoadElement(ElemType::kU32, low, object, zero, kDigits);
    b_.BranchIntImm(IntCond::kUge, tag, 2 << 3, two_digits);
    b_.AndImm(size, tag, 3);
    b_.MovImm(sign, 1);
    b_.Sub(sign, sign, size);
    b_.Mul(dst, sign, low);
    b_.Jump(done);
    b_.Bind(two_digits);
    b_.SarImm(size, tag, 3);
    b_.BranchIntImm(IntCond::kNe, size, 2, exit);
    b_.AndImm(tag, tag, 3);  // (0: positive)
#else
    // ob_size: the digit count, negative for a negative int.
    constexpr int32_t kDigits = offsetof(PyLongObject, ob_digit);
    Int biased = b_.NewInt(), tag = b_.NewInt();
    b_.LoadInt(size, object, static_cast<int32_t>(offsetof(PyVarObject, ob_size)));
    b_.LoadElement(ElemType::kU32, low, object, zero, kDigits);
    b_.AddImm(biased, size, 1);
    b_.BranchIntImm(IntCond::kUgt, biased, 2, two_digits);
    b_.Mul(dst, size, low);
    b_.Jump(done);
    b_.Bind(two_digits);
    b_.AddImm(biased, size, 2);
    b_.BranchIntImm(IntCond::kUgt, biased, 4, exit);  // (-2 or 2 here)
    b_.SarImm(tag, size, 63);  // (0: positive)
#endif
    b_.LoadElement(ElemType::kU32, high, object, zero, kDigits + 4);
    b_.MulImm(high, high, int32_t{1} << 30);
    b_.Add(high, high, low);
    b_.BranchIntImm(IntCond::kEq, tag, 0, positive);
    b_.Neg(high, high);
    b_.Bind(positive);
    b_.Mov(dst, high);
    b_.Bind(done);
  }

  // CPython's list iterator (listobject.c's listiterobject; pycore_list.h's
  // _PyListIterObject from 3.12): the same on 3.11 to 3.13.
  struct ListIterator {
    PyObject_HEAD
    Py_ssize_t it_index;
    PyListObject* it_seq;  // null once exhausted
  };
  struct ListIteratorNext {
    Int iterator, index, item;
  };

  // The next item of the list iterator in object register `iter`, in fresh
  // registers, not taken yet: R[iter] exactly a list iterator with an item
  // left, the item exactly of `item_type` (any, for null); anything else
  // jumps to `exit`.
  // AdvanceListIterator takes it once nothing can exit any more. As
  // SequenceItemOrExit, it takes no reference.
  ListIteratorNext ListIteratorNextOrExit(int iter, PyTypeObject* item_type, const Label& exit) {
    Int iterator = ObjectOfTypeOrExit(iter, &PyListIter_Type, exit);
    Int list = b_.NewInt(), index = b_.NewInt(), length = b_.NewInt();
    b_.LoadInt(list, iterator, static_cast<int32_t>(offsetof(ListIterator, it_seq)));
    b_.BranchIntImm(IntCond::kEq, list, 0, exit);
    b_.LoadInt(index, iterator, static_cast<int32_t>(offsetof(ListIterator, it_index)));
    b_.LoadInt(length, list, static_cast<int32_t>(offsetof(PyVarObject, ob_size)));
    b_.BranchInt(IntCond::kUge, index, length, exit);
    Int items = b_.NewInt(), item = b_.NewInt();
    b_.LoadInt(items, list, static_cast<int32_t>(offsetof(PyListObject, ob_item)));
    b_.LoadElement(ElemType::kI64, item, items, index, 0);
    if (item_type != nullptr) ExitUnlessType(item, item_type, exit);
    return {iterator, index, item};
  }

  // Object register moves (MOVE_O, FOR_ITER_L), in two steps so that
  // nothing has changed when one leaves. First: the object R[reg] holds, in a
  // fresh register, unless releasing it would free it (its last reference:
  // its destructor could run any code), which jumps to `exit`.
  Int ReleasableObjectOrExit(int reg, const Label& exit) {
    Int old = b_.NewInt();
    b_.LoadInt(old, FromSlot(regs_slot_), static_cast<int32_t>(reg * sizeof(Value)));
    const Label unset = b_.NewLabel();
    b_.BranchIntImm(IntCond::kEq, old, 0, unset);
    Int count = b_.NewInt();
    b_.LoadInt(count, old, static_cast<int32_t>(offsetof(PyObject, ob_refcnt)));
    b_.BranchIntImm(IntCond::kEq, count, 1, exit);
    b_.Bind(unset);
    return old;
  }

  // Then: R[reg] := `object` (null for an unset register where
  // `may_be_null`), a new reference, and `old` (ReleasableObjectOrExit)
  // released, as the interpreter's SetObject does.
  void ReplaceObject(int reg, const Int& old, const Int& object, bool may_be_null) {
    const Label no_new = b_.NewLabel(), no_old = b_.NewLabel();
    if (may_be_null) b_.BranchIntImm(IntCond::kEq, object, 0, no_new);
    AddToReferenceCount(object, 1, no_new);
    b_.Bind(no_new);
    b_.BranchIntImm(IntCond::kEq, old, 0, no_old);
    AddToReferenceCount(old, -1, no_old);
    b_.Bind(no_old);
    b_.StoreInt(object, FromSlot(regs_slot_), static_cast<int32_t>(reg * sizeof(Value)));
  }

  // object->ob_refcnt += delta, as Py_INCREF and Py_DECREF change it (never
  // to 0 here); from 3.12 an immortal object's count (negative as an int32)
  // stays as it is: jumps to `done`.
  void AddToReferenceCount(const Int& object, int32_t delta, const Label& done) {
    constexpr int32_t kCount = static_cast<int32_t>(offsetof(PyObject, ob_refcnt));
#if PY_VERSION_HEX >= 0x030C0000
    Int low = b_.NewInt(), zero = b_.NewInt();
    b_.MovImm(zero, 0);
    b_.LoadElement(ElemType::kI32, low, object, zero, kCount);
    b_.BranchIntImm(IntCond::kLt, low, 0, done);
#else
    (void)done;
#endif
    Int count = b_.NewInt();
    b_.LoadInt(count, object, kCount);
    b_.AddImm(count, count, delta);
    b_.StoreInt(count, object, kCount);
  }

  void AdvanceListIterator(const ListIteratorNext& next) {
    b_.AddImm(next.index, next.index, 1);
    b_.StoreInt(next.index, next.iterator, static_cast<int32_t>(offsetof(ListIterator, it_index)));
  }

  // Exits unless `value` converts to a double exactly (|value| <= 2**53).
  void RequireExactDouble(const Int& value) {
    Int shifted = b_.NewInt();
    Int bias = b_.NewInt();
    b_.MovImm(bias, int64_t{1} << 53);
    b_.Add(shifted, value, bias);
    b_.BranchIntImm(IntCond::kUgt, shifted, int64_t{1} << 54, Exit());
  }

  // The int register `reg` as a double, exiting unless it converts exactly; a
  // counted loop that never changes it converted it once at its entry.
  Float ExactDouble(int reg) {
    auto cached = converted_.find(reg);
    if (cached != converted_.end() && InGuardedLoop(reg)) return cached->second;
    if (immediate_[reg] && *immediate_[reg] >= -(int64_t{1} << 53) && *immediate_[reg] <= int64_t{1} << 53) {
      return FloatOf(static_cast<double>(*immediate_[reg]));
    }
    if (auto range = RangeOf(reg); range && range->low >= -(int64_t{1} << 53) && range->high <= int64_t{1} << 53) {
      Float converted = b_.NewFloat();  // exact: no check
      b_.IntToFloat(converted, I(reg));
      return converted;
    }
    RequireExactDouble(I(reg));
    Float converted = b_.NewFloat();
    b_.IntToFloat(converted, I(reg));
    return converted;
  }

  // Whether the current pc is inside a counted loop whose guard converted `reg`.
  bool InGuardedLoop(int reg) const {
    for (const auto& [header, loop] : counted_loops_) {
      if (pc_ < header || pc_ >= loop_end_.at(header)) continue;
      if (std::find(loop.exact_doubles.begin(), loop.exact_doubles.end(), reg) != loop.exact_doubles.end()) return true;
    }
    return false;
  }

  // The helper table, read from the context where a call needs it so that no
  // register holds it across a loop.
  Int Helpers() {
    Int table = b_.NewInt();
    b_.LoadInt(table, FromSlot(context_slot_), static_cast<int32_t>(offsetof(JitCallContext, helpers)));
    return table;
  }

  Float FloatOf(double value) {
    Float f = b_.NewFloat();
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    b_.FloatFromBits(f, bits);
    return f;
  }

  Float Zero() {
    Float zero = b_.NewFloat();
    b_.FloatFromBits(zero, 0);
    return zero;
  }

  // Exits unless `value` is finite.
  void RequireFinite(const Float& value) {
    Float difference = b_.NewFloat();
    b_.FSub(difference, value, value);  // NaN for NaN and the infinities
    b_.BranchFloat(FloatCond::kNe, difference, Zero(), Exit());
  }

  // Python's index rules: a negative index counts from the end; outside exits.
  // One unsigned comparison covers the usual case, an index in [0, bound), and
  // falls through; a negative index is moved up by the length and compared
  // again out of line (see Cold()). `store` checks against the store length (0
  // for a read-only buffer). Only for a checked access: one its loop's guard
  // proved takes its index from IndexRegister or SumIndex unchecked.
  // An index outside leaves through the exit at `exit_pc` (default: this pc);
  // `in_place` normalizes the index in its own register, undone before an exit.
  Int Index(int buffer, const Int& index, bool store = false, int exit_pc = -1, bool in_place = false) {
    auto [bound, length] = IndexBounds(buffer, store);
    return Normalized(index, bound, length, ExitAt(exit_pc < 0 ? pc_ : exit_pc), in_place);
  }

  // What an index into `buffer` at this pc is checked against: the bound (the
  // store length for a store) and the length a negative index is moved up by;
  // a loop's own copies where its guard made them (LocalLoop).
  std::pair<Int, Int> IndexBounds(int buffer, bool store) const {
    Int length = length_[buffer], store_length = stored_[buffer] ? store_length_[buffer] : Int();
    if (const CountedLoop* loop = LocalLoop(pc_)) std::tie(length, store_length) = loop->lengths.at(buffer);
    return {store ? store_length : length, length};
  }

  // `index` checked against [0, bound) after Python's rule for negatives
  // (moved up by `length`), as Index and AxisIndex need it: one unsigned
  // comparison in line, the negative case out of line, `exit` if outside.
  Int Normalized(const Int& index, const Int& bound, const Int& length, const Label& exit, bool in_place) {
    Int normalized = index;
    if (!in_place) {
      normalized = b_.NewInt();
      b_.Mov(normalized, index);
    }
    Label outside = b_.NewLabel(), inside = b_.NewLabel();
    b_.BranchInt(IntCond::kUge, normalized, bound, outside);
    b_.Bind(inside);
    Cold([=, this] {
      b_.Bind(outside);
      b_.BranchIntImm(IntCond::kGe, normalized, 0, exit);
      b_.Add(normalized, normalized, length);
      b_.BranchInt(IntCond::kUlt, normalized, bound, inside);
      if (in_place) b_.Sub(normalized, normalized, length);
      b_.Jump(exit);
    });
    return normalized;
  }

  // The guard-computed result of a hoisted INDEX_U at pc, or null.
  const Int* HoistedIndex(int pc) {
    for (auto& [header, loop] : counted_loops_) {
      auto found = loop.hoisted.find(pc);
      if (found != loop.hoisted.end()) return &found->second;
    }
    return nullptr;
  }

  static int32_t ViewField(size_t field, int axis) { return static_cast<int32_t>(field + sizeof(int64_t) * axis); }

  // An index along an axis of `size` elements, Python's way (see Index);
  // outside leaves for the interpreter, which raises the exporter's IndexError.
  Int AxisIndex(const Int& size, const Int& index) { return Normalized(index, size, size, Exit(), false); }

  // The element offset R[reg] of an N-d access must lie in the view (see
  // BufferView::low). An offset that only INDEX_U sums of distinct axes of
  // this very view made, in this block, does by construction: no check.
  void CheckOffset(int buffer, int reg) {
    if (OffsetFromIndexes(buffer, reg, pc_)) return;
    Int bound = b_.NewInt();
    b_.LoadInt(bound, ints_[buffer], static_cast<int32_t>(offsetof(BufferView, low)));
    b_.BranchInt(IntCond::kLt, I(reg), bound, Exit());
    b_.LoadInt(bound, ints_[buffer], static_cast<int32_t>(offsetof(BufferView, high)));
    b_.BranchInt(IntCond::kGt, I(reg), bound, Exit());
  }

  // Whether R[reg] at `use` is a sum of INDEX_U results of `buffer`, one per
  // axis at most, each computed in the same block with neither the buffer
  // register nor the partial sums written again before the use.
  bool OffsetFromIndexes(int buffer, int reg, int use) const {
    uint32_t axes = 0;
    int first = use;
    std::function<bool(int, int)> sum_of_indexes = [&](int r, int at) -> bool {
      for (int pc = at - 1; pc >= 0; --pc) {
        if (targets_[pc + 1]) return false;  // another path joins between
        const Instr& in = fn_.code[pc];
        RegisterSet reads, writes;
        RegistersOf(fn_, in, &reads, &writes);
        if (!writes[r]) continue;
        first = std::min(first, pc);
        if (in.op == Op::INDEX_U && in.a == r && in.b == buffer) {
          if (axes & (1u << in.c)) return false;
          axes |= 1u << in.c;
          return true;
        }
        if (in.op == Op::ADD_I && in.a == r && in.b != in.c) {
          return sum_of_indexes(in.b, pc) && sum_of_indexes(in.c, pc);
        }
        return false;
      }
      return false;
    };
    if (!sum_of_indexes(reg, use)) return false;
    return !WrittenIn(buffer, first, use - 1);
  }

  // The index of the access at pc_ where a loop's guard made it: a group's
  // register, its constant in the address (ElementOffset); an invariant
  // access's checked index; or the counter, for an access by a pointer
  // the guard set (Data() gives it: a strided access's, or a row pointer
  // data + base * size). Nothing for any other access.
  std::optional<Int> GuardedIndex() {
    if (auto grouped = grouped_offsets_.find(pc_); grouped != grouped_offsets_.end()) {
      sum_offset_ = {pc_, grouped->second.second};
      return grouped->second.first;
    }
    if (auto hoisted = hoisted_indexes_.find(pc_); hoisted != hoisted_indexes_.end()) return hoisted->second;
    if (auto strided = strided_.find(pc_); strided != strided_.end()) {
      return UncheckedIndex(counted_loops_.at(strided->second.first).counter);
    }
    if (auto based = access_base_.find(pc_); based != access_base_.end() && based->second >= 0) {
      return UncheckedIndex(counted_loops_.at(access_loop_.at(pc_)).counter);  // (never checked: FindCountedLoops)
    }
    return std::nullopt;
  }

  // buf[R[reg]]. An index nothing reads after this instruction is normalized
  // in place. An index `int(x)` computed just before, on a backend whose
  // truncation gives INT64_MIN (outside every buffer) for what int() rejects,
  // is checked only here: outside, the code leaves at the conversion, and the
  // interpreter runs both again.
  Int IndexRegister(int buffer, int reg, bool store = false) {
    if (auto index = GuardedIndex()) return *index;
    if (!checked_[pc_]) {  // (proved by a guard or a test: no check)
      auto folded = folded_offsets_.find(pc_);
      return UncheckedIndex(folded != folded_offsets_.end() ? folded->second.first : reg);
    }
    const Instr& in = fn_.code[pc_];
    bool value_is_index = store && in.c == reg;  // xs[i] = i, xs[i] += i
    // (Not in place for a register a common subexpression copies from: the
    // copy would read the normalized index.)
    bool in_place = !value_is_index && pc_ + 1 < static_cast<int>(fn_.code.size()) && !live_in_[pc_ + 1][reg] &&
                    !copied_from_.count(reg);
    return Index(buffer, I(reg), store, ConvertsForIndex(pc_ - 1) ? pc_ - 1 : -1, in_place);
  }

  // buf[R[reg]], with `emit` making the access at the index it is given. An
  // index read again after this instruction (or by it, as the value stored,
  // or by a common subexpression's copy) is checked in its own register, not
  // in a copy normalized in place (IndexRegister): the usual index, in
  // [0, bound), goes straight to the access; a negative one, out of line, is
  // moved up by the length into a register of its own and makes the access
  // there (at this pc, for its exits), then rejoins.
  void CheckedAccess(int buffer, int reg, bool store, const std::function<void(const Int&)>& emit) {
    const Instr& in = fn_.code[pc_];
    const bool shared = (store && in.c == reg) || copied_from_.count(reg) ||
                        (pc_ + 1 < static_cast<int>(fn_.code.size()) && live_in_[pc_ + 1][reg]);
    if (!checked_[pc_] || hoisted_indexes_.count(pc_) || !shared) {
      emit(IndexRegister(buffer, reg, store));
      return;
    }
    deferred_load_ = -1;  // (the element is read on two paths: into its register)
    const auto [bound, length] = IndexBounds(buffer, store);
    const Int index = I(reg);
    const Label exit = ExitAt(ConvertsForIndex(pc_ - 1) ? pc_ - 1 : pc_);
    const Label outside = b_.NewLabel(), done = b_.NewLabel();
    b_.BranchInt(IntCond::kUge, index, bound, outside);
    emit(index);
    b_.Bind(done);
    ColdAtThisPc([=, this] {
      b_.Bind(outside);
      b_.BranchIntImm(IntCond::kGe, index, 0, exit);
      Int moved = b_.NewInt();
      b_.Add(moved, index, length);
      b_.BranchInt(IntCond::kUge, moved, bound, exit);
      emit(moved);
      b_.Jump(done);
    });
  }

  // Whether pc is an F2I whose result only the next instruction's checked
  // index reads, on a backend that makes failed conversions INT64_MIN.
  bool ConvertsForIndex(int pc) const {
    if constexpr (!B::kTruncationGivesMinWhenInvalid) {
      return false;
    } else {
      const int n = static_cast<int>(fn_.code.size());
      if (pc < 0 || pc + 2 >= n || fn_.code[pc].op != Op::F2I || targets_[pc + 1] || !checked_[pc + 1]) return false;
      const Instr& use = fn_.code[pc + 1];
      int index = -1;
      switch (use.op) {
        case Op::LOAD_F64: case Op::LOAD_I64: case Op::LOAD_F: case Op::LOAD_I: index = use.c; break;
        case Op::STORE_F64: case Op::STORE_I64: case Op::STORE_F: case Op::STORE_I:
        case Op::ADDTO_F64: case Op::ADDTO_I64: index = use.b; break;
        default: return false;
      }
      const int reg = fn_.code[pc].a;
      RegisterSet reads, writes;
      RegistersOf(fn_, use, &reads, &writes);
      return index == reg && !live_in_[pc + 2][reg] && !writes[reg];
    }
  }

  // R[A] = R[B] +/- R[C] (A != C) straight into A's register. A side exit
  // hands the interpreter R[B] and R[C], so when A is B the cold path undoes
  // the wrapped result first (wrapping arithmetic undoes exactly).
  void AddOrSubInPlace(const Instr& in) {
    const bool add = in.op == Op::ADD_I;
    const Int& dst = I(in.a);
    const Int& x = I(in.b);
    const Int& y = I(in.c);
    if (in.a != in.b) {
      if (add) b_.AddChecked(dst, x, y, Exit());
      else b_.SubChecked(dst, x, y, Exit());
      return;
    }
    Label undo = b_.NewLabel(), exit = Exit();
    if (add) b_.AddChecked(dst, x, y, undo);
    else b_.SubChecked(dst, x, y, undo);
    Cold([=, this] {
      b_.Bind(undo);
      if (add) b_.Sub(dst, dst, y);
      else b_.Add(dst, dst, y);
      b_.Jump(exit);
    });
  }

  // R[A] = R[B] + k, k + R[B] or R[B] - k, for k a known constant in 32 bits:
  // an add of an immediate, straight into A's register (undone out of line
  // before an exit when A is the operand, as in AddOrSubInPlace). False if no
  // operand is such a constant.
  bool AddImmediate(const Instr& in) {
    const bool add = in.op == Op::ADD_I;
    int operand = in.b;
    std::optional<int32_t> k = Immediate(in.c);
    if (!k && add) {
      k = Immediate(in.b);
      operand = in.c;
    }
    if (!k || *k == INT32_MIN) return false;  // (-k must fit too)
    const int32_t imm = add ? *k : -*k;
    const Int& dst = I(in.a);
    if (in.a != operand) {
      b_.AddCheckedImm(dst, I(operand), imm, Exit());
      return true;
    }
    Label undo = b_.NewLabel(), exit = Exit();
    b_.AddCheckedImm(dst, dst, imm, undo);
    Cold([=, this] {
      b_.Bind(undo);
      b_.AddImm(dst, dst, -imm);
      b_.Jump(exit);
    });
    return true;
  }

  // Jumps to `target` if R[x] cond R[y], comparing with an immediate where
  // either is a known constant.
  void BranchCompare(IntCond cond, int x, int y, const Label& target) {
    // Decided by what is known here (a loop's entry test in a value
    // specialization, `0 >= cols` with cols = 16): a jump, or nothing.
    if (auto taken = KnownComparison(cond, RangeOf(x), RangeOf(y))) {
      if (*taken) b_.Jump(target);
      return;
    }
    if (auto k = Immediate(y)) {
      b_.BranchIntImm(cond, I(x), *k, target);
    } else if (auto k = Immediate(x)) {
      b_.BranchIntImm(Swapped(cond), I(y), *k, target);
    } else {
      b_.BranchInt(cond, I(x), I(y), target);
    }
  }

  // Whether  x cond y  holds for every x and y in the ranges, or fails for
  // every one; nothing where the ranges allow both.
  static std::optional<bool> KnownComparison(IntCond cond, std::optional<Range> x, std::optional<Range> y) {
    if (!x || !y) return std::nullopt;
    const bool apart = x->high < y->low || y->high < x->low;
    const bool single = x->low == x->high && y->low == y->high && x->low == y->low;  // both one value, the same
    auto decided = [](bool holds, bool fails) -> std::optional<bool> {
      if (holds) return true;
      if (fails) return false;
      return std::nullopt;
    };
    switch (cond) {
      case IntCond::kLt: return decided(x->high < y->low, x->low >= y->high);
      case IntCond::kLe: return decided(x->high <= y->low, x->low > y->high);
      case IntCond::kGt: return decided(x->low > y->high, x->high <= y->low);
      case IntCond::kGe: return decided(x->low >= y->high, x->high < y->low);
      case IntCond::kEq: return decided(single, apart);
      case IntCond::kNe: return decided(apart, single);
      default: return std::nullopt;
    }
  }

  // The condition c' with  a c b  exactly when  b c' a.
  static IntCond Swapped(IntCond cond) {
    switch (cond) {
      case IntCond::kLt: return IntCond::kGt;
      case IntCond::kLe: return IntCond::kGe;
      case IntCond::kGt: return IntCond::kLt;
      case IntCond::kGe: return IntCond::kLe;
      case IntCond::kUlt: return IntCond::kUgt;
      case IntCond::kUle: return IntCond::kUge;
      case IntCond::kUgt: return IntCond::kUlt;
      case IntCond::kUge: return IntCond::kUle;
      default: return cond;  // kEq, kNe
    }
  }

  // Code for rare cases, emitted after the function's body so that the usual
  // path runs straight through, without taken branches.
  void Cold(std::function<void()> emit) { cold_.push_back(std::move(emit)); }

  // An out-of-line piece that emits as if at the current pc (its exits, the
  // loop whose copies of views it uses): an access or a call made again there.
  void ColdAtThisPc(std::function<void()> emit) {
    Cold([this, at = pc_, copy = copy_, offsets = std::pair(sum_offset_, copy_offset_), emit = std::move(emit)] {
      const int saved = pc_;
      const UnrolledCopy saved_copy = copy_;
      pc_ = at;
      EnterCopy(copy);
      std::tie(sum_offset_, copy_offset_) = offsets;
      emit();
      EnterCopy(saved_copy);
      pc_ = saved;
    });
  }

  // The index of buf[R[base] + R[offset]] (LOADX, STOREX), checked unless a
  // loop's guard proved it; a known operand is added as an immediate.
  Int SumIndex(int buffer, int base, int offset, bool store = false) {
    if (auto index = GuardedIndex()) return *index;
    if (Immediate(base) && !Immediate(offset)) std::swap(base, offset);
    std::optional<int32_t> k = Immediate(offset);
    if (k && *k == INT32_MIN) k.reset();
    if (k && *k > -(1 << 24) && *k < (1 << 24)) {
      const int32_t known = *k;
      if (!checked_[pc_] || CoveredInCopy(buffer, base, known, store)) {
        sum_offset_ = {pc_, known};  // into the address (ElementOffset)
        return UncheckedIndex(base);
      }
    }
    Int sum = b_.NewInt();
    if (!checked_[pc_]) {
      if (k) b_.AddImm(sum, I(base), *k);
      else b_.Add(sum, I(base), I(offset));
      return sum;
    }
    if (k) b_.AddCheckedImm(sum, I(base), *k, Exit());
    else b_.AddChecked(sum, I(base), I(offset), Exit());
    return Index(buffer, sum, store);
  }

  void RequireWritable(int buffer) { b_.BranchIntImm(IntCond::kEq, store_length_[buffer], 0, Exit()); }

  // The counted loop whose guard copied the view of the buffer the access at
  // pc uses (CountedLoop::local_buffers), or null.
  const CountedLoop* LocalLoop(int pc) const {
    auto owner = local_owner_.find(pc);
    return owner == local_owner_.end() ? nullptr : &counted_loops_.at(owner->second);
  }

  // The data pointer to use at this pc: the loop's copy for a hoisted access
  // or a local buffer.
  const Int& Data(int buffer) {
    if (auto strided = strided_.find(pc_); strided != strided_.end()) return strided->second.second->based;
    if (const CountedLoop* local = LocalLoop(pc_)) return local->data.at(buffer);
    auto loop = access_loop_.find(pc_);
    if (loop == access_loop_.end()) return data_[buffer];
    CountedLoop& counted = counted_loops_.at(loop->second);
    int base = access_base_.at(pc_);
    return base >= 0 ? counted.based.at({buffer, base, access_base_def_.at(pc_)}) : counted.data.at(buffer);
  }

  // The data pointer for a read-modify-write at this pc: the loop's copy, or
  // the function-long one copied once (so that one waiting on the stack is
  // loaded once, not at each use).
  Int LoadedData(int buffer) {
    if (LocalLoop(pc_)) return Data(buffer);
    Int data = b_.NewInt();
    b_.Mov(data, data_[buffer]);
    return data;
  }

  // dst := the element at `index` of the buffer's data (or of `based`, a
  // folded access's row pointer).
  void LoadElementTo(int dst, int buffer, const Int& index, const Int* based = nullptr) {
    ElemType elem = fn_.registers[buffer].elem;
    const Int& data = based ? *based : Data(buffer);
    if (dst == deferred_load_ && (elem == ElemType::kF64 || elem == ElemType::kI64)) {  // read by the next instruction
      pending_element_ = {dst, elem == ElemType::kF64, data, index, ElementOffset(buffer)};
      deferred_load_ = -1;
      return;
    }
    if (InfoOf(elem).is_float) {
      b_.LoadElement(elem, F(dst), data, index, ElementOffset(buffer));
    } else if (elem != ElemType::kU64) {
      b_.LoadElement(elem, I(dst), data, index, ElementOffset(buffer));
    } else {
      // Beyond INT64_MAX a u64 element has no int64 value: the interpreter raises.
      Int value = b_.NewInt();
      b_.LoadElement(elem, value, data, index, ElementOffset(buffer));
      b_.BranchIntImm(IntCond::kLt, value, 0, Exit());
      b_.Mov(I(dst), value);
    }
  }

  // `value_reg`: the register of `value`; a constant one that fits the
  // element needs no range check.
  void StoreIntElement(int buffer, const Int& index, int value_reg, const Int* based = nullptr) {
    const ElemType elem = fn_.registers[buffer].elem;
    const std::optional<Range> range = ElementRange(elem);  // (a u64 takes the ints >= 0)
    const int64_t low = range ? range->low : elem == ElemType::kU64 ? 0 : INT64_MIN;
    const int64_t high = range ? range->high : INT64_MAX;
    if (auto k = Immediate(value_reg); k && *k >= low && *k <= high) {  // (fits: no check)
      b_.StoreElementImm(elem, *k, based ? *based : Data(buffer), index, ElementOffset(buffer));
      return;
    }
    const Int value = I(value_reg);
    if (!ConstantInRange(value_reg, low, high)) {
      if (low != INT64_MIN) b_.BranchIntImm(IntCond::kLt, value, low, Exit());
      if (high != INT64_MAX) b_.BranchIntImm(IntCond::kGt, value, high, Exit());
    }
    b_.StoreElement(elem, value, based ? *based : Data(buffer), index, ElementOffset(buffer));
  }

  void StoreFloatElement(int buffer, const Int& index, const Float& value) {
    b_.StoreElement(fn_.registers[buffer].elem, value, Data(buffer), index, ElementOffset(buffer));
  }

  // dst := x // d or x % d with Python's signs, for a known d > 2 that is not
  // a power of two, without a division. For 0 <= u < 2**63,
  //   u // d = (u * m) >> (63 + l),  l = ceil(log2 d),  m = 2**(63 + l) // d + 1
  // (Granlund and Montgomery, "Division by invariant integers using
  // multiplication", Theorem 4.2: 2**(63+l) < m * d <= 2**(63+l) + 2**l), and
  // m < 2**64 since d is not a power of two: one unsigned multiply-high and a
  // shift. A negative x divides ~x = -x - 1 >= 0 instead, since
  //   x // d = ~(~x // d),
  // which the sign mask s = x >> 63 applies without a branch: u = x ^ s; and
  // x % d = x - (x // d) * d.
  // When x's range puts u below 2**31 (a load from an i32 buffer, histogram's
  // `k % bins`), the same theorem with 31 for 63 gives m <= 2**32 and
  // u * m < 2**63: the low half of an ordinary multiply, which on x86-64
  // needs neither rax nor rdx.
  void DivideByConstant(const Int& dst, const Int& x, int64_t d, std::optional<Range> range, bool want_quotient) {
    const bool nonnegative = range && range->low >= 0;
    const bool narrow = range && range->high < (int64_t{1} << 31) && range->low >= -(int64_t{1} << 31);
    const int bits = narrow ? 31 : 63;
    const int l = 64 - __builtin_clzll(static_cast<uint64_t>(d - 1));
    const unsigned __int128 m = (static_cast<unsigned __int128>(1) << (bits + l)) / static_cast<uint64_t>(d) + 1;
    Int sign = b_.NewInt(), u = x;
    if (!nonnegative) {
      u = b_.NewInt();
      b_.SarImm(sign, x, 63);
      b_.Xor(u, x, sign);
    }
    Int magic = b_.NewInt(), q = b_.NewInt();
    b_.MovImm(magic, static_cast<int64_t>(static_cast<uint64_t>(m)));
    if (narrow) {
      b_.Mul(q, u, magic);
      b_.SarImm(q, q, bits + l);  // (the product is below 2**63)
    } else {
      b_.MulHighUnsigned(q, u, magic);
      b_.SarImm(q, q, l - 1);  // (the high half is below 2**63)
    }
    // floor(x / d) is q for u = x, ~q = q ^ s for u = ~x; x % d is what
    // remains of x (floor(x / d) * d lies within d of x: no overflow).
    Int floor_q = q;
    if (!nonnegative) {
      floor_q = want_quotient ? dst : b_.NewInt();
      b_.Xor(floor_q, q, sign);
    }
    if (want_quotient) {
      if (nonnegative) b_.Mov(dst, q);
      return;
    }
    Int product = b_.NewInt();
    b_.MulImm(product, floor_q, static_cast<int32_t>(d));
    b_.Sub(dst, x, product);
  }

  // dst = a // b or a % b, Python's (rounding toward minus infinity), for a
  // divisor b known not to be 0. Division by -1 is the one that can
  // overflow (INT64_MIN // -1, which leaves), and x86-64 traps on it: it
  // takes a path of its own unless the dividend cannot be INT64_MIN
  // (`min_dividend` false: an element of a narrower type, say), where the
  // truncating division gives -a and 0, already Python's results.
  void FloorDivide(const Int& dst, const Int& a, const Int& b, bool want_quotient, bool min_dividend = true) {
    Label general = b_.NewLabel(), done = b_.NewLabel(), adjusted = b_.NewLabel();
    Int result = min_dividend ? b_.NewInt() : dst;
    if (min_dividend) {
      b_.BranchIntImm(IntCond::kNe, b, -1, general);
      if (want_quotient) {
        b_.BranchIntImm(IntCond::kEq, a, INT64_MIN, Exit());
        b_.Neg(result, a);
      } else {
        b_.MovImm(result, 0);
      }
      b_.Jump(done);
      b_.Bind(general);
    }
    Int quotient = b_.NewInt(), remainder = b_.NewInt();
    b_.DivMod(quotient, remainder, a, b);
    // The truncated result needs fixing when the remainder is nonzero and its
    // sign differs from the divisor's.
    b_.BranchIntImm(IntCond::kEq, remainder, 0, adjusted);
    b_.BranchSignsAgree(remainder, b, adjusted);
    if (want_quotient) {
      b_.AddImm(quotient, quotient, -1);
    } else {
      b_.Add(remainder, remainder, b);
    }
    b_.Bind(adjusted);
    b_.Mov(result, want_quotient ? quotient : remainder);
    b_.Bind(done);
    if (min_dividend) b_.Mov(dst, result);
  }

  void Power(const Int& dst, const Int& base, const Int& exponent) {
    Label loop = b_.NewLabel(), skip = b_.NewLabel(), done = b_.NewLabel();
    Int result = b_.NewInt(), factor = b_.NewInt(), rest = b_.NewInt(), bit = b_.NewInt();
    b_.BranchIntImm(IntCond::kLt, exponent, 0, Exit());
    b_.MovImm(result, 1);
    b_.Mov(factor, base);
    b_.Mov(rest, exponent);
    b_.Bind(loop);
    b_.BranchIntImm(IntCond::kEq, rest, 0, done);
    b_.AndImm(bit, rest, 1);
    b_.BranchIntImm(IntCond::kEq, bit, 0, skip);
    Int product = b_.NewInt();
    b_.MulChecked(product, result, factor, Exit());
    b_.Mov(result, product);
    b_.Bind(skip);
    b_.SarImm(rest, rest, 1);
    b_.BranchIntImm(IntCond::kEq, rest, 0, done);
    Int square = b_.NewInt();
    b_.MulChecked(square, factor, factor, Exit());
    b_.Mov(factor, square);
    b_.Jump(loop);
    b_.Bind(done);
    b_.Mov(dst, result);
  }

  Float Math1(int id, const Float& x) {
    return b_.CallFloatHelper(Helpers(), HelperOffset(offsetof(JitHelpers, math1) + id * sizeof(void*)), {x});
  }

  // A two-argument math function's fast path: finite arguments and a finite
  // result; anything else exits, and CPython's math module decides.
  void Math2(int id, int dst, const Float& x, const Float& y) {
    RequireFinite(x);
    RequireFinite(y);
    Float r = b_.CallFloatHelper(Helpers(), HelperOffset(offsetof(JitHelpers, math2) + id * sizeof(void*)), {x, y});
    RequireFinite(r);
    b_.Mov(F(dst), r);
  }

  // ---- Instructions ---------------------------------------------------------------------

  // Emits the instruction at pc_, then records what it tells about the
  // ranges of the registers it wrote (a jump target forgets them all).
  void Instruction(const Instr& in) {
    if (pending_element_.reg >= 0 && !TakesPendingElement(in) && !passes_pending_[pc_]) LoadPendingElement();
    deferred_load_ = pc_ < static_cast<int>(loads_into_arithmetic_.size()) && loads_into_arithmetic_[pc_] ? in.a : -1;
    if (targets_[pc_]) {
      ranges_.clear();
      nonzero_floats_.clear();
      sign_free_floats_.clear();
    }
    // Offsets folded into this emission's addresses, not an earlier one's
    // of the same pc (an unrolled copy's).
    sum_offset_ = copy_offset_ = {-1, 0};
    // (FindLoadsIntoResults: until the arithmetic two on; FindLoadsIntoArithmetic:
    // until the next.)
    if (aliased_.until < 0 && (loads_into_results_[pc_] >= 0 || arithmetic_into_results_[pc_] >= 0)) {
      const bool load = loads_into_results_[pc_] >= 0;
      aliased_ = {in.a, floats_[in.a], pc_ + (load ? 2 : 1)};
      floats_[in.a] = floats_[load ? loads_into_results_[pc_] : arithmetic_into_results_[pc_]];
    }
    Emit(in);
    NoteRanges(in);
    deferred_load_ = -1;
    if (aliased_.until == pc_) {
      floats_[aliased_.reg] = aliased_.own;
      aliased_.until = -1;
    }
  }

  // An unchecked ADD_I a, y, z whose sum only the next instruction reads, an
  // add (or subtract) of a known k that cannot overflow: both are one
  // AddPlusImm (x86-64:
  // `lea w, [y + z + k]`; eval_a's `... // 2 + i + 1`), and the next emits
  // nothing. Neither can leave, so no exit needs a, and no later repeat of
  // the sum may copy it.
  bool AddsConstantNext(const Instr& in) {
    const int n = static_cast<int>(fn_.code.size());
    // (A later repeat of this sum copies its register: copied_from_.)
    if (pc_ + 2 >= n || targets_[pc_ + 1] || live_in_[pc_ + 2][in.a] || copied_from_.count(in.a) ||
        Immediate(in.b) || Immediate(in.c)) {
      return false;
    }
    const int next_pc = pc_ + 1;
    const Instr& next = fn_.code[next_pc];
    if ((next.op != Op::ADD_I && next.op != Op::SUB_I) || unneeded_[next_pc] || folded_adds_.count(next_pc) ||
        invariant_values_.count(next_pc) || same_as_[next_pc] >= 0) {
      return false;
    }
    // (a - k adds -k; k - a is no sum of a.)
    const int other = next.b == in.a ? next.c : next.c == in.a && next.op == Op::ADD_I ? next.b : -1;
    std::optional<int32_t> k = other >= 0 && other != in.a ? Immediate(other) : std::nullopt;
    if (k && next.op == Op::SUB_I) k = *k == INT32_MIN ? std::nullopt : std::optional<int32_t>(-*k);
    if (!k) return false;
    const std::optional<Range> sum = ArithmeticRange(in);
    const bool fits = sum && static_cast<__int128>(sum->low) + *k >= INT64_MIN &&
                      static_cast<__int128>(sum->high) + *k <= INT64_MAX;
    if (!fits && !within_guard_.count(next_pc)) return false;
    const int64_t total = static_cast<int64_t>(*k) + OffsetOf(in.b) + OffsetOf(in.c);  // (offsets fold: OffsetOf)
    if (total < INT32_MIN || total > INT32_MAX) return false;
    b_.AddPlusImm(I(next.a), OffsetOf(in.b) ? ints_[in.b] : I(in.b), OffsetOf(in.c) ? ints_[in.c] : I(in.c),
                  static_cast<int32_t>(total));
    added_with_previous_ = next_pc;
    return true;
  }

  // Whether a repeated computation's register `a` may be the virtual
  // register of `same`, the earlier result, instead of a copy of it: in an
  // inlined callee (whose exits make the real call, so none stores a), when
  // nothing after this instruction writes either (its code runs forward
  // once) and a is not what it returns (that register may be the caller's).
  bool SharesRegister(int a, int same) const {
    if (!inline_) return false;
    for (int pc = pc_ + 1; pc < static_cast<int>(fn_.code.size()); ++pc) {
      const Instr& in = fn_.code[pc];
      if ((in.op == Op::RET_I || in.op == Op::RET_F) && in.a == a) return false;
      RegisterSet reads, writes;
      RegistersOf(fn_, in, &reads, &writes);
      if (writes[a] || writes[same]) return false;
    }
    return true;
  }

  // Whether `in` is the arithmetic that reads the pending element
  // (FindLoadsIntoArithmetic).
  // (An int one, unless AddOrSubElement takes it, is loaded there first.)
  bool TakesPendingElement(const Instr& in) const {
    const int r = pending_element_.reg;
    switch (in.op) {
      case Op::ADD_F: case Op::MUL_F: case Op::ADD_I: return in.b != in.c && (in.b == r || in.c == r);
      case Op::SUB_F: case Op::SUB_I: return in.b != in.c && in.c == r;
      default: return false;
    }
  }

  // The pending element's read where it was not taken as an operand: a load
  // as usual, emitted before anything else happens.
  void LoadPendingElement() {
    const PendingElement p = std::exchange(pending_element_, PendingElement());
    if (p.is_float) b_.LoadElement(ElemType::kF64, F(p.reg), p.data, p.index, p.offset);
    else b_.LoadElement(ElemType::kI64, I(p.reg), p.data, p.index, p.offset);
  }

  // ADD_I or SUB_I with the pending int64 element as an operand, checked:
  // R[A] := the other operand +/- the element, read in place (x86-64: `add
  // a, [element]`; `running += xs[i]` is one add and a jo). On overflow the
  // interpreter runs the instruction again and reads the element's register:
  // the way out loads it there (and undoes an add in place). False, with
  // nothing emitted, where the instruction takes another form (a constant,
  // an unchecked sum, a sum of the loop's own, ...) or R[A] is the load's
  // index or data register.
  bool AddOrSubElement(const Instr& in) {
    const PendingElement& p = pending_element_;
    const int other = in.c == p.reg ? in.b : in.c;
    if (p.is_float || unneeded_[pc_] || folded_adds_.count(pc_) || added_with_previous_ == pc_ ||
        invariant_values_.count(pc_) || same_as_[pc_] >= 0 || within_guard_.count(pc_) || ArithmeticRange(in) ||
        immediate_[other] || fn_.IsConstantRegister(other)) {
      return false;
    }
    const Int dst = I(in.a);
    if (dst.id() == p.index.id() || dst.id() == p.data.id()) return false;
    const PendingElement e = std::exchange(pending_element_, PendingElement());
    const bool add = in.op == Op::ADD_I, in_place = in.a == other;
    const Label exit = Exit(), overflow = b_.NewLabel();
    if (add) b_.AddElementChecked(dst, I(other), e.data, e.index, e.offset, overflow);
    else b_.SubElementChecked(dst, I(other), e.data, e.index, e.offset, overflow);
    Cold([=, this] {
      b_.Bind(overflow);
      const Int element = I(e.reg);
      b_.LoadElement(ElemType::kI64, element, e.data, e.index, e.offset);
      if (in_place) add ? b_.Sub(dst, dst, element) : b_.Add(dst, dst, element);
      b_.Jump(exit);
    });
    return true;
  }

  void Emit(const Instr& in) {
    if (!Covers(fn_, in)) {
      b_.Jump(Exit());
      return;
    }
    const int a = in.a, bb = in.b, c = in.c;
    const int d = in.d;
    switch (in.op) {
      case Op::MOVE_I:
        if (DeferArgument(pc_)) break;
        if (immediate_[bb]) b_.MovImm(I(a), *immediate_[bb]);
        else b_.Mov(I(a), I(bb));
        break;
      case Op::MOVE_F:
        if (DeferArgument(pc_)) break;
        b_.Mov(F(a), F(bb));
        break;
      case Op::GETITEM_I_GF: {
        // An unboxed version's list or tuple item (vm/unbox.h): R[B] an
        // exact list or tuple, R[C] inside it (SequenceItemOrExit), the item
        // an exact float; anything else leaves for the interpreter, whose
        // GETITEM_I_GF deoptimizes.
        const Label exit = Exit();
        if (d != 0) ExitUnlessNull(d - 1);
        Int object = SequenceItemOrExit(bb, c, &PyFloat_Type, exit);
        b_.LoadFloat(F(a), object, static_cast<int32_t>(offsetof(PyFloatObject, ob_fval)));
        break;
      }
      case Op::GETITEM_I_GI: {
        // An unboxed version's int item (vm/unbox.h): R[B] an exact list or
        // tuple, R[C] inside it (SequenceItemOrExit), the item an exact int
        // of at most two 30-bit digits (ReadListInt); anything else leaves
        // for the interpreter, whose GETITEM_I_GI takes any int within 64
        // bits, or deoptimizes.
        const Label exit = Exit();
        if (d != 0) ExitUnlessNull(d - 1);
        ReadListInt(I(a), SequenceItemOrExit(bb, c, &PyLong_Type, exit), exit);
        break;
      }
      case Op::FOR_ITER_GF:
      case Op::FOR_ITER_GI: {
        // An unboxed version's `for x in xs` over an exact list: the next
        // item read in place and the iterator advanced (ListIteratorNextOrExit),
        // an exact float, or an int as GETITEM_I_GI reads one. The end of the
        // list, any other iterator or item leaves for the interpreter before
        // the iterator moves, and its FOR_ITER_GF/GI ends the loop,
        // deoptimizes or goes on as the iterator does.
        const Label exit = Exit();
        const bool floats = in.op == Op::FOR_ITER_GF;
        const ListIteratorNext next = ListIteratorNextOrExit(bb, floats ? &PyFloat_Type : &PyLong_Type, exit);
        if (floats) {
          b_.LoadFloat(F(a), next.item, static_cast<int32_t>(offsetof(PyFloatObject, ob_fval)));
        } else {
          ReadListInt(I(a), next.item, exit);  // (a wide int leaves before the iterator moves)
        }
        AdvanceListIterator(next);
        break;
      }
      case Op::FOR_ITER_L: {
        // The same for an item that stays an object: its reference taken
        // into R[A], the one R[A] held released (ReplaceObject); where that
        // would free it, the interpreter's FOR_ITER_L runs instead.
        const Label exit = Exit();
        const ListIteratorNext next = ListIteratorNextOrExit(bb, nullptr, exit);
        Int old = ReleasableObjectOrExit(a, exit);
        ReplaceObject(a, old, next.item, false);
        AdvanceListIterator(next);
        break;
      }
      case Op::MOVE_O: {
        // R[A] := R[B] with the references moved as the interpreter moves
        // them (ReplaceObject); a release that would free leaves for it.
        if (a == bb) break;
        Int object = b_.NewInt();
        b_.LoadInt(object, FromSlot(regs_slot_), static_cast<int32_t>(bb * sizeof(Value)));
        Int old = ReleasableObjectOrExit(a, Exit());
        ReplaceObject(a, old, object, true);
        break;
      }
      case Op::LOAD_ATTR_GF:
      case Op::LOAD_ATTR_GI: {
        // An unboxed version's attribute: where the attribute cache of this
        // pc finds it in place (JitHelpers::attribute_in_place), an exact
        // float, or an int as GETITEM_I_GI reads one. Anything else leaves
        // for the interpreter, whose LOAD_ATTR_GF/GI reads it the generic
        // way or deoptimizes. A `__slots__` member the cache held when this
        // was compiled is read inline, behind its type and version tag
        // (CachedSlotMember); another type, or an unset slot, asks the
        // helper.
        const Label exit = Exit(), ask = b_.NewLabel(), found = b_.NewLabel();
        Int object = b_.NewInt(), value = b_.NewInt();
        b_.LoadInt(object, FromSlot(regs_slot_), static_cast<int32_t>(bb * sizeof(Value)));
        PyTypeObject* type = nullptr;
        unsigned int version_tag = 0;
        Py_ssize_t offset = 0;
        if (fn_.unboxed_of != nullptr && CachedSlotMember(*fn_.unboxed_of, pc_, &type, &version_tag, &offset)) {
          Int actual = b_.NewInt(), expected = b_.NewInt(), tag = b_.NewInt(), zero = b_.NewInt();
          b_.BranchIntImm(IntCond::kEq, object, 0, ask);
          b_.LoadInt(actual, object, static_cast<int32_t>(offsetof(PyObject, ob_type)));
          b_.MovImm(expected, reinterpret_cast<int64_t>(type));
          b_.BranchInt(IntCond::kNe, actual, expected, ask);
          b_.MovImm(zero, 0);
          b_.LoadElement(ElemType::kU32, tag, actual, zero, static_cast<int32_t>(offsetof(PyTypeObject, tp_version_tag)));
          b_.BranchIntImm(IntCond::kNe, tag, static_cast<int64_t>(version_tag), ask);
          b_.LoadInt(value, object, static_cast<int32_t>(offset));
          b_.BranchIntImm(IntCond::kNe, value, 0, found);
        }
        b_.Bind(ask);
        Int function = b_.NewInt(), at = b_.NewInt();
        b_.LoadInt(function, FromSlot(context_slot_), static_cast<int32_t>(offsetof(JitCallContext, function)));
        b_.MovImm(at, pc_);
        Int asked = b_.CallIntHelper(Helpers(), HelperOffset(offsetof(JitHelpers, attribute_in_place)), {function, at, object});
        b_.Mov(value, asked);
        b_.Bind(found);
        b_.BranchIntImm(IntCond::kEq, value, 0, exit);
        if (in.op == Op::LOAD_ATTR_GF) {
          ExitUnlessType(value, &PyFloat_Type, exit);
          b_.LoadFloat(F(a), value, static_cast<int32_t>(offsetof(PyFloatObject, ob_fval)));
        } else {
          ExitUnlessType(value, &PyLong_Type, exit);
          ReadListInt(I(a), value, exit);
        }
        break;
      }
      case Op::IARITH_UI: {
        // FARITH_UF's int form: an overflow leaves for the interpreter, whose
        // IARITH_UI deoptimizes there (R[A] is a fresh register until then).
        if (d >> 16 != 0) ExitUnlessNull((d >> 16) - 1);
        Int result = b_.NewInt();
        switch (static_cast<BinaryOp>(d & 0xff)) {
          case BinaryOp::ADD: b_.AddChecked(result, I(bb), I(c), Exit()); break;
          case BinaryOp::SUB: b_.SubChecked(result, I(bb), I(c), Exit()); break;
          default: b_.MulChecked(result, I(bb), I(c), Exit()); break;
        }
        b_.Mov(I(a), result);
        break;
      }
      case Op::FARITH_UF:
        // Slot arithmetic of an unboxed version whose result replaces an
        // object its register may hold: the interpreter releases that one
        // (once: the register holds null from then on).
        if (d >> 16 != 0) ExitUnlessNull((d >> 16) - 1);
        switch (static_cast<BinaryOp>(d & 0xff)) {
          case BinaryOp::ADD: b_.FAdd(F(a), F(bb), F(c)); break;
          case BinaryOp::SUB: b_.FSub(F(a), F(bb), F(c)); break;
          default: b_.FMul(F(a), F(bb), F(c)); break;
        }
        break;
      case Op::MOVE_U:
        b_.Mov(I(a), I(bb));
        b_.Mov(data_[a], data_[bb]);
        b_.Mov(length_[a], length_[bb]);
        if (stored_[a]) b_.Mov(store_length_[a], store_length_[bb]);
        break;
      case Op::I2F:  // (C's conversion rounds to nearest, as Python's does)
        if (immediate_[bb]) b_.Mov(F(a), FloatOf(static_cast<double>(*immediate_[bb])));
        else b_.IntToFloat(F(a), I(bb));
        break;
      case Op::F2I:  // a failure exits before the interpreter reads R[A]
        if (exact_conversions_.count(pc_) || ConvertsForIndex(pc_)) {
          b_.FloatToIntTruncate(I(a), F(bb));
          break;
        }
        b_.FloatToIntChecked(I(a), F(bb), Exit());
        break;
      case Op::TRUTH_I: {
        Int zero = b_.NewInt();
        b_.MovImm(zero, 0);
        b_.SetInt(IntCond::kNe, I(a), I(bb), zero);
        break;
      }
      case Op::TRUTH_F: b_.SetFloat(FloatCond::kNe, I(a), F(bb), Zero()); break;
      case Op::NOT: {
        // R[B] == 0, exactly as the interpreter computes it: an entry whose
        // R[B] is not 0 or 1 (the compiler never emits one; a crafted entry
        // may) must not give another answer in machine code.
        Int zero = b_.NewInt();
        b_.MovImm(zero, 0);
        b_.SetInt(IntCond::kEq, I(a), I(bb), zero);
        break;
      }

      case Op::ADD_I:
      case Op::SUB_I:
      case Op::MUL_I: {
        if (pending_element_.reg >= 0) {  // an int64 element as the operand (TakesPendingElement)
          if (AddOrSubElement(in)) break;
          LoadPendingElement();
        }
        if (unneeded_[pc_] || folded_adds_.count(pc_)) break;
        if (std::exchange(added_with_previous_, -1) == pc_) break;  // (AddsConstantNext)
        if (unmade_invariants_.count(pc_)) break;  // (no access needs its value: EmitGuardChecks)
        if (auto hoisted = invariant_values_.find(pc_); hoisted != invariant_values_.end()) {
          if (!OnlyCheckedIndexesRead(pc_)) b_.Mov(I(a), hoisted->second);  // (FindInvariantArithmetic)
          break;
        }
        if (same_as_[pc_] >= 0) {  // (FindCommonSubexpressions)
          if (SharesRegister(a, same_as_[pc_])) ints_[a] = ints_[same_as_[pc_]];
          else b_.Mov(I(a), I(same_as_[pc_]));
          break;
        }
        if (auto known = KnownResult(in)) {
          b_.MovImm(I(a), *known);
          break;
        }
        if (ArithmeticRange(in) || within_guard_.count(pc_)) {  // cannot overflow: no check
          if (in.op == Op::ADD_I && AddsConstantNext(in)) break;
          if (auto step = inductions_.find(pc_); step != inductions_.end()) {  // (FindProductInductions)
            StepByScale(I(a), I(a), step->second, false);
            break;
          }
          EmitArithmetic(I(a), in, nullptr);
          break;
        }
        if (IsCounterPlusSmall(in)) {
          bool counter_first = RangedLoopWith(bb, true) != nullptr;
          b_.AddImm(I(a), I(counter_first ? bb : c), static_cast<int32_t>(ConstantValueOf(counter_first ? c : bb)));
          break;
        }
        if (in.op != Op::MUL_I && AddImmediate(in)) break;
        if (in.op != Op::MUL_I && a != c) {
          AddOrSubInPlace(in);
          break;
        }
        if (in.op == Op::MUL_I) {
          // Straight into A's register unless A is an operand (R[A] is not
          // live here then: an exit hands the interpreter only B and C).
          Int t = a == bb || a == c ? b_.NewInt() : I(a);
          const Label exit = Exit();
          EmitArithmetic(t, in, &exit);
          b_.Mov(I(a), t);
          break;
        }
        Int t = b_.NewInt();
        if (in.op == Op::ADD_I) b_.AddChecked(t, I(bb), I(c), Exit());
        else b_.SubChecked(t, I(bb), I(c), Exit());
        b_.Mov(I(a), t);
        break;
      }
      case Op::FLOORDIV_I:
      case Op::MOD_I:
        if (auto known = KnownResult(in)) {
          b_.MovImm(I(a), *known);
          break;
        }
        if (ConstantInRange(c, 1, INT64_MAX) && (ConstantValueOf(c) & (ConstantValueOf(c) - 1)) == 0) {
          // A constant power of two 2**k: Python's floor division is the
          // arithmetic shift by k and its modulo the low k bits, for either
          // sign of the dividend (two's complement rounds toward minus infinity).
          const uint64_t divisor = static_cast<uint64_t>(ConstantValueOf(c));
          if (in.op == Op::FLOORDIV_I) {
            b_.SarImm(I(a), I(bb), __builtin_ctzll(divisor));
          } else if (divisor - 1 <= static_cast<uint64_t>(INT32_MAX)) {
            b_.AndImm(I(a), I(bb), static_cast<int32_t>(divisor - 1));
          } else {
            Int mask = b_.NewInt();
            b_.MovImm(mask, static_cast<int64_t>(divisor - 1));
            b_.And(I(a), I(bb), mask);
          }
          break;
        }
        if (ConstantInRange(c, 3, INT32_MAX)) {  // (not a power of two: above)
          std::optional<Range> range = RangeOf(bb);
          if (!range && KnownNonnegative(bb)) range = Range{0, INT64_MAX};
          DivideByConstant(I(a), I(bb), ConstantValueOf(c), range, in.op == Op::FLOORDIV_I);
          break;
        }
        if (KnownNonnegative(bb) && KnownPositive(c)) {
          // Truncation is Python's floor here: no sign to fix, no zero or -1 divisor.
          Int quotient = b_.NewInt(), remainder = b_.NewInt();
          b_.DivMod(quotient, remainder, I(bb), I(c));
          b_.Mov(I(a), in.op == Op::FLOORDIV_I ? quotient : remainder);
          break;
        }
        if (nonzero_checked_[pc_]) b_.BranchIntImm(IntCond::kEq, I(c), 0, Exit());
        {
          const std::optional<Range> range = RangeOf(bb);
          FloorDivide(I(a), I(bb), I(c), in.op == Op::FLOORDIV_I, !range || range->low == INT64_MIN);
        }
        break;
      case Op::POW_I: Power(I(a), I(bb), I(c)); break;
      case Op::TRUEDIV_I: {
        b_.BranchIntImm(IntCond::kEq, I(c), 0, Exit());
        Float x = ExactDouble(bb);
        Float y = ExactDouble(c);
        b_.FDiv(F(a), x, y);
        break;
      }
      case Op::AND_I: b_.And(I(a), I(bb), I(c)); break;
      case Op::OR_I: b_.Or(I(a), I(bb), I(c)); break;
      case Op::XOR_I: b_.Xor(I(a), I(bb), I(c)); break;
      case Op::SHL_I: {
        b_.BranchIntImm(IntCond::kUgt, I(c), 63, Exit());  // negative counts too
        Int shifted = b_.NewInt(), back = b_.NewInt();
        b_.Shl(shifted, I(bb), I(c));
        b_.Sar(back, shifted, I(c));
        b_.BranchInt(IntCond::kNe, back, I(bb), Exit());
        b_.Mov(I(a), shifted);
        break;
      }
      case Op::SHR_I: {
        b_.BranchIntImm(IntCond::kLt, I(c), 0, Exit());
        Int count = b_.NewInt();
        Label small = b_.NewLabel();
        b_.Mov(count, I(c));
        b_.BranchIntImm(IntCond::kLe, count, 63, small);
        b_.MovImm(count, 63);
        b_.Bind(small);
        b_.Sar(I(a), I(bb), count);
        break;
      }
      case Op::MIN_I:
      case Op::MAX_I: {
        // R[C] if R[C] < R[B] (or >) else R[B]: the first of equals stays.
        Int t = b_.NewInt();
        Label keep = b_.NewLabel();
        b_.Mov(t, I(bb));
        b_.BranchInt(in.op == Op::MIN_I ? IntCond::kGe : IntCond::kLe, I(c), I(bb), keep);
        b_.Mov(t, I(c));
        b_.Bind(keep);
        b_.Mov(I(a), t);
        break;
      }
      case Op::NEG_I:
        b_.BranchIntImm(IntCond::kEq, I(bb), INT64_MIN, Exit());
        b_.Neg(I(a), I(bb));
        break;
      case Op::INVERT_I: b_.Not(I(a), I(bb)); break;
      case Op::ABS_I: {
        b_.BranchIntImm(IntCond::kEq, I(bb), INT64_MIN, Exit());
        Int t = b_.NewInt();
        Label positive = b_.NewLabel();
        b_.Mov(t, I(bb));
        b_.BranchIntImm(IntCond::kGe, t, 0, positive);
        b_.Neg(t, t);
        b_.Bind(positive);
        b_.Mov(I(a), t);
        break;
      }

      case Op::ADD_F:
      case Op::SUB_F:
      case Op::MUL_F:
      case Op::DIV_F:
        if (same_as_[pc_] >= 0) {  // (FindCommonSubexpressions)
          if (SharesRegister(a, same_as_[pc_])) floats_[a] = floats_[same_as_[pc_]];
          else b_.Mov(F(a), F(same_as_[pc_]));
          break;
        }
        if (pending_element_.reg >= 0 && !passes_pending_[pc_]) {  // the element is the operand (TakesPendingElement)
          const PendingElement p = std::exchange(pending_element_, PendingElement());
          const FloatOp op = in.op == Op::ADD_F ? FloatOp::kAdd : in.op == Op::SUB_F ? FloatOp::kSub : FloatOp::kMul;
          b_.FArithElement(op, F(a), F(p.reg == c ? bb : c), p.data, p.index, p.offset);
          break;
        }
        if (in.op == Op::ADD_F) b_.FAdd(F(a), F(bb), F(c));
        if (in.op == Op::SUB_F) b_.FSub(F(a), F(bb), F(c));
        if (in.op == Op::MUL_F) {
          // 2.0 * x is x + x, bit for bit (NaN, the infinities and -0.0
          // included), and an add's latency is at most a multiply's: half
          // of it on recent Intel cores, where it shortens Mandelbrot's chain.
          if (FloatConstantOf(c) == 2.0) b_.FAdd(F(a), F(bb), F(bb));
          else if (FloatConstantOf(bb) == 2.0) b_.FAdd(F(a), F(c), F(c));
          else b_.FMul(F(a), F(bb), F(c));
        }
        if (in.op != Op::DIV_F) break;
        if (auto divisor = FloatOperandValue(c); divisor && ExactReciprocal(*divisor)) {
          // x / 2**k is x * 2**-k: the same real number, so the same rounded
          // result, in a multiply that takes a third of a division's time.
          // (Also an int known here, converted just before: `sum_ / cols`
          // in a specialization for cols = 16.)
          b_.FMul(F(a), F(bb), FloatOf(1.0 / *divisor));
          break;
        }
        if (nonzero_checked_[pc_] && !nonzero_floats_.count(c)) b_.BranchFloatZero(F(c), Exit());
        b_.FDiv(F(a), F(bb), F(c));
        break;
      case Op::FLOORDIV_F:
      case Op::MOD_F: {
        if (nonzero_checked_[pc_]) b_.BranchFloatZero(F(c), Exit());
        size_t offset = in.op == Op::FLOORDIV_F ? offsetof(JitHelpers, floor_div) : offsetof(JitHelpers, mod);
        Float r = b_.CallFloatHelper(Helpers(), HelperOffset(offset), {F(bb), F(c)});
        b_.Mov(F(a), r);
        break;
      }
      case Op::POW_F: {
        // The fast path of vm/runtime.h's PowFloat: a positive finite base, a
        // finite exponent and a finite result; anything else is CPython's.
        // With a constant integral exponent (`x ** 2`, `x ** 3.0`) a negative
        // base is fast too, as CPython's float_pow computes it: pow(-x, y),
        // negated for an odd y. (Zero and NaN bases still exit: the sign of
        // -0.0 ** 3 and the errors of 0.0 ** -1 are CPython's to give.)
        const std::optional<double> exponent = FloatOperandValue(c);
        if (exponent && std::isfinite(*exponent) && *exponent == std::floor(*exponent)) {
          Label positive = b_.NewLabel(), done = b_.NewLabel();
          b_.BranchFloat(FloatCond::kGt, F(bb), Zero(), positive);
          b_.BranchFloat(FloatCond::kNotLt, F(bb), Zero(), Exit());  // (zero, NaN)
          Float magnitude = b_.NewFloat();
          b_.FNeg(magnitude, F(bb));
          Math2(static_cast<int>(MathFn::POW), a, magnitude, F(c));
          if (std::fmod(std::fabs(*exponent), 2.0) == 1.0) b_.FNeg(F(a), F(a));
          b_.Jump(done);
          b_.Bind(positive);
          Math2(static_cast<int>(MathFn::POW), a, F(bb), F(c));
          b_.Bind(done);
          break;
        }
        b_.BranchFloat(FloatCond::kNotGt, F(bb), Zero(), Exit());
        Math2(static_cast<int>(MathFn::POW), a, F(bb), F(c));
        break;
      }
      case Op::MIN_F:
      case Op::MAX_F: {
        Float t = b_.NewFloat();
        Label keep = b_.NewLabel();
        b_.Mov(t, F(bb));
        b_.BranchFloat(in.op == Op::MIN_F ? FloatCond::kNotLt : FloatCond::kNotGt, F(c), F(bb), keep);
        b_.Mov(t, F(c));
        b_.Bind(keep);
        b_.Mov(F(a), t);
        break;
      }
      case Op::NEG_F: b_.FNeg(F(a), F(bb)); break;
      case Op::ABS_F: b_.FAbs(F(a), F(bb)); break;

      // Complex values are pairs of float registers; each result is computed
      // in full before the destination pair is written (it may be an operand).
      case Op::ADD_C:
      case Op::SUB_C: {
        Float real = b_.NewFloat(), imag = b_.NewFloat();
        if (in.op == Op::ADD_C) {
          b_.FAdd(real, F(bb), F(c));
          b_.FAdd(imag, F(bb + 1), F(c + 1));
        } else {
          b_.FSub(real, F(bb), F(c));
          b_.FSub(imag, F(bb + 1), F(c + 1));
        }
        b_.Mov(F(a), real);
        b_.Mov(F(a + 1), imag);
        break;
      }
      case Op::MUL_C: {
        // CPython's product, (ac - bd) + (ad + bc)j, four products and no fusing.
        Float ac = b_.NewFloat(), bd = b_.NewFloat(), ad = b_.NewFloat(), bc = b_.NewFloat();
        b_.FMul(ac, F(bb), F(c));
        b_.FMul(bd, F(bb + 1), F(c + 1));
        b_.FMul(ad, F(bb), F(c + 1));
        b_.FMul(bc, F(bb + 1), F(c));
        b_.FSub(F(a), ac, bd);
        b_.FAdd(F(a + 1), ad, bc);
        break;
      }
      case Op::DIV_C: {
        // A zero divisor leaves for the interpreter, which raises CPython's error.
        Label nonzero = b_.NewLabel();
        b_.BranchFloat(FloatCond::kNe, F(c), Zero(), nonzero);
        b_.BranchFloatZero(F(c + 1), Exit());
        b_.Bind(nonzero);
        std::initializer_list<Float> args = {F(bb), F(bb + 1), F(c), F(c + 1)};
        Float real = b_.CallFloatHelper(Helpers(), HelperOffset(offsetof(JitHelpers, complex_quot_real)), args);
        Float imag = b_.CallFloatHelper(Helpers(), HelperOffset(offsetof(JitHelpers, complex_quot_imag)), args);
        b_.Mov(F(a), real);
        b_.Mov(F(a + 1), imag);
        break;
      }
      case Op::ABS_C: {
        // An infinite modulus is either an infinite part or CPython's
        // OverflowError: the interpreter tells them apart.
        Float modulus = b_.CallFloatHelper(Helpers(), HelperOffset(offsetof(JitHelpers, complex_abs)), {F(bb), F(bb + 1)});
        Float infinity = b_.NewFloat();
        b_.FloatFromBits(infinity, 0x7ff0000000000000ull);
        b_.BranchFloat(FloatCond::kEq, modulus, infinity, Exit());
        b_.Mov(F(a), modulus);
        break;
      }
      case Op::EQ_C: {
        Int imag_equal = b_.NewInt();
        b_.SetFloat(FloatCond::kEq, I(a), F(bb), F(c));
        b_.SetFloat(FloatCond::kEq, imag_equal, F(bb + 1), F(c + 1));
        b_.And(I(a), I(a), imag_equal);
        break;
      }

      case Op::LT_I: b_.SetInt(IntCond::kLt, I(a), I(bb), I(c)); break;
      case Op::LE_I: b_.SetInt(IntCond::kLe, I(a), I(bb), I(c)); break;
      case Op::EQ_I: b_.SetInt(IntCond::kEq, I(a), I(bb), I(c)); break;
      case Op::NE_I: b_.SetInt(IntCond::kNe, I(a), I(bb), I(c)); break;
      case Op::LT_F: b_.SetFloat(FloatCond::kLt, I(a), F(bb), F(c)); break;
      case Op::LE_F: b_.SetFloat(FloatCond::kLe, I(a), F(bb), F(c)); break;
      case Op::EQ_F: b_.SetFloat(FloatCond::kEq, I(a), F(bb), F(c)); break;
      case Op::NE_F: b_.SetFloat(FloatCond::kNe, I(a), F(bb), F(c)); break;
      case Op::LT_FI:
      case Op::LE_FI:
      case Op::GT_FI:
      case Op::GE_FI:
      case Op::EQ_FI:
      case Op::NE_FI: {
        static const FloatCond kConds[] = {FloatCond::kLt, FloatCond::kLe, FloatCond::kGt,
                                           FloatCond::kGe, FloatCond::kEq, FloatCond::kNe};
        Float y = ExactDouble(c);
        b_.SetFloat(kConds[static_cast<int>(in.op) - static_cast<int>(Op::LT_FI)], I(a), F(bb), y);
        break;
      }

      case Op::JMP: {
        // Threaded: a jump to a jump goes where that one goes, and a jump to
        // a loop's back edge (`continue`, the end of an if in a while loop)
        // is that back edge, one jump less per iteration.
        int target = d;
        for (int hops = 0; hops < 8 && fn_.code[target].op == Op::JMP && fn_.code[target].d != target; ++hops) {
          target = fn_.code[target].d;
        }
        if (fn_.code[target].op == Op::LOOP) LoopBack(fn_.code[target].d);
        else b_.Jump(labels_[target]);
        break;
      }
      case Op::JT: b_.BranchIntImm(IntCond::kNe, I(a), 0, labels_[d]); break;
      case Op::JF: b_.BranchIntImm(IntCond::kEq, I(a), 0, labels_[d]); break;
      case Op::LOOP: LoopBack(d); break;
      case Op::JLT_I:
      case Op::JLE_I:
        if (auto test = range_tests_.find(pc_); test != range_tests_.end()) {  // (FindRangeTests)
          const RangeTest& t = test->second;
          Int offset = b_.NewInt();
          b_.AddImm(offset, I(t.c), static_cast<int32_t>(-t.low));
          b_.BranchIntImm(t.in_range_jumps ? IntCond::kUle : IntCond::kUgt, offset, t.high - t.low, labels_[t.target]);
          break;
        }
        if (range_tests_.count(pc_ - 1)) break;  // the second test of a range, made by the first
        if (in.op == Op::JLT_I) {
          BranchCompare(IntCond::kLt, a, bb, labels_[d]);
          break;
        }
        if (auto w = while_loops_.find(pc_); w != while_loops_.end() && w->second.chunked) {
          EmitWhileTest(w->second, d);
          break;
        }
        BranchCompare(IntCond::kLe, a, bb, labels_[d]);
        break;
      case Op::JEQ_I: BranchCompare(IntCond::kEq, a, bb, labels_[d]); break;
      case Op::JNE_I: BranchCompare(IntCond::kNe, a, bb, labels_[d]); break;
      case Op::JLT_F: BranchFloatTest(FloatCond::kLt, F(a), F(bb), labels_[d]); break;
      case Op::JLE_F: BranchFloatTest(FloatCond::kLe, F(a), F(bb), labels_[d]); break;
      case Op::JEQ_F: b_.BranchFloat(FloatCond::kEq, F(a), F(bb), labels_[d]); break;
      case Op::JNE_F: b_.BranchFloat(FloatCond::kNe, F(a), F(bb), labels_[d]); break;
      case Op::JNLT_F: BranchFloatTest(FloatCond::kNotLt, F(a), F(bb), labels_[d]); break;
      case Op::JNLE_F: BranchFloatTest(FloatCond::kNotLe, F(a), F(bb), labels_[d]); break;
      case Op::JLT_FI:
      case Op::JLE_FI:
      case Op::JGT_FI:
      case Op::JGE_FI:
      case Op::JNLT_FI:
      case Op::JNLE_FI:
      case Op::JNGT_FI:
      case Op::JNGE_FI: {
        static const FloatCond kConds[] = {FloatCond::kLt,    FloatCond::kLe,    FloatCond::kGt,    FloatCond::kGe,
                                           FloatCond::kNotLt, FloatCond::kNotLe, FloatCond::kNotGt, FloatCond::kNotGe};
        Float y = ExactDouble(bb);
        BranchFloatTest(kConds[static_cast<int>(in.op) - static_cast<int>(Op::JLT_FI)], F(a), y, labels_[d]);
        break;
      }

      case Op::FORPREP: {
        if (auto step = Immediate(c); step && *step != 0) {  // the direction is known
          BranchCompare(*step > 0 ? IntCond::kGe : IntCond::kLe, a, bb, labels_[d]);
          break;
        }
        Label down = b_.NewLabel(), done = b_.NewLabel();
        b_.BranchIntImm(IntCond::kEq, I(c), 0, Exit());
        b_.BranchIntImm(IntCond::kLt, I(c), 0, down);
        b_.BranchInt(IntCond::kGe, I(a), I(bb), labels_[d]);
        b_.Jump(done);
        b_.Bind(down);
        b_.BranchInt(IntCond::kLe, I(a), I(bb), labels_[d]);
        b_.Bind(done);
        break;
      }
      case Op::FORLOOP: {
        if (auto counted = counted_loops_.find(d); counted != counted_loops_.end() && counted->second.down) {
          CountDown(counted->second, a, bb);
          break;
        }
        Label down = b_.NewLabel(), take = b_.NewLabel(), end = b_.NewLabel();
        Int next = b_.NewInt();
        if (auto step = Immediate(c); step && *step != 0) {  // the direction is known
          b_.AddCheckedImm(next, I(a), *step, end);  // past 64 bits: the range is over
          const IntCond past = *step > 0 ? IntCond::kGe : IntCond::kLe;
          if (auto stop = Immediate(bb)) b_.BranchIntImm(past, next, *stop, end);
          else b_.BranchInt(past, next, I(bb), end);
          b_.Mov(I(a), next);
          BackEdge(labels_[d], d);
          b_.Bind(end);
          break;
        }
        b_.AddChecked(next, I(a), I(c), end);  // past 64 bits: the range is over
        b_.BranchIntImm(IntCond::kLt, I(c), 0, down);
        b_.BranchInt(IntCond::kGe, next, I(bb), end);
        b_.Jump(take);
        b_.Bind(down);
        b_.BranchInt(IntCond::kLe, next, I(bb), end);
        b_.Bind(take);
        b_.Mov(I(a), next);
        BackEdge(labels_[d], d);
        b_.Bind(end);
        break;
      }
      case Op::FORLOOP_INC: {
        // R[A] < R[B] <= INT64_MAX, so R[A] + 1 cannot overflow; when the loop
        // ends the counter steps back to the last value, as the interpreter's does.
        Label end = b_.NewLabel();
        auto body = bodies_.find(d);
        auto chunked = counted_loops_.find(d);
        if (chunked != counted_loops_.end() && chunked->second.left.isValid()) {
          CountedLoop& loop = chunked->second;
          MoveStridedPointers(loop);
          b_.AddImm(I(a), I(a), 1);
          ChunkBackEdge(loop);
          BranchCompare(IntCond::kGe, a, bb, end);
          ChunkStart(loop, ExitAt(loop.header));  // a chunk ended before the loop did: ticks_ is 0
          b_.Jump(loop.body);
          b_.Bind(end);
          b_.AddImm(I(a), I(a), -1);
          break;
        }
        b_.AddImm(I(a), I(a), 1);
        BranchCompare(IntCond::kGe, a, bb, end);
        BackEdge(body != bodies_.end() ? body->second : labels_[d], d,
                 chunked != counted_loops_.end() ? &chunked->second : nullptr);
        b_.Bind(end);
        b_.AddImm(I(a), I(a), -1);
        break;
      }

      case Op::LEN_U: b_.Mov(I(a), length_[bb]); break;
      case Op::LOAD_F64:
      case Op::LOAD_I64:
      case Op::LOAD_F:
      case Op::LOAD_I: CheckedAccess(bb, c, false, [=, this](const Int& index) { LoadElementTo(a, bb, index); }); break;
      case Op::LOADX_F64:
      case Op::LOADX_I64: LoadElementTo(a, bb, SumIndex(bb, c, d)); break;
      case Op::STORE_F64:
      case Op::STORE_F: CheckedAccess(a, bb, true, [=, this](const Int& index) { StoreFloatElement(a, index, F(c)); }); break;
      case Op::STORE_I64:
      case Op::STORE_I: CheckedAccess(a, bb, true, [=, this](const Int& index) { StoreIntElement(a, index, c); }); break;
      case Op::STOREX_F64: StoreFloatElement(a, SumIndex(a, bb, c, true), F(d)); break;
      case Op::STOREX_I64: StoreIntElement(a, SumIndex(a, bb, c, true), d); break;
      // N-d buffers (see vm/opcodes.def): machine code runs only in frames
      // whose views have a contiguous innermost axis (vm/interpreter.cpp), so
      // INDEX_U on that axis is the checked index itself.
      case Op::SHAPE_U: {  // (the interpreter raises for an exporter without a shape attribute)
        Int shapeless = b_.NewInt();
        b_.LoadU8(shapeless, ints_[bb], static_cast<int32_t>(offsetof(BufferView, shapeless)));
        b_.BranchIntImm(IntCond::kNe, shapeless, 0, Exit());
        b_.LoadInt(I(a), ints_[bb], ViewField(offsetof(BufferView, shape), c));
        break;
      }
      case Op::INDEX_U: {
        if (unneeded_[pc_]) break;  // only a folded access needed it (FindFoldedChains)
        if (const Int* hoisted = HoistedIndex(pc_)) {  // computed by the loop's guard
          b_.Mov(I(a), *hoisted);
          break;
        }
        if (!checked_[pc_]) {  // the loop's guard checked its range
          ScaleByStride(I(a), bb, c, I(d));
          break;
        }
        Int size = b_.NewInt();
        b_.LoadInt(size, ints_[bb], ViewField(offsetof(BufferView, shape), c));
        ScaleByStride(I(a), bb, c, AxisIndex(size, I(d)));
        break;
      }
      case Op::LOADN_F:
      case Op::LOADN_I:
        if (auto folded = folded_.find(pc_); folded != folded_.end()) {
          LoadElementTo(a, bb, UncheckedIndex(folded->second.second), &folded->second.first);
          break;
        }
        CheckOffset(bb, c);
        LoadElementTo(a, bb, I(c));
        break;
      case Op::STOREN_F:
        if (auto folded = folded_.find(pc_); folded != folded_.end()) {
          const Int index = UncheckedIndex(folded->second.second);
          b_.StoreElement(fn_.registers[a].elem, F(c), folded->second.first, index, ElementOffset(a));
          break;
        }
        CheckOffset(a, bb);
        if (!writable_checked_.count(pc_)) RequireWritable(a);
        StoreFloatElement(a, I(bb), F(c));
        break;
      case Op::STOREN_I:
        if (auto folded = folded_.find(pc_); folded != folded_.end()) {
          StoreIntElement(a, UncheckedIndex(folded->second.second), c, &folded->second.first);
          break;
        }
        CheckOffset(a, bb);
        if (!writable_checked_.count(pc_)) RequireWritable(a);
        StoreIntElement(a, I(bb), c);
        break;
      case Op::ADDTO_F64: {
        Int index = IndexRegister(a, bb, true);
        Float value = b_.NewFloat();
        Int data = LoadedData(a);
        const int32_t offset = ElementOffset(a);
        b_.LoadElement(ElemType::kF64, value, data, index, offset);
        b_.FAdd(value, value, F(c));
        b_.StoreElement(ElemType::kF64, value, data, index, offset);
        break;
      }
      case Op::ADDTO_I64: {
        // In place (x86-64: one add to memory); an overflow takes the
        // wrapped sum back out of line, then leaves for the interpreter,
        // which raises with the element as it was.
        Int index = IndexRegister(a, bb, true);
        Int data = LoadedData(a);
        const int32_t offset = ElementOffset(a);
        std::optional<int32_t> k = Immediate(c);
        if (k == INT32_MIN) k.reset();
        const Int value = k ? Int() : I(c);
        if (k && unchecked_adds_.count(pc_)) {  // (FindBoundedElementSums: the chunk checked every element)
          b_.AddToElementImm(data, index, offset, *k);
          break;
        }
        const Label undo = b_.NewLabel(), exit = Exit();
        if (k) b_.AddToElementCheckedImm(data, index, offset, *k, undo);
        else b_.AddToElementChecked(data, index, offset, value, undo);
        Cold([=, this] {
          b_.Bind(undo);
          Int wrapped = b_.NewInt();
          b_.LoadElement(ElemType::kI64, wrapped, data, index, offset);
          if (k) b_.AddImm(wrapped, wrapped, -*k);
          else b_.Sub(wrapped, wrapped, value);
          b_.StoreElement(ElemType::kI64, wrapped, data, index, offset);
          b_.Jump(exit);
        });
        break;
      }

      case Op::SQRT_F:
        if (!sign_free_floats_.count(bb)) {  // negative or NaN (which the interpreter takes)
          b_.BranchFloat(FloatCond::kNotGe, F(bb), Zero(), Exit());
        }
        b_.FSqrt(F(a), F(bb));
        break;
      case Op::MATH_F: {
        Float r = Math1(d, F(bb));
        RequireFinite(r);
        b_.Mov(F(a), r);
        break;
      }
      case Op::MATH_FF: Math2(d, a, F(bb), F(c)); break;
      case Op::MATH_FI: {
        Float r = Math1(d, F(bb));
        Int t = b_.NewInt();
        b_.FloatToIntChecked(t, r, Exit());
        b_.Mov(I(a), t);
        break;
      }
      case Op::MATH_FB: {
        switch (static_cast<MathFn>(d)) {
          case MathFn::ISNAN: b_.SetFloat(FloatCond::kNe, I(a), F(bb), F(bb)); break;
          case MathFn::ISFINITE: {
            Float difference = b_.NewFloat();
            b_.FSub(difference, F(bb), F(bb));
            b_.SetFloat(FloatCond::kEq, I(a), difference, Zero());
            break;
          }
          default: {  // ISINF
            Float magnitude = b_.NewFloat(), infinity = b_.NewFloat();
            b_.FAbs(magnitude, F(bb));
            b_.FloatFromBits(infinity, 0x7FF0000000000000ull);
            b_.SetFloat(FloatCond::kEq, I(a), magnitude, infinity);
            break;
          }
        }
        break;
      }

      case Op::CALL_FN: {
        const FunctionCode& callee = *fn_.module->functions[d];
        Label done = b_.NewLabel();
        if (InlinableCallee(fn_, callee)) {  // the real call out of line
          Label call = b_.NewLabel();
          EmitInlineCall(d, callee, bb, a, done, call);
          const FunctionCode* called = &callee;
          const std::map<int, int> deferred = std::exchange(deferred_, {});
          ColdAtThisPc([=, this] {
            b_.Bind(call);
            for (const auto& [arg, source] : deferred) {  // (DeferArgument)
              if (KindOf(arg) == Kind::kFloat) b_.Mov(F(arg), F(source));
              else b_.Mov(I(arg), I(source));
            }
            EmitTypedCall(*called, a, bb, c, d);
            b_.Jump(done);
          });
        } else {
          EmitTypedCall(callee, a, bb, c, d);
        }
        b_.Bind(done);
        break;
      }
      case Op::RET_I:
        if (inline_) {  // the caller's result register, and on after the call
          b_.Mov(inline_result_int_, I(a));
          falls_into_done_ = FallsIntoDone();
          if (!falls_into_done_) b_.Jump(inline_done_);
          break;
        }
        b_.StoreInt(I(a), FromSlot(result_slot_), 0);
        b_.ReturnImm(kJitReturned);
        break;
      case Op::RET_F:
        if (inline_) {
          b_.Mov(inline_result_float_, F(a));
          falls_into_done_ = FallsIntoDone();
          if (!falls_into_done_) b_.Jump(inline_done_);
          break;
        }
        b_.StoreFloat(F(a), FromSlot(result_slot_), 0);
        b_.ReturnImm(kJitReturned);
        break;
      case Op::CHECK_BOUND_I:
      case Op::CHECK_BOUND_U: b_.BranchIntImm(IntCond::kEq, I(a), 0, Exit()); break;
      default:  // flagged JIT in opcodes.def but given no machine code here
        missing_.push_back(in.op);
        b_.Jump(Exit());
        break;
    }
  }

  B& b_;
  const FunctionCode& fn_;
  std::map<int, int64_t> known_;  // a value specialization's constants, by register
  std::vector<std::optional<int64_t>> immediate_;  // per register: a value the code knows (see I())
  std::vector<Op> missing_;
  bool note_guards_ = false;  // (NoteGuards)
  std::vector<JitGuard> guards_;
  std::set<int> exact_conversions_;  // F2I pcs whose int() cannot fail (FindExactConversions)
  std::set<int> unchecked_adds_;     // ADDTO_I64 pcs a chunk's check covers (FindBoundedElementSums)
  std::set<int> nan_exit_tests_;     // float tests that send a NaN to a side exit (the same)
  std::vector<bool> targets_;
  std::vector<std::vector<int>> jumps_to_;  // per pc: the jumps whose target it is
  std::vector<Label> labels_;
  RegisterSet used_, written_;
  std::vector<RegisterSet> live_in_;
  std::vector<Int> ints_, data_, length_, store_length_;
  RegisterSet stored_;  // buffer registers the function stores into
  std::vector<Float> floats_;
  UnrolledCopy copy_;
  const CountedLoop* unrolled_loop_ = nullptr;  // the loop of copy_
  std::pair<int, int64_t> copy_offset_ = {-1, 0};  // (pc, trip) UncheckedIndex folded
  std::map<std::pair<int, UnrolledCopy>, Label> exits_, error_exits_;
  std::vector<std::function<void()>> cold_;
  std::map<int, CountedLoop> counted_loops_;  // by header
  std::vector<RangedLoop> ranged_loops_;
  std::map<int, Label> bodies_;              // by header: past the guard
  std::map<int, int> unrolled_;              // by header: the trip count of a loop run unrolled
  std::map<int, int> partial_;               // by header: the iterations per pass of a partially unrolled loop
  std::map<int, int> inductions_;  // MUL_I pc -> its scale register (FindProductInductions)
  std::map<int, std::pair<int, AffineAccess*>> strided_;  // strength-reduced access pc -> (loop header, access)
  std::map<int, int> fills_;                 // by header: the byte a filling loop stores (FillByte)
  std::map<int, int> element_sums_;          // by header: the int a loop sums elements into (SummedElements)
  std::map<int, WhileLoop> while_loops_;     // by header: while loops with a guard (FindWhileLoops)
  std::vector<bool> checked_;                // per pc: whether its bounds are checked where it runs
  std::vector<bool> nonzero_checked_;        // per pc: whether its divisor is checked where it runs
  std::map<int, Float> converted_;           // ints a loop guard converted to doubles
  std::map<int, int> invariant_owner_;       // invariant arithmetic pc -> the loop whose guard computes it
  std::map<int, Int> invariant_values_;      // invariant arithmetic pc -> what the guard computed
  std::set<int> unmade_invariants_;          // invariant arithmetic nothing needs made (EmitGuardChecks)
  std::map<int, Int> hoisted_indexes_;       // invariant access pc -> its index, checked by the guard
  std::map<int, std::pair<Int, int64_t>> grouped_offsets_;  // grouped invariant access pc -> (value, constant)
  std::map<std::pair<int, int64_t>, Int> grouped_values_;   // (buffer, value key) -> the group's register
  std::map<int, Range> ranges_;              // int register -> its range here, from this block's arithmetic
  std::map<int, Range> stable_ranges_;       // an inlined callee's unwritten parameters' ranges
  std::map<int, Range> counter_ranges_;      // FindCounters
  std::set<int> nonzero_floats_;             // float registers known nonzero here (I2F of a range without 0)
  std::set<int> sign_free_floats_;           // float registers known >= 0 or NaN here (see NoteRanges)
  std::vector<int> same_as_;                 // per pc: the register holding what it computes already, or -1
  std::vector<bool> loads_into_arithmetic_;  // per pc: its element is the next instruction's operand
  std::vector<int> loads_into_results_;      // per pc: the float register a load writes instead, or -1
  std::vector<bool> passes_pending_;         // per pc: float arithmetic a pending element waits past
  std::vector<int> arithmetic_into_results_;  // per pc: the float register that arithmetic writes instead, or -1
  struct Aliased {
    int reg = -1;
    Float own;        // reg's own virtual register, while it shares another's
    int until = -1;   // the pc after whose instruction it gets it back
  } aliased_;
  struct RangeTest {
    int c;              // the register tested
    int64_t low, high;  // the range, low < high
    int target;         // where the out-of-range values go, or the in-range ones
    bool in_range_jumps;
  };
  std::map<int, RangeTest> range_tests_;     // by the first test's pc (FindRangeTests)
  std::map<int, MembershipChain> membership_;  // by the chain's first pc (FindMembershipChains)
  std::vector<bool> chained_;                  // per pc: a later test of a chain, made by its first
  // A load FindLoadsIntoArithmetic folds, while it is emitted (its register:
  // -1 when none), then its element's address until the arithmetic takes it.
  int deferred_load_ = -1;
  std::map<int, int64_t> row_offsets_;       // folded access pc -> the constant its row's pointer leaves out
  int added_with_previous_ = -1;             // the ADD_I that AddsConstantNext emitted with the one before
  struct PendingElement {
    int reg = -1;
    bool is_float = true;  // a float64 element, or an int64 one
    Int data, index;
    int32_t offset = 0;
  } pending_element_;
  std::set<int> copied_from_;                // registers some same_as_ copies from
  std::map<int, int> local_owner_;           // access pc -> the loop that copied its buffer's view (local_buffers)
  std::map<int, int> loop_end_;              // by header: the pc of the closing FORLOOP_INC
  std::map<int, int> access_loop_;           // hoisted access pc -> its loop's header
  std::map<int, int> access_base_;           // hoisted access pc -> its base register, or -1
  std::map<int, int> access_base_def_;       // hoisted access pc -> Access::base_def
  std::map<int, int> access_index_def_;      // hoisted access pc -> the sum t + counter it indexes by
  std::vector<bool> unneeded_;               // per pc: a base computation the loop can skip
  std::set<int> writable_checked_;           // N-d store pcs whose loop's guard checked writability
  std::map<int, std::pair<Int, int>> folded_;  // folded N-d access pc -> (row pointer, counter register)
  std::set<int> folded_pcs_;                   // the same pcs, known before the guards are emitted
  std::vector<int> depth_;                   // per pc: how many loops' back edges enclose it (at most 3)
  std::map<asmjit::BaseNode*, int> depth_marks_;  // the node before a pc's code -> its depth
  Int entry_pc_, ticks_;
  int regs_slot_ = 0, result_slot_ = 0, context_slot_ = 0;
  int pc_ = 0;
  // Generating a callee's code in place of a call (GenerateInline): every
  // exit is the fallback, the real call; a return writes the caller's result
  // register and jumps to the instruction after the call.
  std::pair<int, int64_t> sum_offset_ = {-1, 0};          // (pc, constant) SumIndex folded
  std::set<int> length_bounded_;                        // load pcs a while loop's test proved (FindLengthBoundedLoads)
  std::set<std::pair<int, int>> length_bounds_;         // (m, buffer) those tests rely on: m <= len(buffer)
  std::set<int> folded_adds_;                           // ADD_I/SUB_I pcs folded into addresses
  std::map<int, std::pair<int, int64_t>> folded_offsets_;  // access pc -> (index register, constant)
  std::set<int> within_guard_;    // ADD_I/SUB_I/MUL_I pcs an affine access's guard proved free of overflow
  std::map<int, int> deferred_;  // argument register -> the source its move waits with (DeferArgument)
  std::map<int, int32_t> param_offsets_;  // an inlined callee's parameter -> its argument's offset (OffsetOf)
  std::map<uint64_t, Float> float_constants_;  // inlined callees' float constants, by bits (LoadRegisters)
  bool inline_ = false, falls_into_done_ = false;
  Label inline_fallback_, inline_done_;
  Int inline_result_int_;
  Float inline_result_float_;
};

}  // namespace ppy::jit
