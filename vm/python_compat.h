// What differs between the CPythons ppy supports (3.11, 3.12, 3.13), in one
// place, through public API only.
//
// Header-only, so that the region executor (its own extension, which does not
// link the VM) shares it.
#pragma once

#include <Python.h>
#include <frameobject.h>  // PyFrame_New: not in Python.h

#include <string>
#include <unordered_map>

namespace ppy {

// The exception being raised, taken out of the thread state (null if none):
// one object from 3.12 on, normalized from the (type, value, traceback)
// triple before.
inline PyObject* TakeRaisedException() {
#if PY_VERSION_HEX >= 0x030C0000
  return PyErr_GetRaisedException();
#else
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return nullptr;
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr && value != nullptr) PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  return value;
#endif
}

// Raises `exception` again (steals it; null raises nothing).
inline void RestoreRaisedException(PyObject* exception) {
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(exception);
#else
  if (exception == nullptr) return;
  PyObject* type = Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(exception)));
  PyErr_Restore(type, exception, PyException_GetTraceback(exception));
#endif
}

// ZeroDivisionError's message for float `%` (3.13 added "by zero").
#if PY_VERSION_HEX >= 0x030D0000
inline constexpr const char kFloatModuloByZero[] = "float modulo by zero";
#else
inline constexpr const char kFloatModuloByZero[] = "float modulo";
#endif

// Whether the interpreter has begun to finalize (3.13 made the function
// public under a new name).
inline bool IsFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// A call of a compiled function counts against the recursion limit as a call
// of the Python function would: on the thread state's counter directly,
// with or without the GIL (in a nogil scope the GIL may be released and the
// C API's guard cannot run: it reads the current thread state, which a
// thread without the GIL does not have; no other thread writes these
// counters). Up to 3.11 one counter served Python frames and C calls; from
// 3.12 Python frames have their own, sys.getrecursionlimit()'s, and C calls
// another with a fixed limit (1,500 on 3.12.1), which Python-to-Python calls
// do not touch: a compiled frame takes the Python one, as a Python frame
// does, so that a raised limit lets typed recursion as deep as Python's.
// (What keeps it from running the C stack out is CallTyped's own check of
// the stack, StackExhausted.) False, with no exception set, at the limit:
// the caller raises, with the GIL, by EnterCompiledFrameAtLimit.
inline bool EnterCompiledFrameOn(PyThreadState* thread) {
#if PY_VERSION_HEX >= 0x030C0000
  if (thread->py_recursion_remaining <= 0) return false;
  --thread->py_recursion_remaining;
#else
  if (thread->recursion_remaining <= 0) return false;
  --thread->recursion_remaining;
#endif
  return true;
}

// Whether a frame may enter below the limit, without counting itself: for a
// frame that calls nothing, whose own count no other frame could see.
inline bool BelowCompiledLimit(PyThreadState* thread) {
#if PY_VERSION_HEX >= 0x030C0000
  return thread->py_recursion_remaining > 0;
#else
  return thread->recursion_remaining > 0;
#endif
}

inline void LeaveCompiledFrameOn(PyThreadState* thread) {
#if PY_VERSION_HEX >= 0x030C0000
  ++thread->py_recursion_remaining;
#else
  ++thread->recursion_remaining;
#endif
}

// A frame at the limit, with the GIL, does what CPython does for a Python
// frame there: RecursionError, unless the error is being handled already
// (recursion_headroom), when 50 frames more are allowed (past those, where
// CPython aborts the process, it raises again). True when the frame may
// enter, its count taken (LeaveCompiledFrameOn gives it back).
inline bool EnterCompiledFrameAtLimit(PyThreadState* thread) {
#if PY_VERSION_HEX >= 0x030C0000
  if (thread->recursion_headroom && thread->py_recursion_remaining >= -50) {
    --thread->py_recursion_remaining;
    return true;
  }
  PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded");
  return false;
#else
  (void)thread;
  return Py_EnterRecursiveCall("") == 0;  // (the same counter, and its headroom)
#endif
}

// Whether `type` has a valid version tag, one that changes whenever the type
// does (what caches keyed by it rely on): 3.13 no longer maintains
// Py_TPFLAGS_VALID_VERSION_TAG ("unused"), and a tag of 0 means none.
inline bool HasValidVersionTag(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030D0000
  return type->tp_version_tag != 0;
#else
  return PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG);
#endif
}

// Adds a traceback entry `filename:line, in funcname` to the exception being
// raised, so that tracebacks show the .ppy line a native frame failed at.
// What CPython's private _PyTraceback_Add does (3.13 no longer declares it):
// a frame of an empty code object whose first line is `line`, which is the
// line a frame that has not started reports. The code object is made once
// per place (a raise in a loop made one per iteration: PyCode_NewEmpty was
// a third of the raise's cost) and kept in a table of at most 4,096, emptied
// when full; the frames share one empty globals dict. The GIL is held.
inline void AddTracebackEntry(const char* funcname, const char* filename, int line) {
  static auto* const codes = new std::unordered_map<std::string, PyObject*>();  // (never freed: used at exit)
  static auto* const key = new std::string();  // (one buffer, reused: no allocation per raise)
  static PyObject* const globals = PyDict_New();
  PyObject* exception = TakeRaisedException();
  key->assign(filename);
  key->push_back('\0');
  key->append(funcname);
  key->push_back('\0');
  key->append(std::to_string(line));
  PyObject* code = nullptr;
  if (auto found = codes->find(*key); found != codes->end()) {
    code = found->second;
  } else {
    if (codes->size() >= 4096) {
      for (auto& entry : *codes) Py_DECREF(entry.second);
      codes->clear();
    }
    code = reinterpret_cast<PyObject*>(PyCode_NewEmpty(filename, funcname, line));
    if (code != nullptr) codes->emplace(*key, code);
  }
  PyFrameObject* frame = code != nullptr && globals != nullptr
                             ? PyFrame_New(PyThreadState_Get(), reinterpret_cast<PyCodeObject*>(code), globals, nullptr)
                             : nullptr;
  if (frame == nullptr) {
    // Out of memory: keep the original exception rather than the new one.
    PyErr_Clear();
    RestoreRaisedException(exception);
    return;
  }
  RestoreRaisedException(exception);
  PyTraceBack_Here(frame);
  Py_DECREF(frame);
}

}  // namespace ppy
