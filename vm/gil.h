// The GIL while compiled code runs: @ppy.nogil calls and prange workers.
//
// A @ppy.nogil function called from Python releases the GIL for the call
// (NogilScope). From then on every frame of that thread, its callees' too,
// runs typed instructions without it, and whatever touches Python takes it
// back first (TakeGil): an object instruction (the interpreter's nogil
// dispatch table routes every instruction vm/opcodes.def does not flag JIT
// through it), a raise (every Raise* and slow path in vm/runtime.cpp), a call
// into Python, a compile. The thread releases it again at its next loop check
// (every kBackEdgesPerCheck back edges, ReleaseGilAgain) and when the nogil
// call returns. A prange worker (vm/prange.h) is a native thread that lives in
// such a scope for good.
//
// Nothing here relies on the GIL for ppy's own state: what threads share
// (tiering counters, machine code, the torch-view count) is atomic, and
// what a thread keeps for itself is thread_local.
#pragma once

#include <Python.h>

#include <atomic>
#include <cstdint>

#include "vm/code.h"

namespace ppy {

struct GilState {
  int depth = 0;                      // nogil scopes the thread is in
  PyThreadState* own = nullptr;       // the thread's own state, while depth > 0
  PyThreadState* released = nullptr;  // the same while the GIL is released
  // For a prange worker: the loop's stop flag (set when another chunk raised
  // or Ctrl-C came), and whether this thread raised because of it.
  const std::atomic<bool>* stop = nullptr;
  bool stopped = false;
  uint64_t last_signal_poll_ns = 0;
  uint64_t last_switch_ns = 0;  // when YieldGilIfDue last let other threads run
  uint64_t switch_period_ns = 10'000'000;  // and how long it waits for the next (see SwitchPeriodNs)
};
extern constinit thread_local GilState t_gil PPY_FAST_TLS;

// PyEval_RestoreThread, except in a thread other than the main one once the
// interpreter finalizes: CPython would end the thread there (pthread_exit, an
// unwind that noexcept destructors and machine code without unwind tables
// turn into an abort), so it waits for the process to end instead, holding
// nothing, as CPython 3.14's own threads do.
void RestoreThread(PyThreadState* state);
// Learns which thread is Python's main one (at the extension's import, with
// the GIL).
void LearnMainThread();
// At a loop check of a frame that holds the GIL (the interpreter's, and
// machine code's): every two switch intervals (10 ms by default, see
// gil.cpp), releases it and takes it back, so that a thread waiting for it
// runs, as CPython's eval loop lets one at its back edges (a loop that waits
// on another thread's store would spin for ever). True if it did (other
// threads' Python code may have run).
bool YieldGilIfDue();
// Whether YieldGilIfDue would let the GIL go now (it changes nothing).
bool GilSwitchDue();
[[gnu::cold]] void TakeGilSlow();
// Takes the GIL back if this thread released it: before anything that touches
// Python. A no-op while it is held.
inline void TakeGil() {
  if (__builtin_expect(t_gil.released != nullptr, 0)) TakeGilSlow();
}
inline bool GilReleased() { return t_gil.released != nullptr; }
// Whether the thread runs in a nogil scope (the GIL released, or taken back).
inline bool InNogil() { return t_gil.depth > 0; }
// In a nogil scope whose GIL was taken back: releases it again.
void ReleaseGilAgain();

// Releases the GIL for a @ppy.nogil call from Python (the GIL held), unless
// the thread is in such a call already; the outermost scope takes it back.
class NogilScope {
 public:
  NogilScope() {
    if (t_gil.depth++ == 0) t_gil.released = t_gil.own = PyEval_SaveThread();
  }
  ~NogilScope() {
    if (--t_gil.depth == 0 && t_gil.released != nullptr) {
      PyThreadState* state = t_gil.released;
      t_gil.released = nullptr;
      RestoreThread(state);
    }
  }
  NogilScope(const NogilScope&) = delete;
  NogilScope& operator=(const NogilScope&) = delete;
};

// The loop check's interrupts, for the interpreter's back edges and machine
// code's (every kBackEdgesPerCheck): Ctrl-C (Python's signal handlers, which
// run in the main thread with the GIL), and in a prange worker its loop's
// stop flag. The main thread, without the GIL, takes it for the check at
// most every kSignalPollNs and releases it again; other threads without it
// skip the check (Python runs signal handlers in the main thread only).
// False with an exception set.
bool PollInterrupts();
inline constexpr uint64_t kSignalPollNs = 20'000'000;

}  // namespace ppy
