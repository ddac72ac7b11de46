// ppy._ppy.CompiledModule and ppy._ppy.Function.
//
// A Function is called through vectorcall: arguments are bound to parameters
// with Python's rules (positional, keyword, defaults), converted to register
// values, buffers borrowed for exactly the duration of the call, and the result
// boxed. Arguments that cannot be bound, or whose types are not exactly the
// annotated ones, go to the Python function of the same def instead, so that
// such a call behaves (and fails) exactly as under CPython. Everything else
// (name, qualname, doc, __dict__, binding as a method, pickling by reference,
// attributes like __code__ read from the Python function) behaves like a
// Python function, so decorators and libraries that wrap functions keep working.

#include "vm/function_object.h"

#include <structmember.h>

#include <string>
#include <vector>

#include "vm/binding.h"
#include "vm/disasm.h"
#include "vm/gil.h"
#include "vm/interpreter.h"
#include "vm/loader.h"
#include "vm/region_tier.h"
#include "vm/runtime.h"
#include "vm/status.h"
#include "vm/unbox.h"

namespace ppy {

RegionTier g_region_tier;

namespace {

// ---- Argument binding ----------------------------------------------------------------------

// Buffers a call borrows, released on every path out of the call. (Its
// arrays exist only for a function that takes buffers: a call of one that
// takes scalars only, the commonest from Python, allocates nothing.)
class BorrowedBuffers {
 public:
  explicit BorrowedBuffers(int count) {
    if (count > 0) {
      raws_.resize(count);
      views_.resize(count);
    }
  }
  ~BorrowedBuffers() {
    for (int i = 0; i < acquired_; ++i) {
      if (raws_[i].obj != nullptr) PyBuffer_Release(&raws_[i]);
      if (views_[i].exporter == Exporter::kTorch) UnregisterTorchView(&views_[i]);
      if (written_tensors_ & (uint64_t{1} << (i & 63))) MarkTorchTensorWritten(views_[i].owner);
      Py_CLEAR(views_[i].storage);
    }
  }
  bool Acquire(PyObject* obj, const FunctionCode& fn, const Param& param, Value* out) {
    int slot = acquired_;
    if (!AcquireBuffer(obj, fn, param, &raws_[slot], &views_[slot])) return false;
    if (views_[slot].exporter == Exporter::kTorch) {
      RegisterTorchView(&views_[slot]);
      if (param.writes) written_tensors_ |= uint64_t{1} << (slot & 63);
    }
    ++acquired_;
    out->u = &views_[slot];
    return true;
  }

 private:
  std::vector<Py_buffer> raws_;
  std::vector<BufferView> views_;
  int acquired_ = 0;
  uint64_t written_tensors_ = 0;  // torch tensors the call may store into
};

PyObject* CallPython(FunctionObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return PyObject_Vectorcall(self->head.python, args, nargsf, kwnames);
}

// The argument an element-generic function's generic parameter receives
// (positional or by keyword), or null.
PyObject* GenericArgument(FunctionObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t position = self->generic_param;
  if (position < PyVectorcall_NARGS(nargsf)) return args[position];
  const std::string& name = self->code->params[position].name;
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), name.c_str()) == 0) {
      return args[PyVectorcall_NARGS(nargsf) + k];
    }
  }
  return nullptr;
}

// What follows a typed call that failed: the int result that outgrew 64 bits
// after an effect (RaiseGrownInt), or, for a call that deoptimized (an int
// outgrew 64 bits before anything was stored or called: see
// RaiseDeoptimize), the function's Python code run from the start, as
// CPython would have; else null with the exception.
PyObject* AfterFailedCall(FunctionObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (PyObject* grown = TakeGrownInt()) return grown;
  if (!DeoptimizePending()) return nullptr;
  PyErr_Clear();
  return CallPython(self, args, nargsf, kwnames);
}

// The most parameters the scalar fast path of FunctionVectorcall takes.
constexpr int kMaxScalarCallParams = 8;

// What FunctionObject::scalar_call_arity holds for a new Function of `code`.
int ScalarCallArity(const FunctionCode& code) {
  const bool fast = !code.nogil && code.num_kwonly == 0 && code.num_params() <= kMaxScalarCallParams;
  return fast ? code.num_params() : -1;
}

PyObject* FunctionVectorcallGeneral(FunctionObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames);

// The commonest call from Python, made with no binding and nothing to borrow:
// every parameter by position (none keyword-only), none a buffer
// (ArgumentFits refuses those, and the general path borrows them), each
// argument of exactly its parameter's type. Everything else, and a call that
// fails, goes to FunctionVectorcallGeneral (so that this function stays small
// enough for its frame to cost next to nothing).
PyObject* FunctionVectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<FunctionObject*>(callable);
  const Py_ssize_t count = PyVectorcall_NARGS(nargsf);
  if (kwnames == nullptr && count == self->scalar_call_arity) {
    const FunctionCode& fn = *self->code;
    const Param* params = fn.params.data();
    // The arguments' values, unboxed straight into a leaf's frame (see
    // CallLeafOnFrame).
    static_assert(kMaxScalarCallParams <= kLeafFrameWords);
    Value values[kLeafFrameWords];
    bool fits = true;
    // (Floats and ints tested first, in line: ArgumentFits's switch is a
    // jump through a table for each argument.)
    for (Py_ssize_t i = 0; i < count && fits; ++i) {
      const ValueType type = params[i].type;
      if (type == ValueType::kFloat) fits = ExactFloat(args[i], &values[i].f);
      else if (type == ValueType::kInt) fits = ExactInt64(args[i], &values[i].i);
      else fits = ArgumentFits(args[i], params[i], &values[i]);
    }
    if (fits) {
      Value result;
      const bool ok = FitsLeafFrame(fn) ? CallLeafOnFrame(fn, values, &result) : CallTyped(fn, values, &result);
      if (!ok) return AfterFailedCall(self, args, nargsf, kwnames);
      if (fn.result == ValueType::kFloat) return PyFloat_FromDouble(result.f);
      if (fn.result == ValueType::kInt) return PyLong_FromLongLong(result.i);
      return BoxValue(fn.result, result);
    }
  }
  return FunctionVectorcallGeneral(self, args, nargsf, kwnames);
}

// Every call the fast path of FunctionVectorcall does not take: by Python's
// binding rules, with buffers borrowed for the call, through an
// element-generic function's specializations.
__attribute__((noinline)) PyObject* FunctionVectorcallGeneral(FunctionObject* self, PyObject* const* args,
                                                              size_t nargsf, PyObject* kwnames) {
  if (self->specializations != nullptr) {
    // Element-generic: the specialization for the argument's element type.
    PyObject* argument = GenericArgument(self, args, nargsf, kwnames);
    const ElemType elem = argument ? ElemTypeOfObject(argument) : ElemType::kNone;
    if (elem == ElemType::kNone && argument != nullptr && ExportsElements(argument)) {
      return CallPython(self, args, nargsf, kwnames);  // (float16, complex, ...: no element type of ppy's)
    }
    if (elem != ElemType::kNone && elem != self->code->params[self->generic_param].elem) {
      PyObject* target = PyTuple_GET_ITEM(self->specializations, static_cast<Py_ssize_t>(elem));
      if (target == Py_None) return CallPython(self, args, nargsf, kwnames);
      return FunctionVectorcall(target, args, nargsf, kwnames);
    }
  }
  const FunctionCode& fn = *self->code;
  const int num_params = fn.num_params();
  PyObject* bound_storage[16];
  Value values_storage[16];
  std::vector<PyObject*> bound_heap;
  std::vector<Value> values_heap;
  PyObject** bound = bound_storage;
  Value* values = values_storage;
  if (num_params > 16) {
    bound_heap.resize(num_params);
    values_heap.resize(num_params);
    bound = bound_heap.data();
    values = values_heap.data();
  }
  auto name_at = [&fn](int i) -> const std::string& { return fn.params[i].name; };
  if (!BindArguments(self->head.python, num_params, fn.num_posonly, fn.num_kwonly, name_at, args, PyVectorcall_NARGS(nargsf),
                     kwnames, bound)) {
    return CallPython(self, args, nargsf, kwnames);
  }
  // Scalars first: a call that goes to the Python code borrows nothing.
  for (int i = 0; i < num_params; ++i) {
    const Param& param = fn.params[i];
    if (param.type != ValueType::kBuffer && !ArgumentFits(bound[i], param, &values[i])) {
      return CallPython(self, args, nargsf, kwnames);
    }
  }
  Value result;
  {
    BorrowedBuffers buffers(fn.num_buffer_params);
    for (int i = 0; i < num_params; ++i) {
      const Param& param = fn.params[i];
      if (param.type == ValueType::kBuffer && !buffers.Acquire(bound[i], fn, param, &values[i])) return nullptr;
    }
    bool ok;
    if (fn.nogil) {
      NogilScope released;  // (buffers stay borrowed: their exports keep the memory)
      ok = CallTyped(fn, values, &result);
    } else {
      ok = CallTyped(fn, values, &result);
    }
    if (ok) return BoxValue(fn.result, result);
  }  // (its buffers are released before any Python code runs)
  return AfterFailedCall(self, args, nargsf, kwnames);
}

// ---- Function type ----------------------------------------------------------------------------

int FunctionTraverse(PyObject* op, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  Py_VISIT(self->owner);
  Py_VISIT(self->specializations);
  return TraverseFunctionLike(&self->head, visit, arg);
}

int FunctionClear(PyObject* op) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  Py_CLEAR(self->owner);
  Py_CLEAR(self->specializations);
  ClearFunctionLike(&self->head);
  return 0;
}

void FunctionDealloc(PyObject* op) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  PyObject_GC_UnTrack(op);
  Py_CLEAR(self->owner);
  Py_CLEAR(self->specializations);
  DeallocFunctionLike(&self->head);
}

PyObject* FunctionRepr(PyObject* op) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  return PyUnicode_FromFormat("<ppy function %U at %p>", self->head.qualname, op);
}

PyObject* FunctionDis(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<FunctionObject*>(op);
  return PyUnicode_FromString(Disassemble(*self->owner->code, *self->code).c_str());
}

PyObject* FunctionGetTier(PyObject* op, void*) {
  const FunctionCode& code = *reinterpret_cast<FunctionObject*>(op)->code;
  return PyUnicode_FromString(code.runtime->jit_state == JitState::kCompiled ? "jit" : "vm");
}

PyObject* FunctionGetSignature(PyObject* op, void*) {
  const FunctionCode& fn = *reinterpret_cast<FunctionObject*>(op)->code;
  std::string text = "(";
  for (int i = 0; i < fn.num_params(); ++i) {
    if (i > 0) text += ", ";
    text += fn.params[i].name + ": " + TypeName(fn.params[i].type, fn.params[i].elem, fn.params[i].ndim);
  }
  text += ") -> " + TypeName(fn.result, ElemType::kNone);
  return PyUnicode_FromString(text.c_str());
}

PyMethodDef kFunctionMethods[] = {
    {"__reduce__", FunctionLikeReduce, METH_NOARGS, nullptr},
    {"__ppy_dis__", FunctionDis, METH_NOARGS, "The function's bytecode, as `ppy dis` prints it."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kFunctionGetSet[] = {
    PPY_FUNCTION_LIKE_GETSET,
    {"__ppy_tier__", FunctionGetTier, nullptr, "Where calls run: 'vm' or 'jit'.", nullptr},
    {"__ppy_signature__", FunctionGetSignature, nullptr, "The typed signature ppy compiled.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// ---- Binder: the decorator a compiled def is given -------------------------------------------

// `__ppy_module__.binder(INDEX)` is added as the innermost decorator of every
// compiled def, so that CPython evaluates decorators, defaults and annotations
// in its own order, creates the Python function, and this turns it into the
// compiled function before the other decorators see it.
enum class BinderKind : uint8_t {
  kFunction,     // binder(index): a Function
  kRegion,       // region(index): a RegionFunction
  kPythonEntry,  // python_entry(index): the Python function itself (see ModulePythonEntry)
};

struct BinderObject {
  PyObject_HEAD
  CompiledModuleObject* module;
  Py_ssize_t index;
  BinderKind kind;
  // binder(index, generic_param, ((elem, index), ...)) of an element-generic def.
  int generic_param;
  PyObject* specializations;  // that tuple, or null
};

// The cache entry's section of ATen regions (regions/region_code.h).
constexpr const char* kRegionSection = "RGNS";

// Whether the region tier installed its hooks (vm/region_tier.h); raises if not.
bool RegionTierInstalled() {
  if (g_region_tier.new_function != nullptr) return true;
  PyErr_SetString(PyExc_RuntimeError, "ppy: the ATen region tier is not installed in this extension");
  return false;
}

PyTypeObject BinderType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* NewFunction(CompiledModuleObject* module, Py_ssize_t index, PyObject* python) {
  if (module->code->globals == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "ppy: a compiled module must be attached before its functions are bound");
    return nullptr;
  }
  if (!PyFunction_Check(python)) {
    PyErr_SetString(PyExc_TypeError, "ppy: binder() decorates a Python function");
    return nullptr;
  }
  const FunctionCode& code = *module->code->functions[index];
  auto* fn = PyObject_GC_New(FunctionObject, &FunctionType);
  if (fn == nullptr) return nullptr;
  fn->owner = reinterpret_cast<CompiledModuleObject*>(Py_NewRef(module));
  fn->code = &code;
  fn->generic_param = -1;
  fn->specializations = nullptr;
  fn->scalar_call_arity = ScalarCallArity(code);
  bool ready = InitFunctionLike(&fn->head, FunctionVectorcall, python);
  PyObject_GC_Track(fn);
  if (!ready) {
    Py_DECREF(fn);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(fn);
}

// The f64 Function of an element-generic def, holding one Function per other
// element type it was specialized for (see FunctionObject::specializations).
PyObject* NewGenericFunction(BinderObject* binder, PyObject* python) {
  auto* main = reinterpret_cast<FunctionObject*>(NewFunction(binder->module, binder->index, python));
  if (main == nullptr) return nullptr;
  const auto& functions = binder->module->code->functions;
  if (binder->generic_param < 0 || binder->generic_param >= main->code->num_params() ||
      main->code->params[binder->generic_param].type != ValueType::kBuffer) {
    Py_DECREF(main);
    PyErr_SetString(PyExc_ValueError, "ppy: bad generic parameter");
    return nullptr;
  }
  main->generic_param = binder->generic_param;
  main->scalar_call_arity = -1;  // (every call goes through the specializations)
  main->specializations = PyTuple_New(kElemTypeCount);
  if (main->specializations == nullptr) {
    Py_DECREF(main);
    return nullptr;
  }
  for (Py_ssize_t e = 0; e < kElemTypeCount; ++e) PyTuple_SET_ITEM(main->specializations, e, Py_NewRef(Py_None));
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(binder->specializations); ++k) {
    int elem = 0;
    Py_ssize_t index = 0;
    PyObject* entry = PyTuple_GET_ITEM(binder->specializations, k);
    if (!PyArg_ParseTuple(entry, "in", &elem, &index) || elem <= 0 || elem >= kElemTypeCount || index < 0 ||
        index >= static_cast<Py_ssize_t>(functions.size()) ||
        functions[index]->num_params() != main->code->num_params() ||
        functions[index]->params[binder->generic_param].elem != static_cast<ElemType>(elem)) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "ppy: bad specialization");
      Py_DECREF(main);
      return nullptr;
    }
    PyObject* specialized = NewFunction(binder->module, index, python);
    if (specialized == nullptr) {
      Py_DECREF(main);
      return nullptr;
    }
    Py_SETREF(PyTuple_GET_ITEM(main->specializations, elem), specialized);
  }
  return reinterpret_cast<PyObject*>(main);
}

PyObject* BinderCall(PyObject* op, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<BinderObject*>(op);
  PyObject* python;
  if (!PyArg_ParseTuple(args, "O:binder", &python)) return nullptr;
  if (self->kind == BinderKind::kPythonEntry) {
    if (!PyFunction_Check(python)) {
      PyErr_SetString(PyExc_TypeError, "ppy: python_entry() decorates a Python function");
      return nullptr;
    }
    // Compiled callers' direct calls go on while the name holds this very
    // function with this code (CallModuleFunction). Once: machine code reads
    // the function it was bound to.
    BoundPython& bound = self->module->code->functions[self->index]->runtime->bound_python;
    if (bound.function != nullptr) {
      PyErr_SetString(PyExc_RuntimeError, "ppy: python_entry() binds a def once");
      return nullptr;
    }
    bound.code = Py_NewRef(PyFunction_GET_CODE(python));
    bound.function = Py_NewRef(python);
    return Py_NewRef(python);
  }
  if (self->kind == BinderKind::kFunction && self->specializations == nullptr) {
    return NewFunction(self->module, self->index, python);
  }
  if (self->kind == BinderKind::kFunction) return NewGenericFunction(self, python);
  PyObject* section = self->module->extras ? PyDict_GetItemString(self->module->extras, kRegionSection) : nullptr;
  if (!RegionTierInstalled()) return nullptr;
  PyObject* function = g_region_tier.new_function(section, self->index, python);
  if (function != nullptr && PyList_Append(self->module->regions, function) < 0) Py_CLEAR(function);
  return function;
}

int BinderTraverse(PyObject* op, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<BinderObject*>(op)->module);
  Py_VISIT(reinterpret_cast<BinderObject*>(op)->specializations);
  return 0;
}

void BinderDealloc(PyObject* op) {
  PyObject_GC_UnTrack(op);
  Py_CLEAR(reinterpret_cast<BinderObject*>(op)->module);
  Py_CLEAR(reinterpret_cast<BinderObject*>(op)->specializations);
  PyObject_GC_Del(op);
}

// ---- CompiledModule type ----------------------------------------------------------------------

int ModuleTraverse(PyObject* op, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  if (self->code != nullptr) {
    Py_VISIT(self->code->globals);
    for (auto& fn : self->code->functions) Py_VISIT(fn->runtime->bound_python.function);  // (code: no cycle)
  }
  Py_VISIT(self->extras);
  Py_VISIT(self->regions);
  return 0;
}

int ModuleClear(PyObject* op) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  if (self->code != nullptr) ReleaseModule(*self->code);
  Py_CLEAR(self->extras);
  Py_CLEAR(self->regions);
  return 0;
}

void ModuleDealloc(PyObject* op) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject_GC_UnTrack(op);
  ModuleClear(op);
  delete self->code;
  self->code = nullptr;
  PyObject_GC_Del(op);
}

PyObject* NewBinder(PyObject* op, PyObject* arg, BinderKind kind, int generic_param = -1,
                    PyObject* specializations = nullptr) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  Py_ssize_t index = PyLong_AsSsize_t(arg);
  if (index == -1 && PyErr_Occurred()) return nullptr;
  if (index < 0 ||
      (kind != BinderKind::kRegion && index >= static_cast<Py_ssize_t>(self->code->functions.size()))) {
    PyErr_SetString(PyExc_IndexError, "no such compiled function");
    return nullptr;
  }
  auto* binder = PyObject_GC_New(BinderObject, &BinderType);
  if (binder == nullptr) return nullptr;
  binder->module = reinterpret_cast<CompiledModuleObject*>(Py_NewRef(op));
  binder->index = index;
  binder->kind = kind;
  binder->generic_param = generic_param;
  binder->specializations = Py_XNewRef(specializations);
  PyObject_GC_Track(binder);
  return reinterpret_cast<PyObject*>(binder);
}

// binder(index[, generic_param, ((elem, index), ...)]) -> the decorator that
// makes a compiled def's function (an element-generic one with its
// specializations).
PyObject* ModuleBinder(PyObject* op, PyObject* args) {
  PyObject* index;
  int generic_param = -1;
  PyObject* specializations = nullptr;
  if (!PyArg_ParseTuple(args, "O|iO!:binder", &index, &generic_param, &PyTuple_Type, &specializations)) {
    return nullptr;
  }
  return NewBinder(op, index, BinderKind::kFunction, generic_param, specializations);
}

// region(index) -> the decorator that makes a region's def a RegionFunction.
PyObject* ModuleRegion(PyObject* op, PyObject* arg) { return NewBinder(op, arg, BinderKind::kRegion); }

// python_entry(index) -> the decorator of a compiled def that calls from
// Python run as Python (compiler/compile.cpp, SmallCallAsPython: a body that
// costs less than a call into compiled code): it leaves the Python function
// bound to the name, so that CPython calls it as it calls any other, and
// records it, so that the module's compiled callers still call the compiled
// code directly while the name holds it.
PyObject* ModulePythonEntry(PyObject* op, PyObject* arg) { return NewBinder(op, arg, BinderKind::kPythonEntry); }

// Appends `item` (a new reference, or null where making it failed) to
// `list` and releases it: false, with the exception set, if either failed.
// The listing methods below build their lists through it.
bool AppendNew(PyObject* list, PyObject* item) {
  const bool appended = item != nullptr && PyList_Append(list, item) == 0;
  Py_XDECREF(item);
  return appended;
}

// region_stats() -> [(name, calls, ops, python calls)] for every region function bound.
PyObject* ModuleRegionStats(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject* stats = PyList_New(0);
  for (Py_ssize_t i = 0; stats != nullptr && i < PyList_GET_SIZE(self->regions); ++i) {
    if (!AppendNew(stats, g_region_tier.stats(PyList_GET_ITEM(self->regions, i)))) Py_CLEAR(stats);
  }
  return stats;
}

// region_dis(index) -> the op sequence of region `index`, as `ppy dis` prints it.
PyObject* ModuleRegionDis(PyObject* op, PyObject* arg) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  Py_ssize_t index = PyLong_AsSsize_t(arg);
  if (index == -1 && PyErr_Occurred()) return nullptr;
  PyObject* section = self->extras ? PyDict_GetItemString(self->extras, kRegionSection) : nullptr;
  if (!RegionTierInstalled()) return nullptr;
  return g_region_tier.describe(section, index);
}

PyObject* ModuleFunctionNames(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject* names = PyList_New(0);
  if (names == nullptr) return nullptr;
  for (const auto& fn : self->code->functions) {
    if (!AppendNew(names, PyUnicode_FromString(fn->name.c_str()))) {
      Py_DECREF(names);
      return nullptr;
    }
  }
  return names;
}

PyObject* ModuleDis(PyObject* op, PyObject* args) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  const char* only = nullptr;
  if (!PyArg_ParseTuple(args, "|z:dis", &only)) return nullptr;
  std::string text;
  for (const auto& fn : self->code->functions) {
    if (only != nullptr && fn->name != only) continue;
    if (!text.empty()) text += "\n";
    text += Disassemble(*self->code, *fn);
  }
  return PyUnicode_FromString(text.c_str());
}

// tiers() -> ["vm" or "jit"] for every compiled function, in index order.
PyObject* ModuleTiers(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject* tiers = PyList_New(0);
  if (tiers == nullptr) return nullptr;
  for (const auto& fn : self->code->functions) {
    if (!AppendNew(tiers, PyUnicode_FromString(fn->runtime->jit_state == JitState::kCompiled ? "jit" : "vm"))) {
      Py_DECREF(tiers);
      return nullptr;
    }
  }
  return tiers;
}

// stats() -> [(name, calls, seconds, jit entries, inlined, specialization,
// side exits, deoptimizations)] for every compiled function; `inlined`:
// machine code of another function runs its calls in place (not counted in
// `calls`); `specialization`: None, or (the values it is for, as "cols=16",
// and the jit entries that entered it); `side exits`: (the jit entries that
// handed the rest of the call to the interpreter, and the last one's line and
// instruction, or None and None, and whether calls stopped entering it at
// the start because those entries kept leaving at once); `deoptimizations`: None, or
// (how many, and the last one's line and operator).
PyObject* ModuleStats(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject* stats = PyList_New(0);
  if (stats == nullptr) return nullptr;
  for (const auto& fn : self->code->functions) {
    const FunctionRuntime& runtime = *fn->runtime;
    PyObject* special = nullptr;
    if (runtime.special_state.load(std::memory_order_acquire) == JitState::kCompiled) {
      KnownValues values;
      for (int k = 0; k < runtime.special_count; ++k) values.emplace_back(runtime.special_regs[k], runtime.special_values[k]);
      special = Py_BuildValue("(sK)", DescribeValues(*fn, values).c_str(),
                              static_cast<unsigned long long>(runtime.special_entries));
    } else {
      special = Py_NewRef(Py_None);
    }
    PyObject* deopts = nullptr;
    const char* what = runtime.deopt_what.load(std::memory_order_relaxed);
    if (runtime.deopts > 0 && what != nullptr) {
      const int pc = runtime.deopt_pc.load(std::memory_order_relaxed);
      deopts = Py_BuildValue("(Kis)", static_cast<unsigned long long>(runtime.deopts), fn->LineAt(pc), what);
    } else {
      deopts = Py_NewRef(Py_None);
    }
    PyObject* exits = nullptr;
    const int exit_pc = runtime.exit_pc.load(std::memory_order_relaxed);
    if (runtime.jit_exits > 0 && exit_pc >= 0 && exit_pc < static_cast<int>(fn->code.size())) {
      exits = Py_BuildValue("(KisN)", static_cast<unsigned long long>(runtime.jit_exits), fn->LineAt(exit_pc),
                            std::string(InfoOf(fn->code[exit_pc].op).name).c_str(),
                            PyBool_FromLong(runtime.jit_start_dropped.load(std::memory_order_relaxed)));
    } else {
      exits = Py_BuildValue("(KOOO)", static_cast<unsigned long long>(runtime.jit_exits), Py_None, Py_None, Py_False);
    }
    PyObject* item = nullptr;
    if (special == nullptr || deopts == nullptr || exits == nullptr) {
      Py_XDECREF(special);
      Py_XDECREF(deopts);
      Py_XDECREF(exits);
    } else {  // ("N" hands them over, whether or not it succeeds)
      item = Py_BuildValue("(sKdKNNNN)", fn->qualname.c_str(), static_cast<unsigned long long>(runtime.calls),
                           runtime.nanoseconds / 1e9, static_cast<unsigned long long>(runtime.jit_entries),
                           PyBool_FromLong(runtime.jit_inlined.load(std::memory_order_relaxed)), special, exits,
                           deopts);
    }
    if (!AppendNew(stats, item)) {
      Py_DECREF(stats);
      return nullptr;
    }
  }
  return stats;
}

PyObject* ModuleGetExtras(PyObject* op, void*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  return Py_NewRef(self->extras ? self->extras : Py_None);
}

// attach(globals): prepares the code to run in the module namespace `globals`.
PyObject* ModuleAttach(PyObject* op, PyObject* globals) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  if (!PyDict_Check(globals)) {
    PyErr_SetString(PyExc_TypeError, "attach() takes the module's namespace dict");
    return nullptr;
  }
  if (Status prepared = PrepareModule(*self->code, globals); !prepared.ok()) {
    PyErr_Format(PyExc_ValueError, "ppy: %s", std::string(prepared.message()).c_str());
    return nullptr;
  }
  self->code->defs_bind_names = true;  // the module's defs run in `globals`
  WatchGlobals(*self->code);
  // Tracebacks name the file as this import found it, not as the builder's
  // path spelled it (what importlib's _fix_co_filename does for a .pyc).
  PyObject* file = PyDict_GetItemString(globals, "__file__");  // borrowed
  if (file != nullptr && PyUnicode_Check(file)) {
    const char* path = PyUnicode_AsUTF8(file);
    if (path == nullptr) return nullptr;
    self->code->filename = path;
  }
  Py_RETURN_NONE;
}

// unboxed_stats() -> [(name, slots, guards, entries, versions, failed
// guards, the last failure's line and instruction or None and None)] for
// every function that built unboxed code (vm/unbox.h): the slots and guards
// of the version frames enter now (0 and 0 once none is left), the frames
// that entered one, the versions built, and the guards that failed.
PyObject* ModuleUnboxedStats(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<CompiledModuleObject*>(op);
  PyObject* stats = PyList_New(0);
  if (stats == nullptr) return nullptr;
  for (const auto& fn : self->code->functions) {
    const FunctionRuntime& runtime = *fn->runtime;
    if (runtime.unboxed_versions.empty()) continue;
    const UnboxedCode* now = runtime.unboxed.load(std::memory_order_acquire);
    const int pc = runtime.unbox_deopt_pc.load(std::memory_order_relaxed);
    const bool failed = runtime.unbox_deopts > 0 && pc >= 0 && pc < static_cast<int>(fn->code.size());
    const int slots = now != nullptr ? static_cast<int>(now->slot_register.size()) : 0;
    const int guards = now != nullptr ? now->guards : 0;
    const auto entries = static_cast<unsigned long long>(runtime.unboxed_entries);
    const auto versions = static_cast<Py_ssize_t>(runtime.unboxed_versions.size());
    const auto deopts = static_cast<unsigned long long>(runtime.unbox_deopts);
    PyObject* item = failed ? Py_BuildValue("(siiKnKis)", fn->qualname.c_str(), slots, guards, entries, versions,
                                            deopts, fn->LineAt(pc), std::string(InfoOf(fn->code[pc].op).name).c_str())
                            : Py_BuildValue("(siiKnKOO)", fn->qualname.c_str(), slots, guards, entries, versions,
                                            deopts, Py_None, Py_None);
    if (!AppendNew(stats, item)) {
      Py_DECREF(stats);
      return nullptr;
    }
  }
  return stats;
}

PyMethodDef kModuleMethods[] = {
    {"attach", ModuleAttach, METH_O, "attach(globals): run the functions in this module namespace"},
    {"binder", ModuleBinder, METH_VARARGS,
     "binder(index[, generic_param, specializations]) -> the decorator that makes a compiled def's function"},
    {"region", ModuleRegion, METH_O, "region(index) -> the decorator that makes a region's def a RegionFunction"},
    {"python_entry", ModulePythonEntry, METH_O,
     "python_entry(index) -> the decorator of a compiled def whose calls from Python run its Python function"},
    {"region_stats", ModuleRegionStats, METH_NOARGS, "region_stats() -> [(name, calls, ops, python calls)]"},
    {"region_dis", ModuleRegionDis, METH_O, "region_dis(index) -> the op sequence of a region"},
    {"function_names", ModuleFunctionNames, METH_NOARGS, "The compiled functions, in index order."},
    {"dis", ModuleDis, METH_VARARGS, "dis([name]) -> the disassembly of every (or one) function"},
    {"tiers", ModuleTiers, METH_NOARGS, "tiers() -> ['vm' or 'jit'] per compiled function"},
    {"stats", ModuleStats, METH_NOARGS,
     "stats() -> [(name, calls, seconds, jit entries, inlined, specialization, side exits, deoptimizations)]; "
     "seconds only while profiling"},
    {"unboxed_stats", ModuleUnboxedStats, METH_NOARGS,
     "unboxed_stats() -> [(name, slots, guards, entries, versions, failed guards, last failure's line, its "
     "instruction)]"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kModuleGetSet[] = {
    {"extras", ModuleGetExtras, nullptr, "The entry's extra sections, tag -> bytes.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

PyTypeObject CompiledModuleType = {PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject FunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool InitFunctionTypes(PyObject* extension) {
  CompiledModuleType.tp_name = "ppy._ppy.CompiledModule";
  CompiledModuleType.tp_basicsize = sizeof(CompiledModuleObject);
  CompiledModuleType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  CompiledModuleType.tp_doc = "The compiled functions of one .ppy module, bound to its namespace.";
  CompiledModuleType.tp_traverse = ModuleTraverse;
  CompiledModuleType.tp_clear = ModuleClear;
  CompiledModuleType.tp_dealloc = ModuleDealloc;
  CompiledModuleType.tp_methods = kModuleMethods;
  CompiledModuleType.tp_getset = kModuleGetSet;

  // Named as CPython's own functions are, so that type(f), its repr and every
  // error message that names the type (`unsupported operand type(s) for +:
  // 'function' and 'int'`) read as they do under plain Python. The type stays
  // reachable as ppy._ppy.Function.
  FunctionType.tp_name = "function";
  FunctionType.tp_basicsize = sizeof(FunctionObject);
  SetFunctionLikeSlots(&FunctionType);
  FunctionType.tp_doc = "A function of a .ppy module, run by the ppy VM.";
  FunctionType.tp_traverse = FunctionTraverse;
  FunctionType.tp_clear = FunctionClear;
  FunctionType.tp_dealloc = FunctionDealloc;
  FunctionType.tp_repr = FunctionRepr;
  FunctionType.tp_methods = kFunctionMethods;
  FunctionType.tp_getset = kFunctionGetSet;

  BinderType.tp_name = "ppy._ppy.Binder";
  BinderType.tp_basicsize = sizeof(BinderObject);
  BinderType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  BinderType.tp_call = BinderCall;
  BinderType.tp_traverse = BinderTraverse;
  BinderType.tp_dealloc = BinderDealloc;

  if (PyType_Ready(&CompiledModuleType) < 0 || PyType_Ready(&FunctionType) < 0 || PyType_Ready(&BinderType) < 0) {
    return false;
  }
  if (PyModule_AddObjectRef(extension, "CompiledModule", reinterpret_cast<PyObject*>(&CompiledModuleType)) < 0 ||
      PyModule_AddObjectRef(extension, "Function", reinterpret_cast<PyObject*>(&FunctionType)) < 0) {
    return false;
  }
  return true;
}

PyObject* NewCompiledModule(std::unique_ptr<ModuleCode> code, PyObject* extras) {
  auto* self = PyObject_GC_New(CompiledModuleObject, &CompiledModuleType);
  if (self == nullptr) return nullptr;
  self->code = code.release();
  self->extras = extras ? Py_NewRef(extras) : nullptr;
  self->regions = PyList_New(0);
  PyObject_GC_Track(self);
  if (self->regions == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace ppy
