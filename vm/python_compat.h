// What differs between the CPythons ppy supports (3.11, 3.12, 3.13), in one
// place, through public API only.
//
// Header-only, so that the region executor (its own extension, which does not
// link the VM) shares it.
#pragma once

#include <Python.h>
#include <frameobject.h>  // PyFrame_New: not in Python.h

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
// of the Python function would. Up to 3.11 one counter served Python and C
// calls (Py_EnterRecursiveCall); from 3.12 Python frames have their own,
// sys.getrecursionlimit()'s, and Py_EnterRecursiveCall guards only the C stack
// with a fixed limit. A compiled frame is both: it takes one of each, so deep
// typed recursion raises RecursionError where Python's would, and never runs
// the C stack out first. False with RecursionError set. The GIL is held.
inline bool EnterCompiledFrame() {
#if PY_VERSION_HEX >= 0x030C0000
  PyThreadState* thread = PyThreadState_Get();
  if (thread->py_recursion_remaining <= 0) {
    PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded");
    return false;
  }
  --thread->py_recursion_remaining;
  if (Py_EnterRecursiveCall("")) {
    ++thread->py_recursion_remaining;
    return false;
  }
  return true;
#else
  return Py_EnterRecursiveCall("") == 0;
#endif
}

// The same counted on `thread` directly, the calling thread's own state,
// with or without the GIL: what every compiled frame does first (CallTyped),
// as the C API's check does when the thread is not at its limit. In a nogil
// scope the GIL may be released and the C API's guard cannot run (it reads
// the current thread state, which a thread without the GIL does not have);
// no other thread writes these counters. False, with no exception set, when
// out of depth: the caller raises (with the GIL, by EnterCompiledFrame).
inline bool EnterCompiledFrameOn(PyThreadState* thread) {
#if PY_VERSION_HEX >= 0x030C0000
  if (thread->py_recursion_remaining <= 0 || thread->c_recursion_remaining <= 0) return false;
  --thread->py_recursion_remaining;
  --thread->c_recursion_remaining;
#else
  if (thread->recursion_remaining <= 0) return false;
  --thread->recursion_remaining;
#endif
  return true;
}

inline void LeaveCompiledFrameOn(PyThreadState* thread) {
#if PY_VERSION_HEX >= 0x030C0000
  ++thread->c_recursion_remaining;
  ++thread->py_recursion_remaining;
#else
  ++thread->recursion_remaining;
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
// line a frame that has not started reports.
inline void AddTracebackEntry(const char* funcname, const char* filename, int line) {
  PyObject* exception = TakeRaisedException();
  PyObject* globals = PyDict_New();
  PyCodeObject* code = globals ? PyCode_NewEmpty(filename, funcname, line) : nullptr;
  PyFrameObject* frame = code ? PyFrame_New(PyThreadState_Get(), code, globals, nullptr) : nullptr;
  Py_XDECREF(code);
  Py_XDECREF(globals);
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
