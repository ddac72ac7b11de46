// Floats and ints unboxed by speculation and type feedback (issue 13): an
// object function's code rewritten, pc for pc, so that the values its object
// instructions would make as float objects (or int objects within 64 bits)
// live as doubles (int64s) in registers of their own.
//
// Object code runs every `+` through a float object: `dx = b1[0] - b2[0]`
// takes two references out of lists, allocates the difference, and `dx * dx`
// allocates again. Once a function is hot the interpreter builds, in this
// process only (the cache entry stays the object code, data-independent), a
// version of its code in which each web of a register (its definitions and
// the uses they reach) that takes part in arithmetic or a comparison and can
// hold only a float, or only an int, lives in an *unboxing slot*: a float or
// int register past the function's own registers.
//
// Which type a web gets: an int if one of its definitions says so (an int
// constant moved in, a typed int boxed, int arithmetic on int webs, a guard
// of an earlier version that met an int there: UnboxFeedback), else a float.
// A first version thus guesses floats for a list's items, and the one built
// after its guard met an int guards for ints. Values enter a slot through a
// guard (an item of a list or tuple, an object moved in, an operand of
// arithmetic: an exact float, or an exact int within 2**53 where CPython
// would convert it; for an int slot, an exact int within 64 bits), arithmetic
// on slots is native (an int result past 64 bits, or a division by zero,
// fails its guard), and a value leaves a slot boxed, where an object is
// needed (stored into a list, passed to a call, returned).
//
// The rewrite keeps every pc, so the two versions share lines, caches and
// jump targets, and a frame moves between them at any instruction:
//   * a guard that fails deoptimizes: the frame boxes its live slots into the
//     object registers they stand for and runs the object code from that same
//     pc (the instruction runs again there, as CPython would run it); the pc
//     is remembered with what the guard met, and the next version leaves that
//     instruction alone, or guards there for an int;
//   * a loop's back edge enters the unboxed code (on-stack replacement) by
//     unboxing the live slots' object registers, if they hold exact floats
//     (exact ints within 64 bits, for int slots).
// The object registers that a slot stands for hold null (or, for a temporary
// the compiler reuses for other values, the last object it held) while the
// slot is live. A number keeps its value through a slot, not its identity
// (`is` between floats, or ints past the small-int cache, is CPython's
// implementation detail, as the language reference says; PyPy does the
// same).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "vm/code.h"

namespace ppy {

// The most unboxing slots a function has: the slots live at a pc are a 64-bit
// mask.
inline constexpr int kMaxUnboxSlots = 64;
// Versions built per function before it keeps its object code for good (each
// failed guard costs one, and learning that a web holds ints costs one per
// guard that first guessed floats: a loop over a list of pairs of ints may
// spend three).
inline constexpr int kMaxUnboxBuilds = 8;

// What the guards of earlier versions met, per pc (FunctionRuntime::
// unbox_feedback): the type feedback the next version is built from.
enum UnboxFeedback : uint8_t {
  kUnboxNothing = 0,
  kUnboxFailed = 1,  // a guard failed here: the instruction stays object code
  kUnboxSawInt = 2,  // a float guard met an exact int within 64 bits: an int guard next
};

struct UnboxedCode {
  std::vector<Instr> code;  // the function's code, pc for pc
  // Slot k is float register num_registers() + k and stands for object
  // register slot_register[k].
  std::vector<uint8_t> slot_register;
  // Per pc: the slots live before the instruction there runs (what a
  // deoptimization boxes, and a loop entry unboxes).
  std::vector<uint64_t> live;
  // Slots that hold a float constant of the function where arithmetic on
  // slots meets it (`s * 0.5`): set wherever a frame enters this code, never
  // written, never boxed (the constant's register keeps its object).
  std::vector<std::pair<int, double>> constant_slots;
  std::vector<std::pair<int, int64_t>> int_constant_slots;  // the same for int constants (`i + 1`)
  // The slots that hold ints (int64): bit k for slot k. The others hold
  // doubles.
  uint64_t int_slots = 0;
  int guards = 0;  // instructions that check what they meet (for --trace)
  // For the machine-code tier, when a loop of this code runs only
  // instructions it compiles (a list's items read by a typed index, typed
  // arithmetic, typed calls): this code as a function whose registers go on
  // with the slots, as floats and ints. It owns no object (its constants are
  // the function's). Null otherwise.
  std::unique_ptr<FunctionCode> machine;
};

// The unboxing slots a frame of `fn` reserves past its registers: 0 when no
// instruction could make or take an unboxed float.
int UnboxSlotsOf(const FunctionCode& fn);

// `fn`'s code (loaded: its unbox_slots set) with every register web unboxed
// that takes part in arithmetic or a comparison and can hold only a float, or
// only an int, by its instructions' kinds and `feedback` (UnboxFeedback per
// pc, shorter or empty for none): a pc marked failed keeps its object
// instruction. Null if nothing is worth unboxing.
std::unique_ptr<UnboxedCode> BuildUnboxedCode(const FunctionCode& fn, const std::vector<uint8_t>& feedback);

}  // namespace ppy
