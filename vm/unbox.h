// Floats unboxed by speculation (issue 13): an object function's code
// rewritten, pc for pc, so that the values its object instructions would make
// as float objects live as doubles in registers of their own.
//
// Object code runs every `+` through a float object: `dx = b1[0] - b2[0]`
// takes two references out of lists, allocates the difference, and `dx * dx`
// allocates again. Once a function is hot the interpreter builds, in this
// process only (the cache entry stays the object code, data-independent), a
// version of its code in which each web of a register (its definitions and
// the uses they reach) that can hold only a float and takes part in
// arithmetic lives in an *unboxing slot*: a float register past the
// function's own registers. Values enter a slot through a guard (an item of a
// list or tuple, an object moved in, an operand of arithmetic: an exact float,
// or an exact int within 2**53 where CPython would convert it), arithmetic on
// slots is the typed instructions', and a value leaves a slot boxed, where an
// object is needed (stored into a list, passed to a call, returned).
//
// The rewrite keeps every pc, so the two versions share lines, caches and
// jump targets, and a frame moves between them at any instruction:
//   * a guard that fails deoptimizes: the frame boxes its live slots into the
//     object registers they stand for and runs the object code from that same
//     pc (the instruction runs again there, as CPython would run it); the pc
//     is remembered, and the next version leaves that instruction alone;
//   * a loop's back edge enters the unboxed code (on-stack replacement) by
//     unboxing the live slots' object registers, if they hold exact floats.
// The object registers that a slot stands for hold null (or, for a temporary
// the compiler reuses for other values, the last object it held) while the
// slot is live. A float keeps its value through a slot, not its identity
// (`is` between floats is CPython's implementation detail, as the language
// reference says; PyPy does the same).
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
// failed guard costs one).
inline constexpr int kMaxUnboxBuilds = 4;

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
  int guards = 0;  // instructions that check what they meet (for --trace)
  // For the machine-code tier, when a loop of this code runs only
  // instructions it compiles (a list's items read by a typed index, typed
  // arithmetic, typed calls): this code as a function whose registers go on
  // with the slots, as floats. It owns no object (its constants are the
  // function's). Null otherwise.
  std::unique_ptr<FunctionCode> machine;
};

// The unboxing slots a frame of `fn` reserves past its registers: 0 when no
// instruction could make or take an unboxed float.
int UnboxSlotsOf(const FunctionCode& fn);

// `fn`'s code (loaded: its unbox_slots set) with every register web unboxed that holds only floats by its
// instructions' kinds and takes part in arithmetic, except at the pcs
// `failed` marks (a guard failed there before: they keep their object
// instructions). Null if nothing is worth unboxing.
std::unique_ptr<UnboxedCode> BuildUnboxedCode(const FunctionCode& fn, const std::vector<bool>& failed);

}  // namespace ppy
