// See vm/gil.h.

#include "vm/gil.h"

#include <time.h>

namespace ppy {

thread_local GilState t_gil;

void TakeGilSlow() {
  PyThreadState* state = t_gil.released;
  t_gil.released = nullptr;
  PyEval_RestoreThread(state);
}

void ReleaseGilAgain() {
  if (t_gil.depth > 0 && t_gil.released == nullptr) t_gil.released = PyEval_SaveThread();
}

namespace {
uint64_t MonotonicNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + now.tv_nsec;
}
}  // namespace

bool PollInterrupts() {
  if (t_gil.stop != nullptr) {
    // A prange worker: signals are the waiting caller's to check (vm/prange.cpp).
    if (!t_gil.stop->load(std::memory_order_relaxed)) return true;
    TakeGil();
    PyErr_SetString(PyExc_RuntimeError, "the prange loop stopped");
    t_gil.stopped = true;
    return false;
  }
  if (t_gil.released == nullptr) return PyErr_CheckSignals() == 0;
  const uint64_t now = MonotonicNs();
  if (now - t_gil.last_signal_poll_ns < kSignalPollNs) return true;
  t_gil.last_signal_poll_ns = now;
  TakeGilSlow();
  if (PyErr_CheckSignals() != 0) return false;  // the GIL stays held for the raise
  ReleaseGilAgain();
  return true;
}

}  // namespace ppy
