// The runtime's slow paths: errors with CPython's messages, buffers, boxing.

#include "vm/runtime.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "vm/exact_scalars.h"
#include "vm/gil.h"
#include "vm/math_table.h"
#include "vm/python_compat.h"
#include "vm/unbox.h"

namespace ppy {

// ---- Element types ---------------------------------------------------------------------

const ElemInfo& InfoOf(ElemType elem) {
  static const ElemInfo kInfo[kElemTypeCount] = {
      {"none", 0, false, false},
#define PPY_ELEM_INFO(id, name, size, is_float, is_signed) {name, size, is_float, is_signed},
      PPY_ELEM_TYPES(PPY_ELEM_INFO)
#undef PPY_ELEM_INFO
  };
  return kInfo[static_cast<int>(elem)];
}

bool FunctionCode::IsLoopHeader(int32_t pc) const {
  return std::binary_search(loop_headers.begin(), loop_headers.end(), pc);
}

bool FunctionCode::IsJitLoopEntry(int32_t pc) const {
  return std::binary_search(runtime->jit_loop_entries.begin(), runtime->jit_loop_entries.end(), pc);
}

constinit thread_local int t_counter_shard PPY_FAST_TLS = -1;

int AssignThreadShard() {
  static std::atomic<int> next{0};
  t_counter_shard = next.fetch_add(1, std::memory_order_relaxed) % kCounterShards;
  return t_counter_shard;
}

FunctionCode::FunctionCode() : runtime(std::make_unique<FunctionRuntime>()) {}

FunctionCode::~FunctionCode() {
  if (objects.empty() || !Py_IsInitialized()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  for (PyObject* object : objects) Py_XDECREF(object);
  PyGILState_Release(gil);
}

FunctionRuntime::~FunctionRuntime() {
  if (jit_memory != nullptr) munmap(jit_memory, jit_size);
  if (special_memory != nullptr) munmap(special_memory, special_size);
  if ((name_object == nullptr && bound_python.function == nullptr) || !Py_IsInitialized()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(name_object);
  Py_XDECREF(bound_python.function);
  Py_XDECREF(bound_python.code);
  PyGILState_Release(gil);
}

// ---- Errors ------------------------------------------------------------------------------

bool RaiseIntOverflow(const FunctionCode& fn, int pc, const char* what) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  const int line = fn.LineAt(pc);
  PyErr_Format(PyExc_OverflowError,
               "%s:%d: int result of %s does not fit in 64 bits (Python ints are unbounded, "
               "ppy's are 64-bit)",
               fn.module ? fn.module->filename.c_str() : "<ppy>", line, what);
  return false;
}

namespace {

// Made by the first RaiseDeoptimize, never while another exception is
// pending (making a class runs Python code: at the recursion limit it would
// replace a RecursionError with its own).
PyObject* g_deoptimize_type = nullptr;

}  // namespace

constinit thread_local uint64_t g_effects PPY_FAST_TLS = 0;

namespace {

// Turns the pending exception (the error a frame that cannot rerun would
// raise) into ppy._ppy.Deoptimize carrying its message, and its type where
// it is no OverflowError (attribute `stands_for`, see DeoptimizeToError).
// Counts nothing.
bool RaisePendingAsDeoptimize() {
  PyObject* error = TakeRaisedException();
  PyObject* message = error ? PyObject_Str(error) : nullptr;
  PyObject* error_type = error ? Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(error))) : nullptr;
  Py_XDECREF(error);
  if (message != nullptr && g_deoptimize_type == nullptr) {
    g_deoptimize_type = PyErr_NewException("ppy._ppy.Deoptimize", PyExc_Exception, nullptr);
  }
  PyObject* deopt = message != nullptr && g_deoptimize_type != nullptr
                        ? PyObject_CallOneArg(g_deoptimize_type, message) : nullptr;
  Py_XDECREF(message);
  if (deopt != nullptr && error_type != PyExc_OverflowError &&
      PyObject_SetAttrString(deopt, "stands_for", error_type) < 0) {
    Py_CLEAR(deopt);
  }
  Py_XDECREF(error_type);
  if (deopt == nullptr) return false;  // something else is raised: it stands
  PyErr_SetObject(g_deoptimize_type, deopt);
  Py_DECREF(deopt);
  return false;
}

// Raises ppy._ppy.Deoptimize for an int result beyond 64 bits at pc (`what`,
// any string: the message copies it), standing for RaiseIntOverflow's
// OverflowError. Counts nothing.
bool RaiseDeoptimizeException(const FunctionCode& fn, int pc, const char* what) {
  RaiseIntOverflow(fn, pc, what);
  return RaisePendingAsDeoptimize();
}

// Counts a deoptimization of fn's at pc for `ppy run --trace`, which reads
// `what` later: a static string.
void RecordDeoptimization(const FunctionCode& fn, int pc, const char* what) {
  if (fn.runtime == nullptr) return;
  ++fn.runtime->deopts;
  fn.runtime->deopt_pc.store(pc, std::memory_order_relaxed);
  fn.runtime->deopt_what.store(what, std::memory_order_relaxed);
}

}  // namespace

bool RaiseDeoptimize(const FunctionCode& fn, int pc, const char* what) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  RecordDeoptimization(fn, pc, what);
  return RaiseDeoptimizeException(fn, pc, what);
}

bool RaiseGlobalTypeError(PyObject* name, const char* expected, PyObject* value) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  if (PyLong_CheckExact(value) && std::strcmp(expected, "int") == 0) {
    PyErr_Format(PyExc_TypeError, "global '%U' is annotated int but holds an int beyond 64 bits", name);
  } else {
    PyErr_Format(PyExc_TypeError, "global '%U' is annotated %s but holds %s", name, expected, Py_TYPE(value)->tp_name);
  }
  return false;
}

bool RaiseDeoptimizeForGlobal(const FunctionCode& fn, int pc, PyObject* name, const char* expected, PyObject* value) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  RecordDeoptimization(fn, pc, kGlobalDeoptimization);
  RaiseGlobalTypeError(name, expected, value);
  return RaisePendingAsDeoptimize();
}

bool DeoptimizePending() {
  return g_deoptimize_type != nullptr && PyErr_ExceptionMatches(g_deoptimize_type);
}

void DeoptimizeToError() {
  PyObject* deopt = TakeRaisedException();
  PyObject* message = deopt ? PyObject_Str(deopt) : nullptr;
  PyObject* stands_for = deopt != nullptr && message != nullptr ? PyObject_GetAttrString(deopt, "stands_for") : nullptr;
  if (stands_for == nullptr) PyErr_Clear();  // (an int result's: OverflowError)
  Py_XDECREF(deopt);
  if (message != nullptr) {
    const bool typed = stands_for != nullptr && PyExceptionClass_Check(stands_for);
    PyErr_SetObject(typed ? stands_for : PyExc_OverflowError, message);
    Py_DECREF(message);
  }
  Py_XDECREF(stands_for);
}

bool RaiseGrownInt(const FunctionCode& fn, int pc, const char* what, PyObject* value) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  // (No deoptimization of fn's: its result goes on as a Python int. `what`
  // may be a temporary string, which only the message copies.)
  RaiseDeoptimizeException(fn, pc, what);
  if (!DeoptimizePending()) return false;
  PyObject* deopt = TakeRaisedException();
  if (PyObject_SetAttrString(deopt, "grown", value) < 0) {
    Py_DECREF(deopt);  // the error of setting it stands
    return false;
  }
  RestoreRaisedException(deopt);
  return false;
}

namespace {

// The pending Deoptimize (a new reference) and the grown int it carries (a
// new reference, or null), with the exception taken out of the thread state.
PyObject* TakeDeoptimize(PyObject** grown) {
  *grown = nullptr;
  if (!DeoptimizePending()) return nullptr;
  PyObject* deopt = TakeRaisedException();
  if (deopt != nullptr && PyObject_HasAttrString(deopt, "grown")) *grown = PyObject_GetAttrString(deopt, "grown");
  PyErr_Clear();
  return deopt;
}

}  // namespace

bool GrownIntPending() {
  PyObject* grown;
  PyObject* deopt = TakeDeoptimize(&grown);
  if (deopt == nullptr) return false;
  const bool pending = grown != nullptr;
  Py_XDECREF(grown);
  RestoreRaisedException(deopt);
  return pending;
}

PyObject* TakeGrownInt() {
  PyObject* grown;
  PyObject* deopt = TakeDeoptimize(&grown);
  if (deopt == nullptr) return nullptr;
  if (grown == nullptr) {
    RestoreRaisedException(deopt);
    return nullptr;
  }
  Py_DECREF(deopt);
  return grown;
}

void ForgetGrownInt() {
  PyObject* grown;
  PyObject* deopt = TakeDeoptimize(&grown);
  if (deopt == nullptr) return;
  if (grown != nullptr) {
    Py_DECREF(grown);
    if (PyObject_DelAttrString(deopt, "grown") < 0) PyErr_Clear();
  }
  RestoreRaisedException(deopt);
}

bool RaiseZeroDivision(const char* message) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  PyErr_SetString(PyExc_ZeroDivisionError, message);
  return false;
}

bool RaiseValueError(const char* message) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  PyErr_SetString(PyExc_ValueError, message);
  return false;
}

bool RaiseIndexError(const BufferView& view, int64_t index, bool store) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  switch (view.exporter) {
    case Exporter::kArray:
      PyErr_SetString(PyExc_IndexError, store ? "array assignment index out of range" : "array index out of range");
      break;
    case Exporter::kNumpy:
      PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis 0 with size %lld",
                   static_cast<long long>(index), static_cast<long long>(view.length));
      break;
    case Exporter::kTorch:
      PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for dimension 0 with size %lld",
                   static_cast<long long>(index), static_cast<long long>(view.length));
      break;
    case Exporter::kBytearray:
      PyErr_SetString(PyExc_IndexError, "bytearray index out of range");
      break;
    case Exporter::kBytes:
      PyErr_SetString(PyExc_IndexError, "index out of range");
      break;
    case Exporter::kMemoryview:
    case Exporter::kOther:
      PyErr_SetString(PyExc_IndexError, "index out of bounds on dimension 1");
      break;
  }
  return false;
}

bool RaiseGrownIndexError(const BufferView& view) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  switch (view.exporter) {
    case Exporter::kNumpy:
      PyErr_SetString(PyExc_IndexError,
                      "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean "
                      "arrays are valid indices");
      break;
    case Exporter::kTorch:
      PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
      break;
    default:  // array.array, bytes, bytearray, memoryview: PyNumber_AsSsize_t's words
      PyErr_SetString(PyExc_IndexError, "cannot fit 'int' into an index-sized integer");
      break;
  }
  return false;
}

bool RaiseAxisIndexError(const BufferView& view, int axis, int64_t index) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  switch (view.exporter) {
    case Exporter::kTorch:
      PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for dimension %d with size %lld",
                   static_cast<long long>(index), axis, static_cast<long long>(view.shape[axis]));
      break;
    case Exporter::kMemoryview:
      PyErr_Format(PyExc_IndexError, "index out of bounds on dimension %d", axis + 1);
      break;
    default:  // numpy, and numpy's words for any other exporter
      PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %d with size %lld",
                   static_cast<long long>(index), axis, static_cast<long long>(view.shape[axis]));
      break;
  }
  return false;
}

bool RaiseBadOffset(const BufferView& view, int64_t offset) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  PyErr_Format(PyExc_SystemError, "ppy: element offset %lld is outside the view (%lld..%lld): bad bytecode",
               static_cast<long long>(offset), static_cast<long long>(view.low), static_cast<long long>(view.high));
  return false;
}

bool SetViewGeometry(BufferView* view, int ndim, const int64_t* shape, const int64_t* strides) {
  view->ndim = ndim;
  view->low = 0;
  view->high = 0;
  bool empty = false, overflow = false;
  for (int axis = 0; axis < ndim; ++axis) {
    view->shape[axis] = shape[axis];
    // The innermost axis of length 0 or 1 is never stepped along: its stride
    // is 1, so that machine code sees such a view as contiguous.
    view->strides[axis] = shape[axis] <= 1 && axis == ndim - 1 ? 1 : strides[axis];
    if (shape[axis] <= 0) {
      empty = true;
      continue;
    }
    // An exporter's memory spans less than 2**63 elements; one that claims
    // more (a C extension's bug) is refused rather than indexed.
    int64_t reach;
    int64_t& bound = view->strides[axis] < 0 ? view->low : view->high;
    overflow |= __builtin_mul_overflow(shape[axis] - 1, view->strides[axis], &reach) ||
                __builtin_add_overflow(bound, reach, &bound);
  }
  view->length = shape[0];
  if (empty) view->low = 0, view->high = -1;
  if (overflow) {
    PyErr_SetString(PyExc_BufferError, "ppy: the buffer's shape and strides span more than 2**63 elements");
    return false;
  }
  return true;
}

bool RaiseReadOnly(const BufferView& view) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  switch (view.exporter) {
    case Exporter::kNumpy:
      PyErr_SetString(PyExc_ValueError, "assignment destination is read-only");
      break;
    case Exporter::kBytes:
      PyErr_SetString(PyExc_TypeError, "'bytes' object does not support item assignment");
      break;
    default:
      PyErr_SetString(PyExc_TypeError, "cannot modify read-only memory");
      break;
  }
  return false;
}

namespace {

// array.array's message for a value a 64-bit element cannot hold (of struct
// format `format`): 'q' and 'Q' convert it themselves, 'l' and 'L' through a
// C long.
const char* ArrayWideMessage(char format, bool negative) {
  switch (format) {
    case 'l': return "Python int too large to convert to C long";
    case 'L':
      return negative ? "can't convert negative value to unsigned int"
                      : "Python int too large to convert to C unsigned long";
    case 'Q': return negative ? "can't convert negative int to unsigned" : "int too big to convert";
    default: return "int too big to convert";
  }
}

// array.array's message for `value` outside its element type. Its 'b' and
// 'H' items parse a wider C int first ('b' a short, 'H' an int: arraymodule.c's
// b_setitem, HH_setitem) and check the item's own range after, so a value
// beyond the wider one gets the wider one's message.
const char* ArrayRangeMessage(ElemType elem, char format, int64_t value) {
  const bool too_big = value > 0;
  switch (elem) {
    case ElemType::kI8:
      if (value < SHRT_MIN || value > SHRT_MAX) return ArrayRangeMessage(ElemType::kI16, format, value);
      return too_big ? "signed char is greater than maximum" : "signed char is less than minimum";
    case ElemType::kU8:
      return too_big ? "unsigned byte integer is greater than maximum" : "unsigned byte integer is less than minimum";
    case ElemType::kI16:
      return too_big ? "signed short integer is greater than maximum" : "signed short integer is less than minimum";
    case ElemType::kU16:
      if (value < INT_MIN || value > INT_MAX) return ArrayRangeMessage(ElemType::kI32, format, value);
      return too_big ? "unsigned short is greater than maximum" : "unsigned short is less than minimum";
    case ElemType::kI32:
      return too_big ? "signed integer is greater than maximum" : "signed integer is less than minimum";
    case ElemType::kU32: return too_big ? "unsigned int is greater than maximum" : "can't convert negative value to unsigned int";
    default: return ArrayWideMessage(format, value < 0);  // (64 bits)
  }
}

const char* NumpyTypeName(ElemType elem) {
  switch (elem) {
    case ElemType::kI8: return "int8";
    case ElemType::kU8: return "uint8";
    case ElemType::kBool: return "bool";
    case ElemType::kI16: return "int16";
    case ElemType::kU16: return "uint16";
    case ElemType::kI32: return "int32";
    case ElemType::kU32: return "uint32";
    case ElemType::kI64: return "int64";
    default: return "uint64";
  }
}

// The ValueError of a bytearray, or of a memoryview (and any other
// exporter), for a value its element cannot hold.
bool RaiseInvalidElementValue(const BufferView& view) {
  if (view.exporter == Exporter::kBytearray) {
    PyErr_SetString(PyExc_ValueError, "byte must be in range(0, 256)");
  } else {
    PyErr_Format(PyExc_ValueError, "memoryview: invalid value for format '%c'", view.format);
  }
  return false;
}

}  // namespace

bool RaiseElementOverflow(const BufferView& view, int64_t value) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  switch (view.exporter) {
    case Exporter::kArray:
      PyErr_SetString(PyExc_OverflowError, ArrayRangeMessage(view.elem, view.format, value));
      return false;
    case Exporter::kNumpy:
      PyErr_Format(PyExc_OverflowError, "Python integer %lld out of bounds for %s", static_cast<long long>(value),
                   NumpyTypeName(view.elem));
      return false;
    default:
      return RaiseInvalidElementValue(view);
  }
}

bool RaiseGrownElementOverflow(const BufferView& view, PyObject* value) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  switch (view.exporter) {
    case Exporter::kArray:
      // array.array converts a 'q' or 'Q' element itself, any other through
      // a C long.
      if (view.elem == ElemType::kI64 || view.elem == ElemType::kU64) {
        PyErr_SetString(PyExc_OverflowError, ArrayWideMessage(view.format, _PyLong_Sign(value) < 0));
      } else {
        PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C long");
      }
      return false;
    case Exporter::kNumpy:
      PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C long");
      return false;
    case Exporter::kTorch:
      PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
      return false;
    default:
      return RaiseInvalidElementValue(view);
  }
}

bool RaiseBoolMaskIndex(const BufferView& view) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  PyErr_Format(PyExc_TypeError,
               "a bool index into a %.200s selects by mask there, which ppy's element access does not do; write "
               "int(...) for an element",
               Py_TYPE(view.owner)->tp_name);
  return false;
}

bool RaiseUnbound(PyObject* name) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  PyErr_Format(PyExc_UnboundLocalError, "cannot access local variable '%U' where it is not associated with a value",
               name);
  return false;
}

bool RaiseNegativePower(int64_t base) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  if (base == 0) {
    PyErr_SetString(PyExc_ZeroDivisionError, "0.0 cannot be raised to a negative power");
  } else {
    PyErr_SetString(PyExc_ValueError,
                    "int ** negative int is a float in Python; typed code needs float(x) ** y");
  }
  return false;
}

bool FloatToIntSlow(const FunctionCode& fn, int pc, double x, int64_t* out) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  if (std::isnan(x)) return RaiseValueError("cannot convert float NaN to integer");
  if (std::isinf(x)) {
    PyErr_SetString(PyExc_OverflowError, "cannot convert float infinity to integer");
    return false;
  }
  if (x == -9223372036854775808.0) {
    *out = INT64_MIN;
    return true;
  }
  return RaiseIntOverflow(fn, pc, "int()");
}

bool TrueDivideSlow(int64_t x, int64_t y, double* out) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  PyObject* left = PyLong_FromLongLong(x);
  PyObject* right = PyLong_FromLongLong(y);
  PyObject* quotient = (left && right) ? PyNumber_TrueDivide(left, right) : nullptr;
  Py_XDECREF(left);
  Py_XDECREF(right);
  if (quotient == nullptr) return false;
  *out = PyFloat_AsDouble(quotient);
  Py_DECREF(quotient);
  return !PyErr_Occurred();
}

bool PowFloatSlow(double x, double y, double* out) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  PyObject* left = PyFloat_FromDouble(x);
  PyObject* right = PyFloat_FromDouble(y);
  PyObject* power = (left && right) ? PyNumber_Power(left, right, Py_None) : nullptr;
  Py_XDECREF(left);
  Py_XDECREF(right);
  if (power == nullptr) return false;
  if (!PyFloat_Check(power)) {
    Py_DECREF(power);
    return RaiseValueError("a negative float to a fractional power is a complex number in Python, "
                           "which this typed float power cannot hold");
  }
  *out = PyFloat_AS_DOUBLE(power);
  Py_DECREF(power);
  return true;
}

bool MathSlow(int fn, double x, double y, double* out) {
  TakeGil();  // (a nogil thread: see vm/gil.h)
  static PyObject* math_module = nullptr;
  if (math_module == nullptr) {
    math_module = PyImport_ImportModule("math");
    if (math_module == nullptr) return false;
  }
  const MathInfo& info = kMathInfo[fn];
  PyObject* function = PyObject_GetAttrString(math_module, info.name);
  if (function == nullptr) return false;
  PyObject* result;
  if (info.shape == MathShape::FF) {
    PyObject* a = PyFloat_FromDouble(x);
    PyObject* b = PyFloat_FromDouble(y);
    result = (a && b) ? PyObject_CallFunctionObjArgs(function, a, b, nullptr) : nullptr;
    Py_XDECREF(a);
    Py_XDECREF(b);
  } else {
    PyObject* a = PyFloat_FromDouble(x);
    result = a ? PyObject_CallOneArg(function, a) : nullptr;
    Py_XDECREF(a);
  }
  Py_DECREF(function);
  if (result == nullptr) return false;
  *out = PyFloat_AsDouble(result);
  Py_DECREF(result);
  return !PyErr_Occurred();
}

// ---- Buffers --------------------------------------------------------------------------------

bool ReadU64Slow(const BufferView& view, int64_t index, int64_t* out) {
  uint64_t value;
  std::memcpy(&value, view.data + index * 8, 8);
  if (value > static_cast<uint64_t>(INT64_MAX)) {
    TakeGil();
    PyErr_Format(PyExc_OverflowError, "u64 element %llu does not fit in a 64-bit int",
                 static_cast<unsigned long long>(value));
    return false;
  }
  *out = static_cast<int64_t>(value);
  return true;
}

bool LoadIntElement(const BufferView& view, int64_t index, int64_t* out) {
  const char* p = view.data;
  switch (view.elem) {
    case ElemType::kI64: *out = reinterpret_cast<const int64_t*>(p)[index]; return true;
    case ElemType::kI32: *out = reinterpret_cast<const int32_t*>(p)[index]; return true;
    case ElemType::kI16: *out = reinterpret_cast<const int16_t*>(p)[index]; return true;
    case ElemType::kI8: *out = reinterpret_cast<const int8_t*>(p)[index]; return true;
    case ElemType::kU32: *out = reinterpret_cast<const uint32_t*>(p)[index]; return true;
    case ElemType::kU16: *out = reinterpret_cast<const uint16_t*>(p)[index]; return true;
    case ElemType::kU8:
    case ElemType::kBool: *out = reinterpret_cast<const uint8_t*>(p)[index]; return true;  // (a bool: 0 or 1)
    case ElemType::kU64: return ReadU64Slow(view, index, out);
    default: return false;
  }
}

bool StoreIntElement(const BufferView& view, int64_t index, int64_t value) {
  char* p = view.data;
  auto fits = [&](int64_t low, int64_t high) { return value >= low && value <= high; };
  switch (view.elem) {
    case ElemType::kI64: reinterpret_cast<int64_t*>(p)[index] = value; return true;
    case ElemType::kU64:
      if (value < 0) return RaiseElementOverflow(view, value);
      reinterpret_cast<uint64_t*>(p)[index] = static_cast<uint64_t>(value);
      return true;
    case ElemType::kI32:
      if (!fits(INT32_MIN, INT32_MAX)) return RaiseElementOverflow(view, value);
      reinterpret_cast<int32_t*>(p)[index] = static_cast<int32_t>(value);
      return true;
    case ElemType::kU32:
      if (!fits(0, UINT32_MAX)) return RaiseElementOverflow(view, value);
      reinterpret_cast<uint32_t*>(p)[index] = static_cast<uint32_t>(value);
      return true;
    case ElemType::kI16:
      if (!fits(INT16_MIN, INT16_MAX)) return RaiseElementOverflow(view, value);
      reinterpret_cast<int16_t*>(p)[index] = static_cast<int16_t>(value);
      return true;
    case ElemType::kU16:
      if (!fits(0, UINT16_MAX)) return RaiseElementOverflow(view, value);
      reinterpret_cast<uint16_t*>(p)[index] = static_cast<uint16_t>(value);
      return true;
    case ElemType::kI8:
      if (!fits(INT8_MIN, INT8_MAX)) return RaiseElementOverflow(view, value);
      reinterpret_cast<int8_t*>(p)[index] = static_cast<int8_t>(value);
      return true;
    case ElemType::kU8:
      if (!fits(0, UINT8_MAX)) return RaiseElementOverflow(view, value);
      reinterpret_cast<uint8_t*>(p)[index] = static_cast<uint8_t>(value);
      return true;
    case ElemType::kBool: reinterpret_cast<uint8_t*>(p)[index] = value != 0; return true;  // (a bool: see StorableIn)
    default: return false;
  }
}

double LoadFloatElement(const BufferView& view, int64_t index) {
  if (view.elem == ElemType::kF32) return reinterpret_cast<const float*>(view.data)[index];
  return reinterpret_cast<const double*>(view.data)[index];
}

void StoreFloatElement(const BufferView& view, int64_t index, double value) {
  if (view.elem == ElemType::kF32) {
    reinterpret_cast<float*>(view.data)[index] = static_cast<float>(value);
  } else {
    reinterpret_cast<double*>(view.data)[index] = value;
  }
}

namespace {

// Whether obj.shape raises: the exporters Python knows have no shape
// attribute (array.array is matched by its exact type name, so a subclass
// asks), anything else is asked, once per borrow.
bool Shapeless(PyObject* obj, Exporter exporter) {
  switch (exporter) {
    case Exporter::kNumpy:
    case Exporter::kMemoryview:
    case Exporter::kTorch: return false;
    case Exporter::kArray: return true;
    default: break;
  }
  if (PyByteArray_CheckExact(obj) || PyBytes_CheckExact(obj)) return true;
  return PyObject_HasAttrString(obj, "shape") == 0;  // (an error reading it counts as none: SHAPE_U raises it)
}

Exporter ExporterOf(PyObject* obj) {
  if (PyMemoryView_Check(obj)) return Exporter::kMemoryview;
  if (PyByteArray_Check(obj)) return Exporter::kBytearray;
  if (PyBytes_Check(obj)) return Exporter::kBytes;
  const char* name = Py_TYPE(obj)->tp_name;
  if (std::strcmp(name, "array.array") == 0) return Exporter::kArray;
  if (std::strcmp(name, "numpy.ndarray") == 0) return Exporter::kNumpy;
  return Exporter::kOther;
}

// The element type a struct-module format describes, for native or
// little-endian byte order on this machine. kNone for anything else.
ElemType ElemTypeOfFormat(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return itemsize == 1 ? ElemType::kU8 : ElemType::kNone;
  if (*format == '@' || *format == '=' || *format == '<') ++format;
  if (format[0] == '\0' || format[1] != '\0') return ElemType::kNone;
  switch (format[0]) {
    case 'd': return itemsize == 8 ? ElemType::kF64 : ElemType::kNone;
    case 'f': return itemsize == 4 ? ElemType::kF32 : ElemType::kNone;
    case 'b': return ElemType::kI8;
    case 'B': return ElemType::kU8;
    case '?': return itemsize == 1 ? ElemType::kBool : ElemType::kNone;
    case 'h': return ElemType::kI16;
    case 'H': return ElemType::kU16;
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      return itemsize == 8 ? ElemType::kI64 : itemsize == 4 ? ElemType::kI32 : ElemType::kNone;
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      return itemsize == 8 ? ElemType::kU64 : itemsize == 4 ? ElemType::kU32 : ElemType::kNone;
    default: return ElemType::kNone;
  }
}

// "Buffer[f64]" as the user wrote it.
std::string AnnotationOf(ElemType elem, int ndim = 1) {
  const std::string dims = ndim == 1 ? "" : ", " + std::to_string(ndim);
  switch (elem) {
    case ElemType::kF64: return "Buffer[float" + dims + "] (format 'd')";
    case ElemType::kI64: return "Buffer[int" + dims + "] (format 'q')";
    default: return std::string("Buffer[") + InfoOf(elem).name + dims + "]";
  }
}

bool AcquireTorchTensor(PyObject* obj, const FunctionCode& fn, const Param& param, BufferView* view);

// What a buffer error calls the name it is about.
const char* RoleOf(const Param& param) { return param.is_local ? "local" : "argument"; }

}  // namespace

namespace {
bool TorchElemType(PyObject* obj, ElemType* elem);

// A torch tensor (or parameter), which has no buffer export: ppy reads its
// memory itself (AcquireTorchTensor).
bool IsTorchTensor(PyObject* obj) {
  const char* type_name = Py_TYPE(obj)->tp_name;
  return std::strcmp(type_name, "Tensor") == 0 || std::strcmp(type_name, "Parameter") == 0;
}
}  // namespace

bool ExportsElements(PyObject* obj) { return PyObject_CheckBuffer(obj) || IsTorchTensor(obj); }

ElemType ElemTypeOfObject(PyObject* obj) {
  if (!PyObject_CheckBuffer(obj)) {
    ElemType elem = ElemType::kNone;
    if (IsTorchTensor(obj) && !TorchElemType(obj, &elem)) {
      PyErr_Clear();
    }
    return elem;
  }
  Py_buffer raw;
  if (PyObject_GetBuffer(obj, &raw, PyBUF_FORMAT | PyBUF_STRIDES) < 0) {
    PyErr_Clear();
    return ElemType::kNone;
  }
  ElemType elem = ElemTypeOfFormat(raw.format, raw.itemsize);
  PyBuffer_Release(&raw);
  return elem;
}

bool AcquireBuffer(PyObject* obj, const FunctionCode& fn, const Param& param, Py_buffer* raw, BufferView* view) {
  raw->obj = nullptr;
  if (!PyObject_CheckBuffer(obj)) {
    if (IsTorchTensor(obj)) return AcquireTorchTensor(obj, fn, param, view);
    PyErr_Format(PyExc_TypeError, "%s() %s '%s' must be %s, not %.200s (it has no buffer interface)",
                 fn.name.c_str(), RoleOf(param), param.name.c_str(), AnnotationOf(param.elem, param.ndim).c_str(),
                 Py_TYPE(obj)->tp_name);
    return false;
  }
  // Any strides: a view the exporter describes by shape and strides (no
  // suboffsets: PIL-style arrays of pointers are refused by the exporter).
  int flags = PyBUF_FORMAT | PyBUF_STRIDES;
  bool readonly = false;
  int status = PyObject_GetBuffer(obj, raw, flags | (param.writes ? PyBUF_WRITABLE : 0));
  if (status < 0 && param.writes) {
    // A read-only exporter is accepted; a store into it raises, as in CPython.
    PyErr_Clear();
    readonly = true;
    status = PyObject_GetBuffer(obj, raw, flags);
  }
  if (status < 0) {
    // The exporter's reason (not contiguous, ...) becomes a TypeError naming the parameter.
    PyObject* exporter_error = TakeRaisedException();
    PyObject* reason = exporter_error ? PyObject_Str(exporter_error) : nullptr;
    PyErr_Format(PyExc_TypeError, "%s() %s '%s' must be a %s: %s",
                 fn.name.c_str(), RoleOf(param), param.name.c_str(), AnnotationOf(param.elem, param.ndim).c_str(),
                 reason ? PyUnicode_AsUTF8(reason) : "no buffer");
    Py_XDECREF(reason);
    Py_XDECREF(exporter_error);
    raw->obj = nullptr;
    return false;
  }
  ElemType elem = ElemTypeOfFormat(raw->format, raw->itemsize);
  // A 0-d exporter (a numpy scalar) reports ndim 0; one without shape is 1-d.
  const int ndim = raw->shape ? raw->ndim : 1;
  bool strides_fit = true;
  for (int axis = 0; raw->strides && axis < ndim && ndim <= kMaxDims; ++axis) {
    strides_fit = strides_fit && raw->strides[axis] % raw->itemsize == 0;
  }
  if (ndim != param.ndim || elem != param.elem || !strides_fit) {
    if (ndim != param.ndim) {
      PyErr_Format(PyExc_TypeError, "%s() %s '%s' must be a %s, got %d dimension%s", fn.name.c_str(), RoleOf(param),
                   param.name.c_str(), AnnotationOf(param.elem, param.ndim).c_str(), ndim, ndim == 1 ? "" : "s");
    } else if (elem != param.elem) {
      PyErr_Format(PyExc_TypeError, "%s() %s '%s' must be %s, got a buffer of format '%s' (itemsize %zd)",
                   fn.name.c_str(), RoleOf(param), param.name.c_str(), AnnotationOf(param.elem, param.ndim).c_str(),
                   raw->format ? raw->format : "B", raw->itemsize);
    } else {
      PyErr_Format(PyExc_TypeError, "%s() %s '%s' must be %s with strides that are whole elements", fn.name.c_str(),
                   RoleOf(param), param.name.c_str(), AnnotationOf(param.elem, param.ndim).c_str());
    }
    PyBuffer_Release(raw);
    raw->obj = nullptr;
    return false;
  }
  int64_t shape[kMaxDims], strides[kMaxDims];
  for (int axis = 0; axis < ndim; ++axis) {
    shape[axis] = raw->shape ? raw->shape[axis] : raw->len / raw->itemsize;
    strides[axis] = raw->strides ? raw->strides[axis] / raw->itemsize : 1;
  }
  if (!raw->strides && ndim > 1) {  // C order
    for (int axis = ndim - 2; axis >= 0; --axis) strides[axis] = strides[axis + 1] * shape[axis + 1];
  }
  view->data = static_cast<char*>(raw->buf);
  if (!SetViewGeometry(view, ndim, shape, strides)) {
    PyBuffer_Release(raw);
    raw->obj = nullptr;
    return false;
  }
  view->elem = elem;
  view->exporter = ExporterOf(obj);
  view->shapeless = Shapeless(obj, view->exporter);
  view->readonly = readonly || raw->readonly;
  view->format = raw->format ? raw->format[std::strlen(raw->format) - 1] : 'B';
  view->owner = obj;
  return true;
}

namespace {

// A tensor's dtype as an element type (kNone for float16 and the others ppy
// does not read); false with the exception set if it cannot be read.
bool TorchElemType(PyObject* obj, ElemType* elem) {
  PyObject* dtype = PyObject_GetAttrString(obj, "dtype");
  if (dtype == nullptr) return false;
  PyObject* dtype_name = PyObject_Str(dtype);
  Py_DECREF(dtype);
  if (dtype_name == nullptr) return false;
  const char* name = PyUnicode_AsUTF8(dtype_name);
  static const struct {
    const char* torch_name;
    ElemType elem;
  } kTorchTypes[] = {{"torch.float64", ElemType::kF64}, {"torch.float32", ElemType::kF32},
                     {"torch.int64", ElemType::kI64},   {"torch.int32", ElemType::kI32},
                     {"torch.int16", ElemType::kI16},   {"torch.int8", ElemType::kI8},
                     {"torch.uint8", ElemType::kU8},    {"torch.uint16", ElemType::kU16},
                     {"torch.uint32", ElemType::kU32},  {"torch.uint64", ElemType::kU64},
                     {"torch.bool", ElemType::kBool}};
  *elem = ElemType::kNone;
  for (const auto& entry : kTorchTypes) {
    if (name != nullptr && std::strcmp(name, entry.torch_name) == 0) *elem = entry.elem;
  }
  Py_DECREF(dtype_name);
  return true;
}

bool TorchGradEnabled() {
  PyObject* torch = PyImport_ImportModule("torch");
  PyObject* enabled = torch ? PyObject_CallMethod(torch, "is_grad_enabled", nullptr) : nullptr;
  Py_XDECREF(torch);
  int result = enabled ? PyObject_IsTrue(enabled) : 1;
  Py_XDECREF(enabled);
  PyErr_Clear();
  return result != 0;
}

// A CPU torch tensor has no buffer interface; its storage is described by
// data_ptr(), numel() and dtype, read through the tensor's own methods so that
// ppy never links against torch.
bool AcquireTorchTensor(PyObject* obj, const FunctionCode& fn, const Param& param, BufferView* view) {
  auto fail = [&](const char* why) {
    if (!PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError, "%s() %s '%s' must be %s: the tensor %s", fn.name.c_str(), RoleOf(param),
                   param.name.c_str(), AnnotationOf(param.elem, param.ndim).c_str(), why);
    }
    return false;
  };
  PyObject* device = PyObject_GetAttrString(obj, "device");
  if (device == nullptr) return false;
  PyObject* device_type = PyObject_GetAttrString(device, "type");
  Py_DECREF(device);
  if (device_type == nullptr) return false;
  bool on_cpu = PyUnicode_Check(device_type) && PyUnicode_CompareWithASCIIString(device_type, "cpu") == 0;
  Py_DECREF(device_type);
  if (!on_cpu) return fail("is not on the CPU");
  PyObject* contiguous = PyObject_CallMethod(obj, "is_contiguous", nullptr);
  if (contiguous == nullptr) return false;
  int is_contiguous = PyObject_IsTrue(contiguous);
  Py_DECREF(contiguous);
  if (is_contiguous != 1) return fail("is not contiguous");
  // A tensor with a lazy negation or conjugation stores other values than it
  // holds; Python's indexing resolves them, raw memory would not.
  for (const char* lazy : {"is_neg", "is_conj"}) {
    PyObject* flag = PyObject_CallMethod(obj, lazy, nullptr);
    if (flag == nullptr) return false;
    int set = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    if (set != 0) return fail("is a lazy negated or conjugated view (call .resolve_neg() or .resolve_conj() first)");
  }
  // Autograd cannot see writes through memory: a function that may store into
  // the buffer refuses a tensor that requires grad while grad mode is on (where
  // Python's own item assignment would be recorded, or refused for a leaf).
  if (param.writes) {
    PyObject* requires_grad = PyObject_GetAttrString(obj, "requires_grad");
    if (requires_grad == nullptr) return false;
    int needs_grad = PyObject_IsTrue(requires_grad);
    Py_DECREF(requires_grad);
    if (needs_grad == 1 && TorchGradEnabled()) {
      return fail("requires grad, and autograd cannot record writes ppy makes to it (pass .detach(), or call "
                  "under torch.no_grad())");
    }
  }
  PyObject* dim = PyObject_CallMethod(obj, "dim", nullptr);
  if (dim == nullptr) return false;
  long ndim = PyLong_AsLong(dim);
  Py_DECREF(dim);
  if (ndim != param.ndim) {
    return fail(ndim == 1 ? "has 1 dimension" : ("has " + std::to_string(ndim) + " dimensions").c_str());
  }
  int64_t shape[kMaxDims], strides[kMaxDims];
  PyObject* sizes = PyObject_GetAttrString(obj, "shape");
  if (sizes == nullptr) return false;
  for (long axis = 0; axis < ndim; ++axis) {
    PyObject* size = PySequence_GetItem(sizes, axis);
    shape[axis] = size ? PyLong_AsLongLong(size) : -1;
    Py_XDECREF(size);
  }
  Py_DECREF(sizes);
  if (PyErr_Occurred()) return false;
  strides[ndim - 1] = 1;  // contiguous (checked above)
  for (long axis = ndim - 2; axis >= 0; --axis) strides[axis] = strides[axis + 1] * shape[axis + 1];
  ElemType elem = ElemType::kNone;
  if (!TorchElemType(obj, &elem)) return false;
  if (elem != param.elem) return fail("has the wrong dtype");
  PyObject* pointer = PyObject_CallMethod(obj, "data_ptr", nullptr);
  if (pointer == nullptr) return false;
  void* data = PyLong_AsVoidPtr(pointer);
  Py_DECREF(pointer);
  PyObject* numel = PyObject_CallMethod(obj, "numel", nullptr);
  if (numel == nullptr) return false;
  long long length = PyLong_AsLongLong(numel);
  Py_DECREF(numel);
  if (PyErr_Occurred()) return false;
  // The storage behind data_ptr(), held for the call (BufferView::storage).
  PyObject* storage = PyObject_CallMethod(obj, "untyped_storage", nullptr);
  if (storage == nullptr) return false;
  Py_XSETREF(view->storage, storage);
  view->function = &fn;
  view->param = &param;
  view->data = static_cast<char*>(data);
  if (!SetViewGeometry(view, static_cast<int>(ndim), shape, strides)) return false;
  int64_t count = 1;
  for (long axis = 0; axis < ndim; ++axis) count *= shape[axis];
  if (count != length) return fail("has a shape that disagrees with numel()");
  view->elem = elem;
  view->exporter = Exporter::kTorch;
  view->shapeless = false;
  view->readonly = false;
  view->owner = obj;
  return true;
}

// The torch views this thread's calls hold, oldest first.
thread_local std::vector<BufferView*> t_torch_views;

// Reads an int method result (data_ptr(), numel()) of a tensor; false with the exception set.
bool TensorInt(PyObject* tensor, const char* method, long long* out) {
  PyObject* value = PyObject_CallMethod(tensor, method, nullptr);
  if (value == nullptr) return false;
  *out = PyLong_AsLongLong(value);
  Py_DECREF(value);
  return !(*out == -1 && PyErr_Occurred());
}

// Checks one view against its tensor; a tensor whose memory or length moved
// is borrowed again, with every check its parameter makes at the call.
bool RefreshTorchView(BufferView* view) {
  long long data = 0, length = 0;
  if (!TensorInt(view->owner, "data_ptr", &data) || !TensorInt(view->owner, "numel", &length)) return false;
  int64_t count = 1;
  for (int axis = 0; axis < view->ndim; ++axis) count *= view->shape[axis];
  if (reinterpret_cast<char*>(data) == view->data && length == count) return true;
  BufferView fresh = *view;
  fresh.storage = nullptr;
  if (AcquireTorchTensor(view->owner, *view->function, *view->param, &fresh)) {
    Py_XSETREF(view->storage, fresh.storage);
    view->data = fresh.data;
    SetViewGeometry(view, fresh.ndim, fresh.shape, fresh.strides);  // checked by AcquireTorchTensor
    return true;
  }
  PyObject* reason = TakeRaisedException();
  PyObject* text = reason ? PyObject_Str(reason) : nullptr;
  PyErr_Format(PyExc_BufferError, "a torch tensor changed during the call and no longer fits: %s",
               text ? PyUnicode_AsUTF8(text) : "?");
  Py_XDECREF(text);
  Py_XDECREF(reason);
  return false;
}

}  // namespace

std::atomic<int> g_live_torch_views{0};

void RegisterTorchView(BufferView* view) {
  t_torch_views.push_back(view);
  ++g_live_torch_views;
}

void UnregisterTorchView(BufferView* view) {
  for (size_t i = t_torch_views.size(); i-- > 0;) {
    if (t_torch_views[i] == view) {
      t_torch_views.erase(t_torch_views.begin() + static_cast<std::ptrdiff_t>(i));
      --g_live_torch_views;
      return;
    }
  }
}

bool ThreadBorrowsTorchViews() { return !t_torch_views.empty(); }

bool RefreshTorchViewsSlow() {
  if (t_torch_views.empty()) return true;
  // The exception being raised, if any, belongs to the instruction that ran;
  // a refresh between instructions never has one pending.
  for (BufferView* view : t_torch_views) {
    if (!RefreshTorchView(view)) return false;
  }
  return true;
}

void MarkTorchTensorWritten(PyObject* tensor) {
  // What an in-place op does: bump the version counter, so that autograd
  // notices a tensor it saved was changed.
  PyObject* pending = TakeRaisedException();
  PyObject* graph = PyImport_ImportModule("torch.autograd.graph");
  PyObject* result = graph ? PyObject_CallMethod(graph, "increment_version", "O", tensor) : nullptr;
  Py_XDECREF(result);
  Py_XDECREF(graph);
  PyErr_Clear();
  RestoreRaisedException(pending);
}

// ---- Boxing ---------------------------------------------------------------------------------

PyObject* BoxValue(ValueType type, Value value) {
  switch (type) {
    case ValueType::kInt: return PyLong_FromLongLong(value.i);
    case ValueType::kFloat: return PyFloat_FromDouble(value.f);
    case ValueType::kBool: return Py_NewRef(value.i ? Py_True : Py_False);
    case ValueType::kNone:
    case ValueType::kObject:
    case ValueType::kComplex: return value.o;  // already an owned reference
    case ValueType::kBuffer: break;
  }
  PyErr_SetString(PyExc_SystemError, "ppy: a buffer cannot be returned");
  return nullptr;
}

bool UnboxInt(PyObject* obj, int64_t* out) {
  if (PyBool_Check(obj)) {  // an int local holding True would print 1
    PyErr_SetString(PyExc_TypeError, "expected an int, got bool (ppy does not turn bools into ints implicitly; "
                                     "convert with int())");
    return false;
  }
  if (PyLong_Check(obj) && !PyLong_CheckExact(obj)) {  // an IntEnum member would print as its value
    PyErr_Format(PyExc_TypeError, "expected an int, got %.200s (a typed int holds an exact int, not a subclass; "
                 "convert with int())", Py_TYPE(obj)->tp_name);
    return false;
  }
  return UnboxIndexValue(obj, out);
}

bool UnboxIndexValue(PyObject* obj, int64_t* out) {
  PyObject* index = PyNumber_Index(obj);
  if (index == nullptr) return false;
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow != 0) {
    PyErr_SetString(PyExc_OverflowError,
                    "int value does not fit in 64 bits (Python ints are unbounded, ppy's are 64-bit)");
    return false;
  }
  if (value == -1 && PyErr_Occurred()) return false;
  *out = value;
  return true;
}

bool UnboxFloat(PyObject* obj, double* out) {
  if (PyFloat_CheckExact(obj)) {
    *out = PyFloat_AS_DOUBLE(obj);
    return true;
  }
  if (PyFloat_Check(obj)) {  // numpy.float64 divides by zero into inf, a subclass may override +
    PyErr_Format(PyExc_TypeError, "expected a float, got %.200s (a typed float holds an exact float, not a "
                 "subclass; convert with float())", Py_TYPE(obj)->tp_name);
    return false;
  }
  PyErr_Format(PyExc_TypeError, "expected a float, got %.200s (ppy does not turn other values into floats "
               "implicitly; convert with float())", Py_TYPE(obj)->tp_name);
  return false;
}

bool UnboxComplex(PyObject* obj, double* real, double* imag) {
  if (PyComplex_Check(obj)) {
    Py_complex value = PyComplex_AsCComplex(obj);
    *real = value.real;
    *imag = value.imag;
    return true;
  }
  PyErr_Format(PyExc_TypeError, "expected a complex, got %.200s (ppy does not turn other values into complex "
               "numbers implicitly; convert with complex())", Py_TYPE(obj)->tp_name);
  return false;
}

// CPython's own operator on the two values boxed: it raises what CPython
// raises (its message, in every version), or returns what it computes.
static PyObject* ComplexOperator(PyObject* (*op)(PyObject*, PyObject*), Py_complex a, Py_complex b) {
  PyObject* left = PyComplex_FromCComplex(a);
  PyObject* right = left ? PyComplex_FromCComplex(b) : nullptr;
  PyObject* result = right ? op(left, right) : nullptr;
  Py_XDECREF(left);
  Py_XDECREF(right);
  return result;
}

bool ComplexQuotient(Py_complex a, Py_complex b, Py_complex* out) {
  errno = 0;
  Py_complex quotient = _Py_c_quot(a, b);
  if (errno == 0) {
    *out = quotient;
    return true;
  }
  // A zero divisor: CPython's division raises ZeroDivisionError itself.
  TakeGil();
  PyObject* result = ComplexOperator(PyNumber_TrueDivide, a, b);
  if (result == nullptr) return false;
  bool ok = UnboxComplex(result, &out->real, &out->imag);
  Py_DECREF(result);
  return ok;
}

bool ComplexAbs(Py_complex z, double* out) {
  errno = 0;
  double modulus = _Py_c_abs(z);
  if (errno == 0) {
    *out = modulus;
    return true;
  }
  // Too large for a float: CPython's abs() raises OverflowError itself.
  TakeGil();
  PyObject* boxed = PyComplex_FromCComplex(z);
  PyObject* result = boxed ? PyNumber_Absolute(boxed) : nullptr;
  Py_XDECREF(boxed);
  if (result == nullptr) return false;
  bool ok = UnboxFloat(result, out);
  Py_DECREF(result);
  return ok;
}

bool UnboxBool(PyObject* obj, int64_t* out) {
  if (obj == Py_True || obj == Py_False) {
    *out = obj == Py_True;
    return true;
  }
  PyErr_Format(PyExc_TypeError, "expected a bool, got %.200s", Py_TYPE(obj)->tp_name);
  return false;
}

}  // namespace ppy
