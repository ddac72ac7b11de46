// The VM's runtime: register values, borrowed buffers, Python's numeric
// semantics on 64-bit ints and doubles, and the errors they raise.
//
// Every helper here has one meaning shared by the interpreter and the JIT: the
// interpreter inlines the fast paths, the JIT calls the same functions through
// its helper table. Fast paths are inline; anything that raises is out of line
// and marked cold.
#pragma once

#include <Python.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "vm/code.h"
#include "vm/exact_scalars.h"

namespace ppy {

struct BufferView;

// One register. Its kind is fixed per function (see FunctionCode::registers).
union Value {
  int64_t i;
  double f;
  PyObject* o;
  BufferView* u;
};
static_assert(sizeof(Value) == 8);
static_assert(sizeof(PyObject*) == sizeof(Value), "object spans are passed to the C API as arrays");

// Which object exported a buffer: its IndexError and overflow messages are the
// exporter's own, so that ppy raises what the same code under CPython raises.
enum class Exporter : uint8_t { kOther, kArray, kNumpy, kMemoryview, kBytearray, kBytes, kTorch };

// A borrowed view of an exporter's memory, valid for one call from Python:
// `ndim` axes of any strides. Element i0, i1, .. lies at data + (i0 *
// strides[0] + i1 * strides[1] + ..) * element size: strides count elements,
// not bytes, and may be negative (a[::-1]) or zero (broadcast). `low` and
// `high` bound every such offset (high < low for an empty view), which is all
// the memory the view may touch: the N-d loads and stores check their offset
// against them, so that no bytecode, however crafted, reaches outside it.
struct BufferView {
  char* data = nullptr;
  int64_t length = 0;  // shape[0]: len() of the exporter
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t low = 0, high = -1;
  int ndim = 1;
  ElemType elem = ElemType::kNone;
  Exporter exporter = Exporter::kOther;
  bool readonly = false;
  // The exporter has no `shape` attribute (array.array, bytearray, bytes):
  // a.shape[k] raises AttributeError there, as Python's would (SHAPE_U).
  bool shapeless = false;
  char format = 'B';          // the struct format character, for messages
  PyObject* owner = nullptr;  // borrowed, for messages
  // Owned: a torch tensor's storage, held for the call, so that a callback
  // that re-points the tensor (t.set_(...), t.data = ...) or reallocates it
  // (t.resize_(...)) cannot free the memory the call is using before
  // RefreshTorchViews moves the view to the tensor's new memory.
  PyObject* storage = nullptr;
  // For a torch tensor: the parameter it was passed as, to check it again.
  const FunctionCode* function = nullptr;
  const Param* param = nullptr;
};

// ---- torch tensors that change during a call ----------------------------------------
// A torch tensor has no buffer export to lock it: Python code a call runs (a
// callback, a __del__, a property) may resize or re-point it. Every torch view
// a call borrows is registered for the call's duration, and after each
// instruction that may run Python code the interpreter refreshes them: a view
// follows the tensor's new memory and length, as Python's own indexing would,
// and a tensor that no longer fits its parameter raises BufferError. Machine
// code reloads its views after every typed call and leaves for the
// interpreter if one moved (see asmjit-backend/codegen.h).

void RegisterTorchView(BufferView* view);
void UnregisterTorchView(BufferView* view);
// How many torch views all threads hold: the interpreter's one-load test.
extern std::atomic<int> g_live_torch_views;
// Whether a frame of this thread borrows a torch tensor now.
bool ThreadBorrowsTorchViews();
[[gnu::cold]] bool RefreshTorchViewsSlow();
// False, with the exception set, if a tensor no longer fits its parameter.
inline bool RefreshTorchViews() {
  return g_live_torch_views.load(std::memory_order_relaxed) == 0 || RefreshTorchViewsSlow();
}

// ---- Errors ---------------------------------------------------------------------
// Each Raise* sets a Python exception and returns false, so that a caller can
// write `return RaiseX(...)`.

// After a call that may have stored into a torch tensor's memory: bumps its
// version counter as an in-place op would. Keeps any pending exception.
void MarkTorchTensorWritten(PyObject* tensor);

[[gnu::cold]] bool RaiseIntOverflow(const FunctionCode& fn, int pc, const char* what);

// ---- Deoptimization -----------------------------------------------------------------
// An int that outgrows 64 bits in a register that is not an annotated local
// (a temporary, an unannotated local) is where Python's int would just grow.
// If the call has had no effect visible outside it yet (no store, no Python
// code, no object-mode code beyond plain-number arithmetic: g_effects below
// is unchanged since the frame began), ppy abandons the
// call and runs the function's Python code with the same arguments, which is
// then exactly what CPython does. Deoptimize is the exception that carries
// this up to the call boundary (vm/function_object.cpp, CallModuleFunction); a
// frame that cannot be abandoned turns it into the OverflowError it stands
// for.

// Counts effects visible outside a call (a store into a buffer, object-mode
// code, Python code run from compiled code), in every frame of this thread: a
// frame that sees it unchanged since its start has had none, and so may be
// abandoned. Per thread, since a frame's callees run on its thread, and what
// other threads do (with or without the GIL) is no effect of the frame's.
extern constinit thread_local uint64_t g_effects PPY_FAST_TLS;

// Raises Deoptimize carrying RaiseIntOverflow's message, and counts a
// deoptimization of fn's at pc for `ppy run --trace`, which reads `what`
// later: a static string.
[[gnu::cold]] bool RaiseDeoptimize(const FunctionCode& fn, int pc, const char* what);
// The same for an annotated module constant (LOAD_GLOBAL_I/F/B) that holds a
// value of another type than its annotation's: the call reruns as Python, or
// raises the TypeError it stands for. Counted with `what` kGlobalDeoptimization.
[[gnu::cold]] bool RaiseDeoptimizeForGlobal(const FunctionCode& fn, int pc, PyObject* name, const char* expected,
                                            PyObject* value);
inline constexpr const char kGlobalDeoptimization[] = "global";
// TypeError: global `name`, annotated `expected`, holds `value`.
[[gnu::cold]] bool RaiseGlobalTypeError(PyObject* name, const char* expected, PyObject* value);
bool DeoptimizePending();
// Replaces a pending Deoptimize by the error it stands for: OverflowError, or
// a module constant's TypeError.
[[gnu::cold]] void DeoptimizeToError();

// ---- Grown ints ------------------------------------------------------------------------
// After an effect, a frame cannot be abandoned: an unannotated int that
// outgrows 64 bits there becomes a Python int in place, and the frame goes on
// with that register holding it (vm/interpreter.cpp, "grown ints"). Such an
// int returned by a typed function travels to its caller as a Deoptimize
// that carries the value ("grown"): the caller's frame keeps it in the
// register the call writes, or the call boundary returns it to Python. A
// frame that can still be abandoned drops the value and deoptimizes.
[[gnu::cold]] bool RaiseGrownInt(const FunctionCode& fn, int pc, const char* what, PyObject* value);
// Whether the pending exception is a Deoptimize carrying a grown int.
bool GrownIntPending();
// The grown int a pending Deoptimize carries (a new reference), clearing it;
// null, with the exception left as it was, if none is pending.
PyObject* TakeGrownInt();
// Leaves a pending Deoptimize without its grown int: a plain deoptimization.
void ForgetGrownInt();
[[gnu::cold]] bool RaiseZeroDivision(const char* message);
[[gnu::cold]] bool RaiseValueError(const char* message);
[[gnu::cold]] bool RaiseIndexError(const BufferView& view, int64_t index, bool store);
// The exporter's own error for an index beyond 64 bits (an int that grew),
// read or store, on any axis: each exporter refuses it before any bounds
// check (numpy: IndexError, torch: ValueError, the others: IndexError).
[[gnu::cold]] bool RaiseGrownIndexError(const BufferView& view);
[[gnu::cold]] bool RaiseReadOnly(const BufferView& view);
[[gnu::cold]] bool RaiseElementOverflow(const BufferView& view, int64_t value);
// The same for `value`, a Python int beyond 64 bits (a grown int, see
// vm/interpreter.cpp), stored into an int element: what the exporter's own
// item assignment raises for it.
[[gnu::cold]] bool RaiseGrownElementOverflow(const BufferView& view, PyObject* value);
[[gnu::cold]] bool RaiseUnbound(PyObject* name);
// A bool index: array.array, memoryview, bytearray and bytes read it as 0 or
// 1, as Python's int subclassing says; numpy and torch read it as a mask (all
// elements or none), which a compiled element access cannot do, and an
// unknown exporter may too. Those raise RaiseBoolMaskIndex's TypeError.
inline bool ReadsBoolAsInt(const BufferView& view) {
  return view.exporter == Exporter::kArray || view.exporter == Exporter::kMemoryview ||
         view.exporter == Exporter::kBytearray || view.exporter == Exporter::kBytes;
}
[[gnu::cold]] bool RaiseBoolMaskIndex(const BufferView& view);
[[gnu::cold]] bool RaiseNegativePower(int64_t base);
// Converts a float to an int as int() does; false with the exception set.
[[gnu::cold]] bool FloatToIntSlow(const FunctionCode& fn, int pc, double x, int64_t* out);
// x / y for ints beyond 2**53, through CPython's correctly rounded division.
[[gnu::cold]] bool TrueDivideSlow(int64_t x, int64_t y, double* out);
// x ** y for floats CPython handles specially (non-positive bases, non-finite
// operands, overflow); raises what CPython raises, and ValueError for a complex result.
[[gnu::cold]] bool PowFloatSlow(double x, double y, double* out);
// A math function through CPython's math module: the slow path of MATH_*.
[[gnu::cold]] bool MathSlow(int fn, double x, double y, double* out);
// Reads an element of a u64 buffer that may not fit in an int64.
[[gnu::cold]] bool ReadU64Slow(const BufferView& view, int64_t index, int64_t* out);

// ---- Integer semantics ------------------------------------------------------------

inline bool FloorDivInt(int64_t x, int64_t y, int64_t* out) {
  // The caller handles y == 0 and the one overflow, INT64_MIN // -1.
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
  *out = q;
  return true;
}

inline int64_t ModInt(int64_t x, int64_t y) {
  // y != 0. INT64_MIN % -1 traps in C; its Python value is 0.
  if (y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

// x ** y for y >= 0; false on overflow.
inline bool PowInt(int64_t x, int64_t y, int64_t* out) {
  int64_t result = 1;
  int64_t base = x;
  while (y > 0) {
    if (y & 1) {
      if (__builtin_mul_overflow(result, base, &result)) return false;
    }
    y >>= 1;
    // A square still needed overflows only when the final result would, since
    // |base| >= 2 from then on multiplies into it.
    if (y > 0 && __builtin_mul_overflow(base, base, &base)) return false;
  }
  *out = result;
  return true;
}

// x / y as CPython computes it: exact operands (below 2**53) divide directly.
inline bool TrueDivideInt(int64_t x, int64_t y, double* out) {
  constexpr int64_t kExact = int64_t{1} << 53;
  if (x > -kExact && x < kExact && y > -kExact && y < kExact) {
    *out = static_cast<double>(x) / static_cast<double>(y);
    return true;
  }
  return TrueDivideSlow(x, y, out);
}

// x << y for y >= 0; false on overflow.
inline bool ShiftLeftInt(int64_t x, int64_t y, int64_t* out) {
  if (x == 0) {
    *out = 0;
    return true;
  }
  if (y >= 64) return false;
  int64_t shifted = static_cast<int64_t>(static_cast<uint64_t>(x) << y);
  if ((shifted >> y) != x) return false;
  *out = shifted;
  return true;
}

inline int64_t ShiftRightInt(int64_t x, int64_t y) {
  // y >= 0; Python's >> floors, as the arithmetic shift does.
  if (y >= 63) return x < 0 ? -1 : 0;
  return x >> y;
}

// ---- Float semantics --------------------------------------------------------------

// CPython's float_floor_div and float_rem, operation for operation.
inline double FloorDivFloat(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) div -= 1.0;
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  return floordiv;
}

inline double ModFloat(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) mod += wx;
  } else {
    mod = std::copysign(0.0, wx);
  }
  return mod;
}

inline bool PowFloat(double x, double y, double* out) {
  if (x > 0.0 && std::isfinite(x) && std::isfinite(y)) {
    double r = std::pow(x, y);
    if (!std::isinf(r)) {
      *out = r;
      return true;
    }
  }
  return PowFloatSlow(x, y, out);
}

// The sign of f - i, exactly, or 2 when f is a NaN. CPython compares an int with
// a float by value, not by converting the int to a double.
inline int CompareFloatInt(double f, int64_t i) {
  if (std::isnan(f)) return 2;
  constexpr int64_t kExact = int64_t{1} << 53;
  if (i > -kExact && i < kExact) {
    double d = static_cast<double>(i);
    return f < d ? -1 : (f > d ? 1 : 0);
  }
  if (f >= 9223372036854775808.0) return 1;
  if (f < -9223372036854775808.0) return -1;
  double whole = std::trunc(f);
  int64_t whole_int = static_cast<int64_t>(whole);
  if (whole_int != i) return whole_int < i ? -1 : 1;
  double fraction = f - whole;
  return fraction > 0 ? 1 : (fraction < 0 ? -1 : 0);
}

// int(x) for a float, truncating; false with the exception set.
inline bool FloatToInt(const FunctionCode& fn, int pc, double x, int64_t* out) {
  if (x > -9223372036854775808.0 && x < 9223372036854775808.0) {
    *out = static_cast<int64_t>(x);
    return true;
  }
  return FloatToIntSlow(fn, pc, x, out);
}

// ---- Buffers ------------------------------------------------------------------------

// Applies Python's index rules; false when the index is outside.
inline bool NormalizeIndex(const BufferView& view, int64_t* index) {
  int64_t i = *index;
  if (i < 0) i += view.length;
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(view.length)) return false;
  *index = i;
  return true;
}

// Where a store into element `index` of a 1-d view writes (its offset in
// elements: Python's index rules, times the stride), or false with what the
// exporter raises, in its order: a read-only view first, then an index
// outside it.
inline bool StoreOffset(const BufferView& view, int64_t index, int64_t* offset) {
  if (view.readonly) [[unlikely]] return RaiseReadOnly(view);
  int64_t i = index;
  if (!NormalizeIndex(view, &i)) [[unlikely]] return RaiseIndexError(view, index, true);
  *offset = i * view.strides[0];
  return true;
}

// The same along one axis of an N-d view.
inline bool NormalizeAxisIndex(const BufferView& view, int axis, int64_t* index) {
  int64_t i = *index;
  const int64_t size = view.shape[axis];
  if (i < 0) i += size;
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(size)) return false;
  *index = i;
  return true;
}

// The element type an object's buffer (or torch tensor) holds, kNone if it
// has none ppy reads; never raises.
ElemType ElemTypeOfObject(PyObject* obj);
// Whether obj exports elements at all: a buffer exporter or a torch tensor
// (of any element type, ppy's or not).
bool ExportsElements(PyObject* obj);

// Sets a view's shape, strides, length and offset bounds (see BufferView);
// false with BufferError set if its offsets would not fit 64 bits.
bool SetViewGeometry(BufferView* view, int ndim, const int64_t* shape, const int64_t* strides);

// Whether the view's innermost axis steps one element at a time (machine code
// needs it: see Execute in vm/interpreter.cpp).
inline bool InnermostContiguous(const BufferView& view) { return view.strides[view.ndim - 1] == 1; }

// Whether an element offset lies in the view's memory (see BufferView).
inline bool OffsetInView(const BufferView& view, int64_t offset) { return offset >= view.low && offset <= view.high; }

// IndexError for index `index` along `axis` of an N-d view, worded as its
// exporter words it.
bool RaiseAxisIndexError(const BufferView& view, int axis, int64_t index);
// SystemError for an element offset outside the view (crafted bytecode only).
bool RaiseBadOffset(const BufferView& view, int64_t offset);

bool LoadIntElement(const BufferView& view, int64_t index, int64_t* out);
bool StoreIntElement(const BufferView& view, int64_t index, int64_t value);
double LoadFloatElement(const BufferView& view, int64_t index);
void StoreFloatElement(const BufferView& view, int64_t index, double value);

// Borrows `obj` as a Buffer[elem] parameter named `param` of `fn`. `writable` asks
// for a writable view when the exporter offers one; a read-only view is still
// accepted, and a store into it raises, as in CPython. On success the caller
// releases `raw` with PyBuffer_Release.
bool AcquireBuffer(PyObject* obj, const FunctionCode& fn, const Param& param, Py_buffer* raw,
                   BufferView* view);

// ---- Boxing -------------------------------------------------------------------------

PyObject* BoxValue(ValueType type, Value value);

// Converts a scalar argument whose type is exactly the parameter's (int, float,
// bool; any object for an object parameter). False for anything else, with no
// exception set: the caller then runs the function's own Python code, which is
// what CPython would do with that argument. (Inline: a call from Python
// converts every argument through it.)
inline bool ArgumentFits(PyObject* obj, const Param& param, Value* out) {
  switch (param.type) {
    case ValueType::kInt: return ExactInt64(obj, &out->i);
    case ValueType::kFloat: return ExactFloat(obj, &out->f);
    case ValueType::kBool: {
      bool value;
      if (!ExactBool(obj, &value)) return false;
      out->i = value;
      return true;
    }
    case ValueType::kNone:
    case ValueType::kObject:
      out->o = obj;
      return true;
    case ValueType::kComplex:
      // Only a complex itself: an int or float passed where the annotation
      // says complex runs the call as Python, where it stays an int or float.
      if (!PyComplex_CheckExact(obj)) return false;
      out->o = obj;
      return true;
    case ValueType::kBuffer:
      return false;
  }
  return false;
}

// Unboxing a dynamic value into a typed local: an int that fits 64 bits (an
// exact int, or a value with __index__ that is no int, as numpy's ints), a
// float (an exact float: an int is not silently made a float). A subclass of
// int or float (bool, an IntEnum, numpy.float64) is refused with a TypeError,
// as anything else: the typed local would lose its type (its repr, its
// operators, numpy's division by zero) where CPython keeps it.
bool UnboxInt(PyObject* obj, int64_t* out);
bool UnboxFloat(PyObject* obj, double* out);
// An index (operator.index's, bools and int subclasses included) that fits
// 64 bits; OverflowError or TypeError otherwise.
bool UnboxIndexValue(PyObject* obj, int64_t* out);
// A complex (or a subclass) as its two parts; TypeError for anything else.
bool UnboxComplex(PyObject* obj, double* real, double* imag);
// a / b and abs(z) for complex values, by CPython's own routines; where those
// report an error, CPython's operator raises it (ZeroDivisionError,
// OverflowError) with its own message.
bool ComplexQuotient(Py_complex a, Py_complex b, Py_complex* out);
bool ComplexAbs(Py_complex z, double* out);
bool UnboxBool(PyObject* obj, int64_t* out);

}  // namespace ppy
