// Parallel loops: `for i in ppy.prange(...)` runs its iterations on a pool of
// native threads.
//
// The compiler lowers such a loop as
//
//     PRANGE           counter, stop, step, exit
//     PRANGE_REDUCE_*  reg, op              (one per reduction, data for PRANGE)
//     test             (JLE_I stop, counter / FORPREP ..., to the PRANGE_END)
//   head:
//     body ...
//     FORLOOP_INC / FORLOOP counter, stop, (step), head
//     PRANGE_END
//   exit:
//
// PRANGE splits the iterations into one contiguous chunk per thread. Each
// chunk runs on its own copy of the frame, from the test to the PRANGE_END,
// with the counter and the limit set to its own range: the loop's code is
// the same for every chunk, and the same as a sequential loop's, so machine
// code for the loop serves them all. The verifier confines a chunk to that
// code and to instructions flagged JIT (no object registers: the copies'
// references are not theirs).
//
// After the chunks, on the caller's frame:
//  * a reduction register gets the chunks' partial values combined in chunk
//    order (chunk 0 starts from the register's value, the others from the
//    operation's identity: 0, 1, or the start value itself for min and max),
//    so a result is deterministic for a thread count, and one thread gives
//    the sequential result exactly;
//  * every other typed register gets the value of the chunk that ran the
//    last iteration (the loop variable, and locals assigned on every
//    iteration, end as a sequential loop leaves them);
//  * an exception raised in a chunk stops the others at their next loop
//    check and is raised here: the lowest chunk's, with its .ppy line.
//    Ctrl-C, which the waiting caller checks for, stops them the same way.
#pragma once

#include "vm/runtime.h"

namespace ppy {

// Runs the prange loop of the PRANGE at `pc` of `fn` on the frame `regs`.
// False with an exception set; *traced tells whether the exception already
// has this function's traceback entry (an exception from a chunk does).
bool RunPrange(const FunctionCode& fn, Value* regs, int pc, bool views_contiguous, bool* traced);

// The most threads PPY_NUM_THREADS may ask for (the pool's size: it, else
// the CPUs this process may run on).
inline constexpr int kMaxPrangeThreads = 256;

}  // namespace ppy
