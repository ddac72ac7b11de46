// See vm/gil.h.

#include "vm/gil.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "vm/python_compat.h"

namespace ppy {

constinit thread_local GilState t_gil PPY_FAST_TLS;

void TakeGilSlow() {
  PyThreadState* state = t_gil.released;
  t_gil.released = nullptr;
  RestoreThread(state);
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

// The ident of Python's main thread, the one thread whose check runs signal
// handlers; learned once, under the GIL, from the threading module.
std::atomic<unsigned long> g_main_thread{0};

unsigned long MainThread() {
  unsigned long main = g_main_thread.load(std::memory_order_relaxed);
  if (main != 0) return main;
  TakeGil();
  PyObject* threading = PyImport_ImportModule("threading");
  PyObject* thread = threading ? PyObject_CallMethod(threading, "main_thread", nullptr) : nullptr;
  PyObject* ident = thread ? PyObject_GetAttrString(thread, "ident") : nullptr;
  main = ident && PyLong_Check(ident) ? PyLong_AsUnsignedLong(ident) : 0;
  Py_XDECREF(ident);
  Py_XDECREF(thread);
  Py_XDECREF(threading);
  PyErr_Clear();
  if (main == 0 || main == static_cast<unsigned long>(-1)) main = 1;  // (unknown: no thread has ident 1)
  g_main_thread.store(main, std::memory_order_relaxed);
  ReleaseGilAgain();
  return main;
}

}  // namespace

void LearnMainThread() { MainThread(); }

void RestoreThread(PyThreadState* state) {
  const unsigned long main = g_main_thread.load(std::memory_order_relaxed);
  if (IsFinalizing() && main != 0 && PyThread_get_thread_ident() != main) {
    for (;;) pause();
  }
  PyEval_RestoreThread(state);
}

namespace {

// Twice sys.getswitchinterval() (5 ms unless set), at least 1 ms. A thread
// waiting for the GIL asks for it (gil_drop_request) only after a whole
// interval in which no switch happened, and then YieldGilIfDue's release
// hands it over (CPython's FORCE_SWITCHING) instead of taking it straight
// back. A release without that request counts as a switch to the waiting
// thread and restarts its interval: released every interval, the GIL went
// back and forth between this thread and itself while the waiting thread
// starved for seconds.
uint64_t SwitchPeriodNs() {
  constexpr uint64_t kDefault = 10'000'000, kLeast = 1'000'000;
  PyObject* get = PySys_GetObject("getswitchinterval");  // borrowed
  PyObject* seconds = get != nullptr ? PyObject_CallNoArgs(get) : nullptr;
  const double interval = seconds != nullptr ? PyFloat_AsDouble(seconds) : -1.0;
  Py_XDECREF(seconds);
  if (!(interval > 0.0) || interval > 60.0) {
    PyErr_Clear();
    return kDefault;
  }
  return std::max(kLeast, static_cast<uint64_t>(2e9 * interval));
}

// Whether the interpreter has another thread state: with none, no thread
// waits for the GIL.
bool AnotherThreadExists() {
  PyThreadState* head = PyInterpreterState_ThreadHead(PyInterpreterState_Get());
  return head != nullptr && PyThreadState_Next(head) != nullptr;
}

}  // namespace

bool GilSwitchDue() {
  return MonotonicNs() - t_gil.last_switch_ns >= t_gil.switch_period_ns && AnotherThreadExists();
}

bool YieldGilIfDue() {
  const uint64_t now = MonotonicNs();
  if (now - t_gil.last_switch_ns < t_gil.switch_period_ns) return false;
  t_gil.last_switch_ns = now;
  if (!AnotherThreadExists()) return false;
  t_gil.switch_period_ns = SwitchPeriodNs();  // (sys.setswitchinterval may have changed it)
  RestoreThread(PyEval_SaveThread());
  return true;
}

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
  // Without the GIL: only the main thread's check can run a handler, at most
  // every kSignalPollNs.
  const uint64_t now = MonotonicNs();
  if (now - t_gil.last_signal_poll_ns < kSignalPollNs) return true;
  t_gil.last_signal_poll_ns = now;
  if (PyThread_get_thread_ident() != MainThread()) return true;
  TakeGilSlow();
  if (PyErr_CheckSignals() != 0) return false;  // the GIL stays held for the raise
  ReleaseGilAgain();
  return true;
}

}  // namespace ppy
