// The interpreter loop.
//
// Dispatch is computed goto over a table generated from vm/opcodes.def: every
// opcode must have a handler below (a missing one is a compile error, the label
// being undefined), and there is no switch to fall back to. Handlers read their
// operands from the instruction word `in`; a handler that raises jumps to
// `error`, which adds this function's .ppy frame to the traceback.

#include "vm/interpreter.h"

#include <structmember.h>  // PyMember_GetOne, PyMember_SetOne (3.11 declares them here)

#include <alloca.h>
#include <pthread.h>

#include <time.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "vm/exact_scalars.h"
#include "vm/function_object.h"
#include "vm/gil.h"
#include "vm/instance_values.h"
#include "vm/prange.h"
#include "vm/math_table.h"
#include "vm/python_compat.h"
#include "vm/tiering.h"
#include "vm/unbox.h"

namespace ppy {

Tiering g_tiering;

namespace {

// Replaces an object register's value with a new reference, releasing the old.
inline void SetObject(Value& reg, PyObject* value) {
  PyObject* old = reg.o;
  reg.o = value;
  Py_XDECREF(old);
}

PyObject* LookupGlobal(const FunctionCode& fn, PyObject* name) {
  PyObject* value = PyDict_GetItemWithError(fn.module->globals, name);
  if (value != nullptr || PyErr_Occurred()) return value;
  PyObject* builtins = fn.module->builtins;
  if (PyDict_Check(builtins)) {
    value = PyDict_GetItemWithError(builtins, name);
  } else {
    value = PyObject_GetAttr(builtins, name);
    if (value != nullptr) Py_DECREF(value);  // the module keeps it alive
    else if (PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
  }
  if (value == nullptr && !PyErr_Occurred()) {
    PyErr_Format(PyExc_NameError, "name '%U' is not defined", name);
  }
  return value;
}

PyObject* BuildSpan(Op op, Value* regs, int first, int count) {
  PyObject** items = reinterpret_cast<PyObject**>(regs + first);
  switch (op) {
    case Op::BUILD_LIST: {
      PyObject* list = PyList_New(count);
      if (list == nullptr) return nullptr;
      for (int i = 0; i < count; ++i) PyList_SET_ITEM(list, i, Py_NewRef(items[i]));
      return list;
    }
    case Op::BUILD_TUPLE: {
      PyObject* tuple = PyTuple_New(count);
      if (tuple == nullptr) return nullptr;
      for (int i = 0; i < count; ++i) PyTuple_SET_ITEM(tuple, i, Py_NewRef(items[i]));
      return tuple;
    }
    case Op::BUILD_SET: {
      PyObject* set = PySet_New(nullptr);
      if (set == nullptr) return nullptr;
      for (int i = 0; i < count; ++i) {
        if (PySet_Add(set, items[i]) < 0) {
          Py_DECREF(set);
          return nullptr;
        }
      }
      return set;
    }
    case Op::BUILD_DICT: {
      PyObject* dict = PyDict_New();
      if (dict == nullptr) return nullptr;
      for (int i = 0; i + 1 < count; i += 2) {
        if (PyDict_SetItem(dict, items[i], items[i + 1]) < 0) {
          Py_DECREF(dict);
          return nullptr;
        }
      }
      return dict;
    }
    case Op::BUILD_SLICE:
      return PySlice_New(items[0], items[1], count == 3 ? items[2] : nullptr);
    case Op::BUILD_STRING: {
      PyObject* parts = PyTuple_New(count);
      if (parts == nullptr) return nullptr;
      for (int i = 0; i < count; ++i) PyTuple_SET_ITEM(parts, i, Py_NewRef(items[i]));
      PyObject* empty = PyUnicode_FromStringAndSize("", 0);
      PyObject* joined = empty ? PyUnicode_Join(empty, parts) : nullptr;
      Py_XDECREF(empty);
      Py_DECREF(parts);
      return joined;
    }
    default:
      return nullptr;
  }
}

}  // namespace
}  // namespace ppy

// PPY_BINARY_OPS names PyNumber_Power and PyNumber_InPlacePower as two-argument
// functions; these shadows supply the missing modulus inside this file only.
#define PyNumber_Power(a, b) PyNumber_Power(a, b, Py_None)
#define PyNumber_InPlacePower(a, b) PyNumber_InPlacePower(a, b, Py_None)

namespace ppy {
namespace {

PyObject* BinaryObjectOp(int op, PyObject* left, PyObject* right) {
  bool in_place = op >= kBinaryInPlace;
  switch (static_cast<BinaryOp>(in_place ? op - kBinaryInPlace : op)) {
#define PPY_BINARY_CASE(name, symbol, plain, inplace) \
  case BinaryOp::name:                                \
    return in_place ? inplace(left, right) : plain(left, right);
    PPY_BINARY_OPS(PPY_BINARY_CASE)
#undef PPY_BINARY_CASE
  }
  return nullptr;
}

// ---- Fast paths of object instructions -------------------------------------------------
// The commonest operands of object-mode code get CPython's answer without its
// generic protocol: + - * / of two exact floats, + - * of two exact ints that
// fit 64 bits, comparisons of two exact floats or ints, and an exact list or
// tuple indexed by an exact int inside it. Anything else (a subclass, an
// error, a result beyond 64 bits) returns null without an exception, and the
// generic path answers, raising what CPython raises.

// `left op right` as a double for two exact floats and + - * / (not a
// division by zero, which raises): true, or false for anything else.
inline bool FastFloatBinary(int op, PyObject* left, PyObject* right, double* result) {
  if (!PyFloat_CheckExact(left) || !PyFloat_CheckExact(right)) return false;
  const double x = PyFloat_AS_DOUBLE(left), y = PyFloat_AS_DOUBLE(right);
  switch (static_cast<BinaryOp>(op >= kBinaryInPlace ? op - kBinaryInPlace : op)) {
    case BinaryOp::ADD: *result = x + y; return true;
    case BinaryOp::SUB: *result = x - y; return true;
    case BinaryOp::MUL: *result = x * y; return true;
    case BinaryOp::TRUEDIV:
      if (y == 0.0) return false;
      *result = x / y;
      return true;
    default: return false;
  }
}

// Stores a float into `slot` (a register's object, a list's item): in place
// when it holds an exact float nothing else references (a reference count
// of 1: an object parameter is held by its caller too, a list's item by the
// list alone), which no one can tell from a new one, without an allocation
// and a release (CPython's own float operations reuse memory through a free
// list); else a new float, the old object released. False if it cannot be
// allocated.
inline bool StoreFloat(PyObject*& slot, double value) {
  PyObject* old = slot;
  if (old != nullptr && Py_REFCNT(old) == 1 && PyFloat_CheckExact(old)) {
    reinterpret_cast<PyFloatObject*>(old)->ob_fval = value;
    return true;
  }
  PyObject* boxed = PyFloat_FromDouble(value);
  if (boxed == nullptr) return false;
  slot = boxed;
  Py_XDECREF(old);
  return true;
}

inline bool StoreFloat(Value& reg, double value) { return StoreFloat(reg.o, value); }

// `left op right` (BINARY_O's D, in-place forms included: ints are
// immutable) for two exact ints whose result fits 64 bits, or null. (Two
// floats are FastFloatBinary's, which BINARY_O tries first.)
PyObject* FastIntBinary(int op, PyObject* left, PyObject* right) {
  const auto binary = static_cast<BinaryOp>(op >= kBinaryInPlace ? op - kBinaryInPlace : op);
  if (PyLong_CheckExact(left) && PyLong_CheckExact(right)) {
    long long x, y, value;
    if (!ExactIntValue(left, &x) || !ExactIntValue(right, &y)) return nullptr;
    switch (binary) {
      case BinaryOp::ADD:
        if (__builtin_add_overflow(x, y, &value)) return nullptr;
        break;
      case BinaryOp::SUB:
        if (__builtin_sub_overflow(x, y, &value)) return nullptr;
        break;
      case BinaryOp::MUL:
        if (__builtin_mul_overflow(x, y, &value)) return nullptr;
        break;
      default: return nullptr;
    }
    return PyLong_FromLongLong(value);
  }
  return nullptr;
}

// x <op> y (Py_LT..Py_GE) as C compares numbers: 1 or 0, or -1 for an op
// outside the six.
template <typename Number>
int CompareNumbers(int op, Number x, Number y) {
  switch (op) {
    case Py_LT: return x < y;
    case Py_LE: return x <= y;
    case Py_EQ: return x == y;
    case Py_NE: return x != y;
    case Py_GT: return x > y;
    case Py_GE: return x >= y;
    default: return -1;
  }
}

// `left <op> right` (Py_LT..Py_GE) for two exact floats, two exact ints that
// fit 64 bits, or two exact strs (== and != only): 1 or 0, or -1 for anything
// else. None of these runs Python code.
int FastCompareTruth(int op, PyObject* left, PyObject* right) {
  if (PyFloat_CheckExact(left) && PyFloat_CheckExact(right)) {
    return CompareNumbers(op, PyFloat_AS_DOUBLE(left), PyFloat_AS_DOUBLE(right));
  }
  if (PyLong_CheckExact(left) && PyLong_CheckExact(right)) {
    long long x, y;
    if (!ExactIntValue(left, &x) || !ExactIntValue(right, &y)) return -1;
    return CompareNumbers(op, x, y);
  }
  if ((op == Py_EQ || op == Py_NE) && PyUnicode_CheckExact(left) && PyUnicode_CheckExact(right) &&
      PyUnicode_READY(left) == 0 && PyUnicode_READY(right) == 0) {
    // str == str: equal objects (interned literals) are equal strings, and
    // strings of different lengths or kinds are not (CPython's own shortcuts);
    // nor are two different interned strings, which the interpreter's table
    // of them keeps one object per value (what a chain of `op == "push"`
    // tests over interned names meets at every test but one).
    int result;
    if (left == right) {
      result = 1;
    } else if (PyUnicode_CHECK_INTERNED(left) && PyUnicode_CHECK_INTERNED(right)) {
      result = 0;
    } else if (PyUnicode_GET_LENGTH(left) != PyUnicode_GET_LENGTH(right) ||
               PyUnicode_KIND(left) != PyUnicode_KIND(right)) {
      result = 0;
    } else {
      result = std::memcmp(PyUnicode_DATA(left), PyUnicode_DATA(right),
                           PyUnicode_GET_LENGTH(left) * PyUnicode_KIND(left)) == 0;
    }
    return op == Py_NE ? !result : result;
  }
  return -1;
}

// FastCompareTruth's answer as Py_True or Py_False (new references), or null.
PyObject* FastCompare(int op, PyObject* left, PyObject* right) {
  const int result = FastCompareTruth(op, left, right);
  if (result < 0) return nullptr;
  return Py_NewRef(result ? Py_True : Py_False);
}

// The descriptor `name` resolves to on `type`, cached for the instruction at
// `pc` by the type's version tag, if `accept` takes it (else null, cached too).
template <typename Accept>
PyObject* CachedTypeLookup(const FunctionCode& fn, int pc, PyTypeObject* type, PyObject* name, Accept accept) {
  if (!HasValidVersionTag(type)) return nullptr;
  FunctionRuntime& runtime = *fn.runtime;
  if (runtime.type_cache == nullptr) runtime.type_cache = std::make_unique<FunctionRuntime::TypeCacheEntry[]>(fn.code.size());
  FunctionRuntime::TypeCacheEntry& entry = runtime.type_cache[pc];
  if (entry.type != type || entry.version_tag != type->tp_version_tag) {
    PyObject* found = _PyType_Lookup(type, name);  // borrowed; may assign the version tag
    entry = {};
    if (HasValidVersionTag(type)) {
      entry = {type, type->tp_version_tag, found != nullptr && accept(found) ? found : nullptr};
    }
  }
  return entry.found;
}

// The global_cache entry of the instruction at `pc`, the cache made at the
// first use.
FunctionRuntime::GlobalCacheEntry& GlobalCacheAt(const FunctionCode& fn, int pc) {
  FunctionRuntime& runtime = *fn.runtime;
  if (runtime.global_cache == nullptr) {
    runtime.global_cache = std::make_unique<FunctionRuntime::GlobalCacheEntry[]>(fn.code.size());
  }
  return runtime.global_cache[pc];
}

// `module_dict[name]` (borrowed), or null (with an exception if the lookup
// raised). On 3.11 it is cached for the CALL_METHOD at `pc` (in its
// global_cache entry) by the dict's version tag, which 3.11 draws from one
// counter for all dicts: an equal tag is the same dict, unchanged since. (From
// 3.12 the tag is deprecated: the dict is looked up every time.)
PyObject* ModuleFunction(const FunctionCode& fn, int pc, PyObject* module_dict, PyObject* name) {
#if PY_VERSION_HEX < 0x030C0000
  const uint64_t version = reinterpret_cast<PyDictObject*>(module_dict)->ma_version_tag;
  FunctionRuntime::GlobalCacheEntry& entry = GlobalCacheAt(fn, pc);
  if (entry.value != nullptr && entry.globals_version == version) return entry.value;
  PyObject* function = PyDict_GetItemWithError(module_dict, name);
  entry = function != nullptr ? FunctionRuntime::GlobalCacheEntry{version, 0, function}
                              : FunctionRuntime::GlobalCacheEntry{};
  return function;
#else
  (void)fn;
  (void)pc;
  return PyDict_GetItemWithError(module_dict, name);
#endif
}

// Whether `type` has no attribute `name`: a miss of CachedTypeLookup that
// its cache holds (a type without a valid version tag is never known to lack it).
bool TypeLacks(const FunctionCode& fn, int pc, PyTypeObject* type, PyObject* name) {
  if (CachedTypeLookup(fn, pc, type, name, [](PyObject*) { return true; }) != nullptr) return false;
  const FunctionRuntime::TypeCacheEntry* cache = fn.runtime->type_cache.get();
  return cache != nullptr && cache[pc].type == type && cache[pc].version_tag == type->tp_version_tag &&
         HasValidVersionTag(type);
}

// `list.append(x)` and `list.pop()` on an exact list (args[0]), the methods
// object-mode loops call most, done in place as CPython's own do them (3.11
// gives append an instruction of its own, PRECALL_NO_KW_LIST_APPEND): append
// through PyList_Append; pop of the last item when it needs no shrinking of
// the list's storage (list_resize's own test), the list's reference becoming
// the result. Null without an exception for anything else (pop(i), an empty
// list, a pop that shrinks), which the method descriptor's call handles.
PyObject* ListMethodInPlace(PyObject* method, PyObject* const* args, size_t nargs) {
  static PyObject* const append = _PyType_Lookup(&PyList_Type, PyUnicode_InternFromString("append"));
  static PyObject* const pop = _PyType_Lookup(&PyList_Type, PyUnicode_InternFromString("pop"));
  if (method == append && nargs == 2) {
    return PyList_Append(args[0], args[1]) < 0 ? nullptr : Py_NewRef(Py_None);
  }
  if (method == pop && nargs == 1) {
    PyListObject* list = reinterpret_cast<PyListObject*>(args[0]);
    const Py_ssize_t size = Py_SIZE(list);
    if (size > 0 && size - 1 >= (list->allocated >> 1)) {
      Py_SET_SIZE(list, size - 1);
      return list->ob_item[size - 1];
    }
  }
  return nullptr;
}

// Where `entry`'s type (one with instance values, vm/instance_values.h) keeps
// `name` in its instances' values (value_index, -1 if nowhere), looked up
// again whenever its shared keys have grown since the entry last did
// (key_count; -1 before the first look): a name found keeps its place.
void UpdateValueIndex(FunctionRuntime::TypeCacheEntry& entry, PyObject* name) {
  const Py_ssize_t count = InstanceValueKeyCount(entry.type);
  if (entry.key_count != count) {
    entry.value_index = InstanceValueIndex(entry.type, name);
    entry.key_count = count;
  }
}

// Whether `object`, of a type with instance values (vm/instance_values.h)
// whose CALL_METHOD cache `entry` holds, has no attribute `name` of its own:
// it has no dict, and its class's shared keys lack the name (looked at again
// whenever they have grown since the entry last did).
bool InstanceLacks(FunctionRuntime::TypeCacheEntry& entry, PyObject* object, PyObject* name) {
  UpdateValueIndex(entry, name);
  return entry.value_index < 0 && InstanceValues(object, false) != nullptr;
}

// `receiver.name(args...)` (args[0] is the receiver) when the receiver's
// type has no attribute hook and the receiver no attribute of that name of
// its own (no instance dict, or instance values that lack it: CPython's
// LOAD_METHOD_WITH_VALUES), so that a method descriptor found on the type is
// what the lookup returns (as CPython's LOAD_METHOD finds it). For a module (`math.sqrt(x)`), whose type has no
// attribute of that name (cached, by the module type's version tag), the
// module's dict answers, as generic attribute lookup would, and the function
// is called without the receiver (CPython's LOAD_METHOD_MODULE). Anything
// else is PyObject_VectorcallMethod's.
PyObject* CallMethodCached(const FunctionCode& fn, int pc, PyObject* name, PyObject* const* args, size_t nargs) {
  PyTypeObject* type = Py_TYPE(args[0]);
  if (type == &PyModule_Type) {
    if (TypeLacks(fn, pc, type, name)) {
      PyObject* function = ModuleFunction(fn, pc, PyModule_GetDict(args[0]), name);  // borrowed
      if (function != nullptr) {
        Py_INCREF(function);  // (the call may rebind the name)
        PyObject* result = PyObject_Vectorcall(function, args + 1, nargs - 1, nullptr);
        Py_DECREF(function);
        return result;
      }
      if (PyErr_Occurred()) return nullptr;
    }
  }
  if (type->tp_getattro == PyObject_GenericGetAttr && (type->tp_dictoffset == 0 || TypeHasInstanceValues(type))) {
    PyObject* method = CachedTypeLookup(fn, pc, type, name, [](PyObject* found) {
      return PyType_HasFeature(Py_TYPE(found), Py_TPFLAGS_METHOD_DESCRIPTOR);
    });
    if (method != nullptr && (type->tp_dictoffset == 0 || InstanceLacks(fn.runtime->type_cache[pc], args[0], name))) {
      if (type == &PyList_Type) {
        if (PyObject* result = ListMethodInPlace(method, args, nargs)) return result;
        if (PyErr_Occurred()) return nullptr;
      }
      return PyObject_Vectorcall(method, args, nargs, nullptr);
    }
  }
  return PyObject_VectorcallMethod(name, args, nargs, nullptr);
}

// The member a member descriptor `found` describes, if it can be read (or,
// for a store, written) in place: not one with audited reads or restricted
// writes. Else null.
inline PyMemberDef* PlainMember(PyObject* found, bool store) {
  PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(found)->d_member;
  return (member->flags & ~(store ? 0 : READONLY)) == 0 ? member : nullptr;
}

// `object.member = value` in place for T_OBJECT_EX (STORE_ATTR_SLOT), else
// PyMember_SetOne.
inline int SetSlot(PyObject* object, PyMemberDef* member, PyObject* value) {
  if (member->type != T_OBJECT_EX) return PyMember_SetOne(reinterpret_cast<char*>(object), member, value);
  PyObject** slot = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(object) + member->offset);
  PyObject* old = *slot;
  *slot = Py_NewRef(value);
  Py_XDECREF(old);
  return 0;
}

// Fills the type_cache entry of the LOAD_ATTR or STORE_ATTR (`store`) at `pc`
// for `type` as it is now, if the entry is not for it (AttributeEntry). When
// the type's generic getattr (setattr) answers for it, the entry holds where
// `name` is:
//   - a member descriptor (`__slots__`; found): a data descriptor, so it wins
//     over any instance dict;
//   - nothing on the type at all: then an instance's own attribute is all
//     there is, and where the type's instances keep their values (as long as
//     they have no dict), the entry holds its position (value_index), or -1
//     while the class's shared keys do not hold the name (key_count says how
//     many they held: the entry is looked at again when they grow).
// Anything else (a property, a class attribute, a method, a type with its own
// __getattr__ or __setattr__) leaves both empty: the generic path answers.
// Null for a type without a valid version tag, which nothing can be cached for.
[[gnu::noinline]] const FunctionRuntime::TypeCacheEntry* FillAttributeEntry(const FunctionCode& fn, int pc,
                                                                           PyTypeObject* type, PyObject* name,
                                                                           bool store) {
  FunctionRuntime& runtime = *fn.runtime;
  if (runtime.type_cache == nullptr) runtime.type_cache = std::make_unique<FunctionRuntime::TypeCacheEntry[]>(fn.code.size());
  FunctionRuntime::TypeCacheEntry& entry = runtime.type_cache[pc];
  if (entry.type == type && entry.version_tag == type->tp_version_tag && entry.key_count >= 0) {
    UpdateValueIndex(entry, name);  // (the name was missing from the shared keys)
    return &entry;
  }
  PyObject* found = _PyType_Lookup(type, name);  // borrowed; may assign the version tag
  entry = {};
  if (!HasValidVersionTag(type)) return nullptr;
  entry.type = type;
  entry.version_tag = type->tp_version_tag;
  const bool generic = store ? type->tp_setattro == PyObject_GenericSetAttr : type->tp_getattro == PyObject_GenericGetAttr;
  if (!generic) return &entry;
  if (found != nullptr) {
    if (Py_IS_TYPE(found, &PyMemberDescr_Type)) {
      entry.found = found;
      PyMemberDef* member = PlainMember(found, false);
      if (!store && member != nullptr && member->type == T_OBJECT_EX) entry.slot_offset = member->offset;
    }
  } else if (TypeHasInstanceValues(type)) {
    UpdateValueIndex(entry, name);
  }
  return &entry;
}

// The type_cache entry of the attribute instruction at `pc` for `object`'s
// type: inline when the entry holds that type at its version tag (a valid tag
// is never 0, and a modified type's tag changes, so a match means the type is
// as it was: the same descriptors, tp_getattro and tp_setattro, and the same
// shared keys), else filled (FillAttributeEntry). An entry whose name the
// shared keys lacked is filled again whenever the keys may have grown.
inline const FunctionRuntime::TypeCacheEntry* AttributeEntry(const FunctionCode& fn, int pc, PyObject* object,
                                                             PyObject* name, bool store) {
  PyTypeObject* type = Py_TYPE(object);
  if (const FunctionRuntime::TypeCacheEntry* cache = fn.runtime->type_cache.get()) {
    const FunctionRuntime::TypeCacheEntry& entry = cache[pc];
    if (entry.type == type && entry.version_tag == type->tp_version_tag && (entry.key_count < 0 || entry.value_index >= 0)) {
      return &entry;
    }
  }
  return FillAttributeEntry(fn, pc, type, name, store);
}

// `object`'s attribute where the load's cache `entry` for its type
// (AttributeEntry) finds it in place: a value of the instance's values
// array, or a `__slots__` member holding an object (slot_offset), read as
// CPython's LOAD_ATTR_INSTANCE_VALUE and LOAD_ATTR_SLOT read them; borrowed,
// or null (not there, or not in place).
inline PyObject* ValueInPlace(const FunctionRuntime::TypeCacheEntry& entry, PyObject* object) {
  if (entry.value_index >= 0) {
    PyObject** values = InstanceValues(object, false);
    return values != nullptr ? values[entry.value_index] : nullptr;
  }
  if (entry.slot_offset >= 0) return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(object) + entry.slot_offset);
  return nullptr;
}

// `object.name` (a new reference) for the LOAD_ATTR at `pc`: a `__slots__`
// member read in place (LOAD_ATTR_SLOT), an instance's value read from its
// values array (LOAD_ATTR_INSTANCE_VALUE), both as CPython 3.11 specializes
// them; the generic lookup for anything else, and whenever the value is not
// there (an unset attribute: the generic path raises AttributeError).
inline PyObject* GetAttribute(const FunctionCode& fn, int pc, PyObject* object, PyObject* name) {
  if (const FunctionRuntime::TypeCacheEntry* entry = AttributeEntry(fn, pc, object, name, false)) {
    if (PyObject* value = ValueInPlace(*entry, object)) return Py_NewRef(value);
    // Another member (not an object's, or an unset slot): its own getter,
    // which raises AttributeError for an unset one.
    if (entry->value_index < 0 && entry->found != nullptr) {
      if (PyMemberDef* member = PlainMember(entry->found, false)) {
        return PyMember_GetOne(reinterpret_cast<const char*>(object), member);
      }
    }
  }
  return PyObject_GetAttr(object, name);
}

}  // namespace

PyObject* AttributeInPlace(const FunctionCode& fn, int pc, PyObject* object) {
  if (object == nullptr) return nullptr;
  PyObject* name = fn.objects[fn.code[pc].d];
  const FunctionRuntime::TypeCacheEntry* entry = AttributeEntry(fn, pc, object, name, false);
  return entry != nullptr ? ValueInPlace(*entry, object) : nullptr;
}

bool CachedSlotMember(const FunctionCode& fn, int pc, PyTypeObject** type, unsigned int* version_tag,
                      Py_ssize_t* offset) {
  // (Nothing here follows a pointer of the entry: the type may be gone since
  // it was filled, and then no object has it for a type any more, or one
  // made since at its address has another tag.)
  const FunctionRuntime::TypeCacheEntry* cache = fn.runtime->type_cache.get();
  if (cache == nullptr || cache[pc].type == nullptr || cache[pc].version_tag == 0 || cache[pc].slot_offset < 0) {
    return false;
  }
  *type = cache[pc].type;
  *version_tag = cache[pc].version_tag;
  *offset = cache[pc].slot_offset;
  return true;
}

namespace {

// `object.name = value` for the STORE_ATTR at `pc`, the same way: a value
// replaced in an instance's values array in place (STORE_ATTR_INSTANCE_VALUE;
// an attribute not set yet takes the generic path, which also keeps the
// order of insertion). 0, or -1 with an exception.
inline int SetAttribute(const FunctionCode& fn, int pc, PyObject* object, PyObject* name, PyObject* value) {
  if (const FunctionRuntime::TypeCacheEntry* entry = AttributeEntry(fn, pc, object, name, true)) {
    if (entry->value_index >= 0) {
      if (PyObject** values = InstanceValues(object, true)) {
        if (PyObject* old = values[entry->value_index]) {
          values[entry->value_index] = Py_NewRef(value);
          Py_DECREF(old);
          return 0;
        }
      }
    } else if (entry->found != nullptr) {
      if (PyMemberDef* member = PlainMember(entry->found, true)) return SetSlot(object, member, value);
    }
  }
  return PyObject_SetAttr(object, name, value);
}

// x + y as a Python int (past 64 bits where it overflows), or null with an
// exception.
[[gnu::cold]] PyObject* AddedInt(int64_t x, int64_t y) {
  PyObject* a = PyLong_FromLongLong(x);
  PyObject* b = a != nullptr ? PyLong_FromLongLong(y) : nullptr;
  PyObject* sum = b != nullptr ? PyNumber_Add(a, b) : nullptr;
  Py_XDECREF(a);
  Py_XDECREF(b);
  return sum;
}

// The position an exact int `index` names in a sequence of `length` items
// (negative counts from the end), or -1 outside it or for anything else.
Py_ssize_t FastIndex(PyObject* index, Py_ssize_t length) {
  long long i;
  if (!PyLong_CheckExact(index) || !ExactIntValue(index, &i)) return -1;
  if (i < 0) i += length;
  return i >= 0 && i < length ? static_cast<Py_ssize_t>(i) : -1;
}

// Where list[index] is for an exact list and an exact int inside it
// (negative counts from the end), or null.
inline PyObject** ListItemAt(PyObject* list, PyObject* index) {
  if (!PyList_CheckExact(list)) return nullptr;
  const Py_ssize_t i = FastIndex(index, PyList_GET_SIZE(list));
  return i >= 0 ? reinterpret_cast<PyListObject*>(list)->ob_item + i : nullptr;
}

// container[i] = value (borrowed) for a machine int i that ListItemAtIndex
// did not place: the int boxed, as CPython's store would have it. False with
// the exception set.
bool SetItemAtIndex(PyObject* container, int64_t i, PyObject* value) {
  PyObject* key = PyLong_FromLongLong(i);
  if (key == nullptr) return false;
  const int stored = PyObject_SetItem(container, key, value);
  Py_DECREF(key);
  return stored == 0;
}

// Where container[i] is for an exact list or tuple and a machine int inside
// it (negative counts from the end), or null.
inline PyObject** ItemAt(PyObject* container, int64_t i) {
  Py_ssize_t length;
  PyObject** items;
  if (PyList_CheckExact(container)) {
    length = PyList_GET_SIZE(container);
    items = reinterpret_cast<PyListObject*>(container)->ob_item;
  } else if (PyTuple_CheckExact(container)) {
    length = PyTuple_GET_SIZE(container);
    items = reinterpret_cast<PyTupleObject*>(container)->ob_item;
  } else {
    return nullptr;
  }
  if (i < 0) i += length;
  return i >= 0 && i < length ? items + i : nullptr;
}

// Where list[i] is for an exact list (a store's place: not a tuple's) and a
// machine int inside it, or null.
inline PyObject** ListItemAtIndex(PyObject* list, int64_t i) {
  return PyList_CheckExact(list) ? ItemAt(list, i) : nullptr;
}

// container[i] for an exact list or tuple and a machine int inside it
// (negative counts from the end): a new reference, or null.
inline PyObject* FastGetItemAt(PyObject* container, int64_t i) {
  PyObject** item = ItemAt(container, i);
  return item != nullptr ? Py_NewRef(*item) : nullptr;
}

// container[index] for an exact list or tuple and an exact int inside it (a
// new reference), or null.
PyObject* FastGetItem(PyObject* container, PyObject* index) {
  long long i;
  if (!PyLong_CheckExact(index) || !ExactIntValue(index, &i)) return nullptr;
  return FastGetItemAt(container, i);
}

// The parts of a slice, `parts` (start, stop and, if `count` is 3, step; None
// for an omitted one), as PySlice_Unpack makes them, where each is None or an
// exact int within Py_ssize_t and the step is not zero. False for anything
// else (an int subclass, an object with __index__, a huge int, a zero step):
// the slice object is made and CPython's own path converts, clamps or raises.
bool SliceParts(PyObject* const* parts, int count, Py_ssize_t* start, Py_ssize_t* stop, Py_ssize_t* step) {
  long long value;
  *step = 1;
  if (count == 3 && parts[2] != Py_None) {
    if (!PyLong_CheckExact(parts[2]) || !ExactIntValue(parts[2], &value) || value == 0 ||
        value < -PY_SSIZE_T_MAX || value > PY_SSIZE_T_MAX) {
      return false;
    }
    *step = static_cast<Py_ssize_t>(value);
  }
  const Py_ssize_t bounds[2][2] = {{0, PY_SSIZE_T_MAX}, {PY_SSIZE_T_MAX, PY_SSIZE_T_MIN}};  // [step < 0][part]
  Py_ssize_t* out[2] = {start, stop};
  for (int i = 0; i < 2; ++i) {
    if (parts[i] == Py_None) {
      *out[i] = bounds[*step < 0][i];
    } else if (PyLong_CheckExact(parts[i]) && ExactIntValue(parts[i], &value) && value >= PY_SSIZE_T_MIN &&
               value <= PY_SSIZE_T_MAX) {
      *out[i] = static_cast<Py_ssize_t>(value);
    } else {
      return false;
    }
  }
  return true;
}

// container[start:stop:step] (span[0] the container, then the parts, `count`
// of them) for an exact list or tuple, as list_subscript and tuple_subscript
// make it, without the slice object: true with the new list or tuple in
// *result (null if that raised: MemoryError), or false where GETSLICE makes
// the slice object and asks the container.
bool FastGetSlice(PyObject* const* span, int count, PyObject** result) {
  PyObject* container = span[0];
  const bool list = PyList_CheckExact(container);
  if (!list && !PyTuple_CheckExact(container)) return false;
  Py_ssize_t start, stop, step;
  if (!SliceParts(span + 1, count, &start, &stop, &step)) return false;
  const Py_ssize_t length = PySlice_AdjustIndices(Py_SIZE(container), &start, &stop, step);
  if (step == 1 || length <= 0) {  // (an empty or whole tuple's slice is that tuple, as CPython's)
    if (length <= 0) start = stop = 0;
    *result = list ? PyList_GetSlice(container, start, stop) : PyTuple_GetSlice(container, start, stop);
    return true;
  }
  PyObject* const* items = list ? reinterpret_cast<PyListObject*>(container)->ob_item
                                : reinterpret_cast<PyTupleObject*>(container)->ob_item;
  PyObject* sliced = list ? PyList_New(length) : PyTuple_New(length);
  if (sliced != nullptr) {
    PyObject** into = list ? reinterpret_cast<PyListObject*>(sliced)->ob_item
                           : reinterpret_cast<PyTupleObject*>(sliced)->ob_item;
    for (Py_ssize_t i = 0, at = start; i < length; ++i, at += step) into[i] = Py_NewRef(items[at]);
  }
  *result = sliced;
  return true;
}

// list[start:stop] = value (span[0] the list, then the parts) for an exact
// list and a step of one, as list_ass_subscript does it, through the same
// list_ass_slice (PyList_SetSlice), without the slice object: true with
// *stored set (false if that raised: a value that is not iterable, or what
// iterating it or releasing the replaced items raised), or false where
// SETSLICE makes the slice object and asks the container. (An extended
// slice's assignment, with its length check, is left to the list.)
//
// The versions differ in order. Up to 3.12 the bounds are fitted to the
// list's length first and list_ass_slice then takes the value's items
// ("can only assign an iterable"); from 3.13 the value's items are taken
// first (a copy where the value is the list itself; "must assign iterable
// to extended slice"), and the bounds fitted to the length the list has
// after that, which iterating a generator may have changed.
bool FastSetSlice(PyObject* const* span, int count, PyObject* value, bool* stored) {
  PyObject* list = span[0];
  if (!PyList_CheckExact(list)) return false;
  Py_ssize_t start, stop, step;
  if (!SliceParts(span + 1, count, &start, &stop, &step) || step != 1) return false;
#if PY_VERSION_HEX >= 0x030D0000
  PyObject* items = value == list ? PyList_GetSlice(list, 0, PyList_GET_SIZE(list))
                                  : PySequence_Fast(value, "must assign iterable to extended slice");
  if (items == nullptr) {
    *stored = false;
    return true;
  }
  PySlice_AdjustIndices(PyList_GET_SIZE(list), &start, &stop, step);
  *stored = PyList_SetSlice(list, start, stop, items) == 0;
  Py_DECREF(items);
#else
  PySlice_AdjustIndices(PyList_GET_SIZE(list), &start, &stop, step);
  *stored = PyList_SetSlice(list, start, stop, value) == 0;
#endif
  return true;
}

PyObject* UnaryObject(int op, PyObject* operand) {
  switch (static_cast<UnaryOp>(op)) {
    case UnaryOp::kNegative: return PyNumber_Negative(operand);
    case UnaryOp::kPositive: return PyNumber_Positive(operand);
    case UnaryOp::kInvert: return PyNumber_Invert(operand);
  }
  return nullptr;
}

PyObject* FormatObject(PyObject* value, int conversion, PyObject* spec) {
  PyObject* converted = nullptr;
  switch (conversion) {
    case 1: converted = PyObject_Str(value); break;
    case 2: converted = PyObject_Repr(value); break;
    case 3: converted = PyObject_ASCII(value); break;
    default: converted = Py_NewRef(value); break;
  }
  if (converted == nullptr) return nullptr;
  if (spec == nullptr && PyUnicode_CheckExact(converted)) return converted;
  PyObject* formatted = PyObject_Format(converted, spec);
  Py_DECREF(converted);
  return formatted;
}

// Unpacks `seq` into exactly `count` new references, with CPython's messages.
bool UnpackObject(PyObject* seq, int count, PyObject** out) {
  if (PyTuple_CheckExact(seq) || PyList_CheckExact(seq)) {
    Py_ssize_t size = PySequence_Fast_GET_SIZE(seq);
    if (size == count) {
      PyObject** items = PySequence_Fast_ITEMS(seq);
      for (int i = 0; i < count; ++i) out[i] = Py_NewRef(items[i]);
      return true;
    }
    if (size < count) {
      PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected %d, got %zd)", count, size);
    } else {
      PyErr_Format(PyExc_ValueError, "too many values to unpack (expected %d)", count);
    }
    return false;
  }
  PyObject* iterator = PyObject_GetIter(seq);
  if (iterator == nullptr) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "cannot unpack non-iterable %.200s object", Py_TYPE(seq)->tp_name);
    }
    return false;
  }
  int got = 0;
  for (; got < count; ++got) {
    PyObject* item = PyIter_Next(iterator);
    if (item == nullptr) {
      if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected %d, got %d)", count, got);
      }
      break;
    }
    out[got] = item;
  }
  if (got == count) {
    PyObject* extra = PyIter_Next(iterator);
    if (extra == nullptr && !PyErr_Occurred()) {
      Py_DECREF(iterator);
      return true;
    }
    if (extra != nullptr) {
      Py_DECREF(extra);
      PyErr_Format(PyExc_ValueError, "too many values to unpack (expected %d)", count);
    }
  }
  for (int i = 0; i < got; ++i) Py_DECREF(out[i]);
  Py_DECREF(iterator);
  return false;
}

// CPython's do_raise for `raise X`: a class is instantiated, anything else must
// be an exception instance.
void RaiseObject(PyObject* exc) {
  if (PyExceptionClass_Check(exc)) {
    PyObject* value = PyObject_CallNoArgs(exc);
    if (value == nullptr) return;
    if (!PyExceptionInstance_Check(value)) {
      PyErr_Format(PyExc_TypeError,
                   "calling %R should have returned an instance of BaseException, not %R", exc,
                   Py_TYPE(value));
      Py_DECREF(value);
      return;
    }
    PyErr_SetObject(exc, value);
    Py_DECREF(value);
  } else if (PyExceptionInstance_Check(exc)) {
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
  } else {
    PyErr_SetString(PyExc_TypeError, "exceptions must derive from BaseException");
  }
}

bool MathFloat(int fn, double x, double* out) {
  double (*fast)(double) = kMathInfo[fn].fast1;
  if (fast == nullptr) return MathSlow(fn, x, 0.0, out);
  double r = fast(x);
  // CPython's math_1 keeps a finite result, and a non-finite result of a
  // non-finite argument in kind (inf from inf, nan from nan).
  if (std::isfinite(r) || (std::isinf(r) && std::isinf(x)) || (std::isnan(r) && std::isnan(x))) {
    *out = r;
    return true;
  }
  return MathSlow(fn, x, 0.0, out);
}

bool MathFloat2(int fn, double x, double y, double* out) {
  double (*fast)(double, double) = kMathInfo[fn].fast2;
  if (fast != nullptr && std::isfinite(x) && std::isfinite(y)) {
    double r = fast(x, y);
    if (std::isfinite(r)) {
      *out = r;
      return true;
    }
  }
  return MathSlow(fn, x, y, out);
}

bool MathToInt(const FunctionCode& code, int pc, int fn, double x, int64_t* out) {
  double r;
  switch (static_cast<MathFn>(fn)) {
    case MathFn::FLOOR: r = std::floor(x); break;
    case MathFn::CEIL: r = std::ceil(x); break;
    case MathFn::ROUND: r = std::nearbyint(x); break;
    default: r = std::trunc(x); break;
  }
  // math.floor(nan) raises ValueError and math.floor(inf) OverflowError with
  // int()'s messages, which FloatToInt gives.
  return FloatToInt(code, pc, r, out);
}

int64_t MathToBool(int fn, double x) {
  switch (static_cast<MathFn>(fn)) {
    case MathFn::ISNAN: return std::isnan(x);
    case MathFn::ISINF: return std::isinf(x);
    default: return std::isfinite(x);
  }
}

// Whether `fn` has machine code; compiles it (or looks for its pending code)
// first when `due`. Compiling and
// polling run under the GIL, which orders them across threads: the thread
// that finds the function still kNone under it marks it kCompiling, so that
// no other thread compiles it too while the compile reports through Python
// (which may let the GIL go). Other threads go on reading the state without
// the GIL: machine code is published (JitState::kCompiled, stored last) once
// complete and never replaced while the process runs.
// `due`: the general code is; `special_due`: the value specialization is.
bool TierUp(const FunctionCode& fn, bool due, const char* trigger, bool special_due) {
  FunctionRuntime& runtime = *fn.runtime;
  const JitState state = runtime.jit_state.load(std::memory_order_acquire);
  if (state == JitState::kPending) {
    TakeGil();
    g_tiering.poll(fn);
  } else if (state == JitState::kNone && due) {
    TakeGil();
    JitState expected = JitState::kNone;
    if (runtime.jit_state.compare_exchange_strong(expected, JitState::kCompiling)) g_tiering.compile(fn, trigger);
  }
  const bool compiled = runtime.jit_state.load(std::memory_order_acquire) == JitState::kCompiled;
  // The value specialization follows the general code, which the values it
  // was not made for keep running (compiled here, or mapped from the cache).
  if (compiled && special_due && runtime.special_state.load(std::memory_order_acquire) == JitState::kNone) {
    TakeGil();
    JitState expected = JitState::kNone;
    if (runtime.special_state.compare_exchange_strong(expected, JitState::kCompiling)) {
      if (g_tiering.specialize != nullptr) g_tiering.specialize(fn);
      else runtime.special_state.store(JitState::kUnavailable, std::memory_order_release);
    }
  }
  return compiled;
}

// Records the values of the function's value parameters in this call (a
// race between threads only blurs the record: the specialization's entry
// compares the values anyway).
void RecordValues(const FunctionCode& fn, const Value* regs) {
  FunctionRuntime& runtime = *fn.runtime;
  for (size_t k = 0; k < fn.value_params.size(); ++k) {
    FunctionRuntime::SeenValue& seen = runtime.seen[k];
    const int64_t value = regs[fn.value_params[k]].i;
    const uint8_t state = seen.state.load(std::memory_order_relaxed);
    if (state == FunctionRuntime::kUnseen) {
      seen.value.store(value, std::memory_order_relaxed);
      seen.state.store(FunctionRuntime::kOneValue, std::memory_order_relaxed);
    } else if (state == FunctionRuntime::kOneValue && seen.value.load(std::memory_order_relaxed) != value) {
      seen.state.store(FunctionRuntime::kSeveral, std::memory_order_relaxed);
    }
  }
}

// Whether the frame holds the values the function's specialization was made for.
inline bool SpecialMatches(const FunctionRuntime& runtime, const Value* regs) {
  for (int k = 0; k < runtime.special_count; ++k) {
    if (regs[runtime.special_regs[k]].i != runtime.special_values[k]) return false;
  }
  return true;
}

bool TierUpAtCall(const FunctionCode& fn) {
  // Compiled and specialized (or found nothing to specialize): no need to
  // sum the call counter's shards.
  const FunctionRuntime& runtime = *fn.runtime;
  const JitState state = runtime.jit_state.load(std::memory_order_acquire);
  if (state == JitState::kCompiled && runtime.special_state.load(std::memory_order_relaxed) != JitState::kNone) {
    return true;
  }
  // Nor for code that never runs as machine code (object code, say), or that
  // another thread is compiling: TierUp would find nothing to do.
  if (state == JitState::kUnavailable || state == JitState::kCompiling) return false;
  const bool eager = g_tiering.mode == JitMode::kEager;
  const uint64_t calls = fn.runtime->calls;
  // Hot by its calls, or by the back edges its earlier frames ran (each
  // frame credits those it ran at its exit: a function whose every call
  // loops fewer times than a frame's check interval is hot by their sum).
  const bool loops = fn.runtime->back_edges >= g_tiering.back_edge_threshold;
  const bool due = eager || calls >= g_tiering.call_threshold || loops;
  // A second call that shows the same values as the first is reason enough
  // to specialize (general code mapped from the cache would otherwise run
  // a loop-heavy function called a few times with no specialization at all).
  return TierUp(fn, due, eager ? "eager" : calls >= g_tiering.call_threshold || !loops ? "calls" : "loop",
                eager || calls >= 2);
}

// At a frame's loop check: its back edges are credited already (see
// Execute's credit_back_edges).
bool TierUpAtLoop(const FunctionCode& fn) {
  const bool due = g_tiering.mode == JitMode::kEager || fn.runtime->back_edges >= g_tiering.back_edge_threshold;
  return TierUp(fn, due, "loop", due);
}

void AddTraceback(const FunctionCode& fn, int pc) {
  AddTracebackEntry(fn.name.c_str(), fn.module->filename.c_str(), fn.LineAt(pc));
}

}  // namespace

namespace {
bool g_profiling = false;

uint64_t Now() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + now.tv_nsec;
}
}  // namespace

void SetProfiling(bool enabled) { g_profiling = enabled; }

namespace {

// A compiled frame lives on the C stack (its registers are alloca'd), and a
// raised recursion limit, or a thread with a small stack, would let typed
// recursion run the stack out before the limit is reached. So each call also
// checks the stack itself: below this thread's limit it raises RecursionError.
// The margin leaves room for the C API calls a frame makes (formatting an
// error, calling Python code, which checks its own depth).
constexpr uintptr_t kStackMargin = 256 * 1024;

// A frame's registers set word by word. (gcc would turn such loops into
// calls of memcpy and memset, which cost more than the few words a frame
// has: the empty asm hides the counter from that pattern match.)
inline void CopyWords(void* to, const void* from, ptrdiff_t count) {
  auto* out = static_cast<uint64_t*>(to);
  const auto* in = static_cast<const uint64_t*>(from);
  for (ptrdiff_t k = 0; k < count; ++k) {
    __asm__("" : "+r"(k));
    out[k] = in[k];
  }
}
inline void ZeroWords(void* to, ptrdiff_t count) {
  auto* out = static_cast<uint64_t*>(to);
  for (ptrdiff_t k = 0; k < count; ++k) {
    __asm__("" : "+r"(k));
    out[k] = 0;
  }
}

// The bytes of a frame of `fn`: its registers, a spare word, and past them
// the unboxing slots of unboxed code (vm/unbox.h).
inline size_t FrameBytes(const FunctionCode& fn) { return sizeof(Value) * fn.frame_words; }

// A call's frame: the arguments, the constants after them, every other
// register zero. Word by word: a frame holds a few registers, for which a
// call of memcpy or memset costs more than the copy (see CopyWords).
inline void MakeFrameAfterParams(const FunctionCode& fn, Value* regs) {
  const int num_params = fn.frame_params;
  const int end_of_constants = fn.frame_constants_end;
  if (end_of_constants > num_params) {  // (data() may be null when there are none)
    CopyWords(regs + num_params, fn.initial_constants.data(), end_of_constants - num_params);
  }
  ZeroWords(regs + end_of_constants, fn.frame_registers - end_of_constants);
}

inline void MakeFrame(const FunctionCode& fn, const Value* args, Value* regs) {
  CopyWords(regs, args, fn.frame_params);
  MakeFrameAfterParams(fn, regs);
}

// The global versions machine code checks its cached globals against.
inline const ModuleVersions* ModuleVersionsOf(const FunctionCode& fn) {
  static constexpr ModuleVersions kNoVersions;
  return fn.module != nullptr ? &fn.module->versions : &kNoVersions;
}

// Whether a call of `fn` runs its machine code from the first instruction
// with no interpreter frame around it (RunMachineCodeOnFrame): compiled, past
// the choice of a value specialization (so that TierUpAtCall has nothing
// left to do and no value needs recording), entered at its start, and a
// scalar frame (FunctionCode::scalar_frame: nothing to own, release or check
// for contiguity). Each test is one the interpreter's frame makes at its
// start, in the order it makes them.
inline bool RunsMachineCodeDirectly(const FunctionCode& fn) {
  const FunctionRuntime& runtime = *fn.runtime;
  return fn.scalar_frame && runtime.jit_state.load(std::memory_order_acquire) == JitState::kCompiled &&
         runtime.special_state.load(std::memory_order_relaxed) != JitState::kNone &&
         runtime.jit_enters_at_start.load(std::memory_order_relaxed);
}

// Entries at a function's start (calls) that leave at once, at an
// instruction machine code never runs (a call of Python code, a list's item
// taken as an object), cost each call the entry and the exit on top of the
// interpreter's work: about 120 instructions a call (callgrind, a str
// function that calls a Python function: 2,458 instructions a call with the
// entry, 2,336 without). Once 256 such entries outnumber those that ran to
// the end 8 to 1, calls stop entering there (machine code still runs the
// function's loops), and `ppy run --trace` says so.
inline constexpr uint32_t kStartLeavesToDrop = 256;

void NoteLeftFromStart(FunctionRuntime& runtime, bool returned) {
  // (Counts, not exact under threads: a lost increment only delays the rule.)
  if (returned) {
    runtime.start_returns.store(runtime.start_returns.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  const uint32_t leaves = runtime.start_leaves.load(std::memory_order_relaxed) + 1;
  runtime.start_leaves.store(leaves, std::memory_order_relaxed);
  if (leaves >= kStartLeavesToDrop && leaves / 8 > runtime.start_returns.load(std::memory_order_relaxed)) {
    runtime.jit_enters_at_start.store(false, std::memory_order_relaxed);
    runtime.jit_start_dropped.store(true, std::memory_order_relaxed);
  }
}

[[gnu::always_inline]] inline bool RunMachineCodeOnFrame(const FunctionCode& fn, Value* result, Value* regs);

constinit thread_local uintptr_t t_stack_limit PPY_FAST_TLS = 0;

[[gnu::cold, gnu::noinline]] uintptr_t ComputeStackLimit() {
  uintptr_t limit = 1;  // unknown: never trips
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
    void* low = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attributes, &low, &size) == 0 && size > 2 * kStackMargin) {
      limit = reinterpret_cast<uintptr_t>(low) + kStackMargin;
    }
    pthread_attr_destroy(&attributes);
  }
  t_stack_limit = limit;
  return limit;
}

inline bool StackExhausted() {
  uintptr_t limit = t_stack_limit;
  if (__builtin_expect(limit == 0, 0)) limit = ComputeStackLimit();
  return reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) < limit;
}

}  // namespace

namespace {
bool CallCounted(const FunctionCode& fn, const Value* args, Value* result);
}  // namespace

// A leaf's machine code, the commonest call of a small kernel from Python:
// no stack to check (it calls nothing, and its frame is bounded by
// kLeafFrameWords), and its depth checked but not counted (no frame above it
// could see the count). At the limit it is CallCounted's, which raises
// RecursionError where a call of the Python function would. The arguments
// are in place already: FunctionVectorcall unboxes them into the frame, so
// that each is stored once on its way from its object to the machine code.
bool CallLeafOnFrame(const FunctionCode& fn, Value* frame, Value* result) {
  if (g_profiling || InNogil() || !RunsMachineCodeDirectly(fn) || !BelowCompiledLimit(PyThreadState_Get())) {
    return CallCounted(fn, frame, result);
  }
  fn.runtime->calls.Bump(false);
  MakeFrameAfterParams(fn, frame);
  return RunMachineCodeOnFrame(fn, result, frame);
}

// (Not inlined in CallTyped: its array stays out of CallTyped's own frame,
// which a deep typed recursion repeats.)
[[gnu::noinline]] bool CallLeaf(const FunctionCode& fn, const Value* args, Value* result) {
  Value frame[kLeafFrameWords];
  CopyWords(frame, args, fn.frame_params);
  return CallLeafOnFrame(fn, frame, result);
}

bool CallTyped(const FunctionCode& fn, const Value* args, Value* result) {
  return FitsLeafFrame(fn) ? CallLeaf(fn, args, result) : CallCounted(fn, args, result);
}

namespace {

// Any other call: its depth counted against the recursion limit, the C
// stack checked.
bool CallCounted(const FunctionCode& fn, const Value* args, Value* result) {
  if (__builtin_expect(StackExhausted(), 0)) {
    TakeGil();
    PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded (the C stack is nearly full)");
    return false;
  }
  // The frame counts its depth on the thread's state (EnterCompiledFrameOn,
  // with or without the GIL: a frame entered outside a nogil scope leaves
  // outside it, as scopes end before the calls that began them return). At
  // the limit, with the GIL, EnterCompiledFrameAtLimit decides as CPython
  // would for a Python frame. (Not the C API's Py_EnterRecursiveCall: a
  // call into CPython for each half, and from 3.12 a C-call counter that
  // Python frames do not take.)
  const bool nogil = InNogil();
  PyThreadState* const thread = nogil ? t_gil.own : PyThreadState_Get();
  if (__builtin_expect(!EnterCompiledFrameOn(thread), 0)) {
    TakeGil();
    if (nogil) {
      PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded");
      return false;
    }
    if (!EnterCompiledFrameAtLimit(thread)) return false;
  }
  fn.runtime->calls.Bump(nogil);
  bool ok;
  if (__builtin_expect(g_profiling, 0)) {
    uint64_t started = Now();
    ok = Interpret(fn, args, result);
    fn.runtime->nanoseconds += Now() - started;
  } else if (!nogil && RunsMachineCodeDirectly(fn)) {
    Value* regs = static_cast<Value*>(alloca(FrameBytes(fn)));
    MakeFrame(fn, args, regs);
    ok = RunMachineCodeOnFrame(fn, result, regs);
  } else {
    ok = Interpret(fn, args, result);
  }
  LeaveCompiledFrameOn(thread);
  return ok;
}

}  // namespace

namespace {

// Calls `target` with `callee`'s typed arguments `args` boxed (a buffer as
// its exporting object), except where `objects` (null, or one entry per
// argument) holds the argument's Python object already; counts the effect of
// running Python code. Returns the result (a new reference) or null.
PyObject* CallWithArgumentsBoxed(PyObject* target, const FunctionCode& callee, const Value* args,
                                 PyObject* const* objects) {
  const size_t count = callee.params.size();
  std::vector<PyObject*> boxed(count, nullptr);
  bool ok = true;
  for (size_t i = 0; i < count && ok; ++i) {
    ValueType type = callee.params[i].type;
    if (objects != nullptr && objects[i] != nullptr) boxed[i] = Py_NewRef(objects[i]);
    else if (type == ValueType::kBuffer) boxed[i] = Py_NewRef(args[i].u->owner);
    else if (KindOf(type) == Kind::kObject) boxed[i] = Py_NewRef(args[i].o);
    else boxed[i] = BoxValue(type, args[i]);
    ok = boxed[i] != nullptr;
  }
  ++g_effects;  // Python code, which may do anything
  PyObject* returned = ok ? PyObject_Vectorcall(target, boxed.data(), count, nullptr) : nullptr;
  for (PyObject* box : boxed) Py_XDECREF(box);
  return returned;
}

// Calls `target`, which the name of `callee` holds instead of it, with the
// typed arguments boxed; the result is unboxed to the callee's result type.
bool CallRebound(PyObject* target, const FunctionCode& callee, const Value* args, Value* result) {
  PyObject* returned = CallWithArgumentsBoxed(target, callee, args, nullptr);
  if (returned == nullptr) return false;
  bool ok = true;
  switch (callee.result) {
    case ValueType::kInt:
      ok = UnboxInt(returned, &result->i);
      // Python's int outgrew 64 bits: the caller's frame keeps it if it can.
      if (!ok && PyLong_CheckExact(returned) && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        RaiseGrownInt(callee, 0, (callee.name + "()").c_str(), returned);
      }
      break;
    case ValueType::kFloat: ok = UnboxFloat(returned, &result->f); break;
    case ValueType::kBool: ok = UnboxBool(returned, &result->i); break;
    default: result->o = returned; return true;  // owned
  }
  Py_DECREF(returned);
  return ok;
}

}  // namespace

namespace {

// A typed call whose callee deoptimized (RaiseDeoptimize): the callee's
// Python code runs with the arguments boxed, and its result is unboxed for
// the caller. A result the caller's int cannot hold raises Deoptimize again,
// carrying it (RaiseGrownInt), for the caller's frame to decide: it keeps it,
// deoptimizes in turn, or raises OverflowError for an annotated int.
bool CallDeoptimized(const FunctionCode& callee, const Value* args, Value* result) {
  PyObject* deopt = TakeRaisedException();
  PyObject* current = nullptr;
  if (callee.module->defs_bind_names && callee.runtime->name_object != nullptr) {
    current = LookupGlobal(callee, callee.runtime->name_object);  // borrowed
    if (current == nullptr) PyErr_Clear();
  }
  if (current == nullptr) {
    RestoreRaisedException(deopt);  // no Python code to run (a module without defs)
    DeoptimizeToError();
    return false;
  }
  Py_XDECREF(deopt);
  PyObject* target = current;
  if (Py_TYPE(current) == &FunctionType && reinterpret_cast<FunctionObject*>(current)->code == &callee) {
    target = reinterpret_cast<FunctionObject*>(current)->head.python;
  }
  // The Python code goes on past the overflow; unless the function has no
  // effects at all, what it does counts (CallRebound counts it).
  const uint64_t effects = g_effects;
  const bool ok = CallRebound(target, callee, args, result);
  if (!callee.may_have_effects) g_effects = effects;
  return ok;  // a result beyond 64 bits is a grown int (CallRebound)
}

// A version of the module's namespace that changes whenever the namespace
// does, or 0 for none. Up to 3.11 the dict's own version tag; from 3.12, which
// deprecates it, an epoch that a dict watcher bumps at any change of any
// watched namespace (WatchGlobals). The value is read before a lookup and
// kept after it, so a change in between only costs another lookup.
#if PY_VERSION_HEX >= 0x030C0000
std::atomic<uint64_t> g_globals_epoch{1};
int g_globals_watcher = -1;

int OnGlobalsChanged(PyDict_WatchEvent, PyObject*, PyObject*, PyObject*) {
  g_globals_epoch.fetch_add(1, std::memory_order_relaxed);
  return 0;
}
#endif

inline uint64_t GlobalsVersion(const ModuleCode& module) {
#if PY_VERSION_HEX >= 0x030C0000
  return module.globals_watched ? g_globals_epoch.load(std::memory_order_relaxed) : 0;
#else
  return __atomic_load_n(&reinterpret_cast<PyDictObject*>(module.globals)->ma_version_tag, __ATOMIC_RELAXED);
#endif
}

// The same for the module's builtins, when they are a dict (else 0).
inline uint64_t BuiltinsVersion(const ModuleCode& module) {
#if PY_VERSION_HEX >= 0x030C0000
  return module.builtins_watched ? g_globals_epoch.load(std::memory_order_relaxed) : 0;
#else
  if (!PyDict_Check(module.builtins)) return 0;
  return __atomic_load_n(&reinterpret_cast<PyDictObject*>(module.builtins)->ma_version_tag, __ATOMIC_RELAXED);
#endif
}

// LookupGlobal for the LOAD_GLOBAL* at `pc`, answered from its cache while
// the namespaces it was found in are unchanged (CPython's LOAD_GLOBAL_MODULE
// and LOAD_GLOBAL_BUILTIN): a value from the globals while their version
// holds; a builtin while neither version moved (no global of that name has
// appeared since). Unversioned namespaces are looked up every time.
PyObject* LookupGlobalCached(const FunctionCode& fn, int pc, PyObject* name) {
  const uint64_t globals_version = GlobalsVersion(*fn.module);
  if (globals_version == 0) return LookupGlobal(fn, name);
  FunctionRuntime::GlobalCacheEntry& entry = GlobalCacheAt(fn, pc);
  const uint64_t builtins_version = BuiltinsVersion(*fn.module);
  if (entry.value != nullptr && entry.globals_version == globals_version &&
      (entry.builtins_version == 0 || entry.builtins_version == builtins_version)) {
    return entry.value;
  }
  entry = {};
  PyObject* value = PyDict_GetItemWithError(fn.module->globals, name);
  if (value != nullptr) {
    entry = {globals_version, 0, value};
    return value;
  }
  if (PyErr_Occurred()) return nullptr;
  value = LookupGlobal(fn, name);  // the builtins (or NameError)
  if (value != nullptr && builtins_version != 0) entry = {globals_version, builtins_version, value};
  return value;
}

// Whether the Python function a def's name may hold in place of its
// Function (FunctionRuntime::bound_python), if any, still runs the code it
// was bound with: a new __code__ is a different function to its callers.
inline bool BoundCodeUnchanged(const FunctionRuntime& runtime) {
  const BoundPython& bound = runtime.bound_python;
  return bound.function == nullptr || PyFunction_GET_CODE(bound.function) == bound.code;
}

// The typed call itself: the callee's code if the module's name still holds
// it, else whatever the name holds now.
bool CallModuleFunctionOnce(const FunctionCode& callee, const Value* args, Value* result) {
  if (!callee.module->defs_bind_names) return CallTyped(callee, args, result);
  // The namespace is unchanged since the name last held this function: the
  // call is direct without a lookup (GlobalsVersion). A nogil thread reads the
  // version without the GIL: a rebinding by another thread at that very
  // moment takes effect at one of its next calls.
  const uint64_t version = GlobalsVersion(*callee.module);
  if (version != 0 && version == callee.runtime->globals_version.load(std::memory_order_relaxed) &&
      BoundCodeUnchanged(*callee.runtime)) {
    return CallTyped(callee, args, result);
  }
  TakeGil();  // the lookup reads the module's namespace
  if (callee.runtime->name_object == nullptr) {
    callee.runtime->name_object = PyUnicode_InternFromString(callee.name.c_str());
    if (callee.runtime->name_object == nullptr) return false;
  }
  PyObject* current = LookupGlobal(callee, callee.runtime->name_object);  // borrowed
  if (current == nullptr) return false;
  // (The def's Function, or its Python function where calls from Python
  // run as Python: FunctionRuntime::bound_python.)
  if ((Py_TYPE(current) == &FunctionType && reinterpret_cast<FunctionObject*>(current)->code == &callee) ||
      (current == callee.runtime->bound_python.function && BoundCodeUnchanged(*callee.runtime))) {
    callee.runtime->globals_version.store(version, std::memory_order_relaxed);
    return CallTyped(callee, args, result);
  }
  return CallRebound(current, callee, args, result);
}

}  // namespace

std::string DescribeValues(const FunctionCode& fn, const KnownValues& values) {
  std::string text;
  for (const auto& [reg, value] : values) {
    if (!text.empty()) text += ", ";
    text += fn.params[reg].name + "=";
    if (fn.params[reg].type == ValueType::kBool) text += value != 0 ? "True" : "False";
    else text += std::to_string(value);
  }
  return text;
}

void WatchGlobals(ModuleCode& module) {
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t), "machine code reads versions as plain words");
#if PY_VERSION_HEX >= 0x030C0000
  module.globals_watched = false;
  module.versions.globals = nullptr;
  if (g_globals_watcher < 0) g_globals_watcher = PyDict_AddWatcher(OnGlobalsChanged);
  if (g_globals_watcher >= 0 && PyDict_Watch(g_globals_watcher, module.globals) == 0) {
    module.globals_watched = true;
    module.versions.globals = reinterpret_cast<const uint64_t*>(&g_globals_epoch);
  } else {
    PyErr_Clear();  // (no watcher: every call looks the name up)
  }
  module.builtins_watched = false;
  if (module.globals_watched && PyDict_Check(module.builtins)) {
    if (PyDict_Watch(g_globals_watcher, module.builtins) == 0) module.builtins_watched = true;
    else PyErr_Clear();  // (every LOAD_GLOBAL of a builtin looks it up)
  }
#else
  module.versions.globals = &reinterpret_cast<PyDictObject*>(module.globals)->ma_version_tag;
#endif
}

bool CallModuleFunction(const FunctionCode& callee, const Value* args, Value* result) {
  if (CallModuleFunctionOnce(callee, args, result)) return true;
  // A grown int the callee returned is its caller's to keep (see RaiseGrownInt).
  return DeoptimizePending() && !GrownIntPending() ? CallDeoptimized(callee, args, result) : false;
}

namespace {

// An object whose operations and release run no Python code: nothing, or an
// exact int, float or bool (see NEXT_AFTER_NUMBERS).
inline bool IsPlainNumber(PyObject* object) {
  return object == nullptr || PyLong_CheckExact(object) || PyFloat_CheckExact(object) || PyBool_Check(object) ||
         PyComplex_CheckExact(object);
}

// An object whose release runs no Python code: a plain number, None, an
// exact str, a builtin function or a type (a reference of a frame is never
// the last of a type's).
inline bool ReleaseIsPure(PyObject* object) {
  return IsPlainNumber(object) || object == Py_None || PyUnicode_CheckExact(object) || PyCFunction_Check(object) ||
         PyType_Check(object);
}

// A call of a builtin that runs no Python code on plain numbers (abs, min,
// max, int, float, round, divmod, pow) with plain-number arguments, where the
// module's builtins are the interpreter's own: no effect (NEXT_AFTER_NUMBERS).
bool IsPureBuiltinCall(const FunctionCode& fn, const Value* span, int count) {
  PyObject* callable = span[0].o;
  if (!PyCFunction_Check(callable) && callable != reinterpret_cast<PyObject*>(&PyLong_Type) &&
      callable != reinterpret_cast<PyObject*>(&PyFloat_Type)) {
    return false;
  }
  for (int i = 1; i <= count; ++i) {
    if (!IsPlainNumber(span[i].o) || span[i].o == nullptr) return false;
  }
  if (!PyCFunction_Check(callable)) return true;  // int(x), float(x)
  // A function of the builtins module the frame runs with, by its own name:
  // no dictionary lookup on this path, which object-mode loops take per call.
  PyObject* owner = PyCFunction_GET_SELF(callable);
  if (fn.module == nullptr || owner == nullptr || !PyModule_Check(owner) ||
      PyModule_GetDict(owner) != fn.module->builtins) {
    return false;
  }
  const char* name = reinterpret_cast<PyCFunctionObject*>(callable)->m_ml->ml_name;
  static const char* const kPure[] = {"abs", "min", "max", "round", "divmod", "pow"};
  for (const char* pure : kPure) {
    if (std::strcmp(name, pure) == 0) return true;
  }
  return false;
}

// Whether `callable` is the builtin len(). CPython 3.11+ specializes a call
// of it to PyObject_Length (PRECALL_NO_KW_LEN, 3.12's CALL_NO_KW_LEN), which
// makes no C call and so no recursion check; CALL_O does the same, so that
// a recursion meets the limit where CPython's does (at the next frame, with
// its message, not in len's call with " while calling a Python object").
bool IsBuiltinLen(PyObject* callable) {
  static const PyCFunction len = [] {
    PyObject* found = PyDict_GetItemString(PyEval_GetBuiltins(), "len");  // borrowed
    return found != nullptr && PyCFunction_Check(found) ? PyCFunction_GET_FUNCTION(found) : nullptr;
  }();
  return PyCFunction_Check(callable) && len != nullptr && PyCFunction_GET_FUNCTION(callable) == len;
}

// The views a frame borrows for its Buffer-annotated locals (BORROW_U), each
// released when the frame ends, on every path, or when its register is
// assigned another view that no other register shares.
class LocalBorrows {
 public:
  LocalBorrows() = default;
  LocalBorrows(const LocalBorrows&) = delete;
  LocalBorrows& operator=(const LocalBorrows&) = delete;
  ~LocalBorrows() {
    for (auto& record : records_) Release(*record);
  }

  bool empty() const { return records_.empty(); }

  // U[reg] := a view of `obj` checked as the local `name`; false with the exception set.
  bool Borrow(const FunctionCode& fn, Value* regs, int reg, PyObject* obj, PyObject* name, bool writes) {
    const char* text = PyUnicode_AsUTF8(name);
    if (text == nullptr) return false;
    auto record = std::make_unique<Record>();
    record->param.name = text;
    record->param.type = ValueType::kBuffer;
    record->param.elem = fn.registers[reg].elem;
    record->param.ndim = fn.registers[reg].ndim;
    record->param.writes = writes;
    record->param.is_local = true;
    if (!AcquireBuffer(obj, fn, record->param, &record->raw, &record->view)) return false;
    if (record->view.exporter == Exporter::kTorch) RegisterTorchView(&record->view);
    BufferView* previous = regs[reg].u;
    regs[reg].u = &record->view;
    records_.push_back(std::move(record));
    ReleaseIfUnused(fn, regs, previous);
    return true;
  }

 private:
  struct Record {
    Py_buffer raw{};
    BufferView view;
    Param param;
  };

  void ReleaseIfUnused(const FunctionCode& fn, const Value* regs, BufferView* view) {
    if (view == nullptr) return;
    for (int reg = 0; reg < fn.num_registers(); ++reg) {
      if (fn.registers[reg].kind == Kind::kBuffer && regs[reg].u == view) return;
    }
    for (size_t i = 0; i < records_.size(); ++i) {
      if (&records_[i]->view == view) {
        Release(*records_[i]);
        records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }

  static void Release(Record& record) {
    if (record.raw.obj != nullptr) PyBuffer_Release(&record.raw);
    if (record.view.exporter == Exporter::kTorch) {
      UnregisterTorchView(&record.view);
      if (record.param.writes) MarkTorchTensorWritten(record.view.owner);
    }
    Py_CLEAR(record.view.storage);
  }

  std::vector<std::unique_ptr<Record>> records_;
};

}  // namespace

// ---- Grown ints ----------------------------------------------------------------------
// An unannotated int that outgrows 64 bits after the frame has had an effect
// (so it cannot rerun as Python: see RaiseDeoptimize) becomes a Python int in
// place: the frame keeps it beside the register, and every instruction that
// reads the register reads the Python int, with CPython's semantics, until
// the register is written with an int that fits again. Machine code never
// runs while one is held.

// Whether an operand mode names int registers (spans included: a typed
// call's arguments and result may be ints).
constexpr bool NamesIntRegisters(Mode a, Mode b, Mode c, Mode d) {
  for (Mode mode : {a, b, c, d}) {
    if (mode == Mode::krI || mode == Mode::kwI || mode == Mode::kuI || mode == Mode::krX || mode == Mode::kwX) {
      return true;
    }
  }
  return false;
}

// The Python ints a frame's int registers hold beyond 64 bits (owned; null
// where the register's own int64 is its value).
struct GrownInts {
  explicit GrownInts(int num_registers) : num_registers(num_registers) {}
  ~GrownInts() {
    if (values == nullptr) return;
    for (int reg = 0; reg < num_registers; ++reg) Py_XDECREF(values[reg]);
    std::free(values);
  }
  GrownInts(const GrownInts&) = delete;
  GrownInts& operator=(const GrownInts&) = delete;

  // Holds `value` (owned, a Python int) in `reg`.
  void Set(int reg, PyObject* value) {
    if (values == nullptr) values = static_cast<PyObject**>(std::calloc(num_registers, sizeof(PyObject*)));
    if (values[reg] == nullptr) ++count;
    Py_XSETREF(values[reg], value);
  }
  // `reg` holds its own int64 again.
  void Forget(int reg) {
    if (values == nullptr || values[reg] == nullptr) return;
    Py_CLEAR(values[reg]);
    --count;
  }
  PyObject* At(int reg) const { return values != nullptr ? values[reg] : nullptr; }

  // Whether `in` reads an int register that holds a grown int.
  bool ReadBy(const FunctionCode& fn, const Instr& in) const {
    bool reads = false;
    ForEachRegister(in, [&](int64_t reg, bool read, bool) {
      if (read && fn.registers[reg].kind == Kind::kInt && At(static_cast<int>(reg)) != nullptr) reads = true;
    });
    return reads;
  }
  // Forgets the grown ints of the int registers `in` writes.
  void ForgetWrittenBy(const FunctionCode& fn, const Instr& in) {
    ForEachRegister(in, [&](int64_t reg, bool, bool written) {
      if (written && fn.registers[reg].kind == Kind::kInt) Forget(static_cast<int>(reg));
    });
  }

  int num_registers;
  int count = 0;
  PyObject** values = nullptr;
};

// x ** y through the number protocol (PyNumber_Power's two-operand form).
PyObject* IntPower(PyObject* x, PyObject* y) { return PyNumber_Power(x, y); }

// Int register `reg` as a Python int (a new reference).
PyObject* IntObject(const Value* regs, const GrownInts& grown, int reg) {
  PyObject* value = grown.At(reg);
  return value != nullptr ? Py_NewRef(value) : PyLong_FromLongLong(regs[reg].i);
}

// Writes the Python int `value` (owned; null for an error already raised)
// into int register `reg`: its int64 if it fits, else the grown int, or
// OverflowError for an annotated register.
bool SetIntObject(const FunctionCode& fn, Value* regs, GrownInts& grown, int reg, PyObject* value, int pc,
                  const char* what) {
  if (value == nullptr) return false;
  int overflow = 0;
  const long long fits = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (fits == -1 && PyErr_Occurred()) {
    Py_DECREF(value);
    return false;
  }
  if (overflow == 0) {
    Py_DECREF(value);
    grown.Forget(reg);
    regs[reg].i = fits;
    return true;
  }
  if (fn.registers[reg].annotated) {
    Py_DECREF(value);
    return RaiseIntOverflow(fn, pc, what);
  }
  grown.Set(reg, value);
  return true;
}

// A bool (or an int that fits) into int register `reg`.
void SetInt(Value* regs, GrownInts& grown, int reg, int64_t value) {
  grown.Forget(reg);
  regs[reg].i = value;
}

// A typed call with a grown int among its arguments: the function the
// callee's name holds is called with every argument boxed (its Python-facing
// entry runs a call whose ints do not fit as Python, as CPython would), and
// the result is unboxed for R[A], a grown int if it is one.
bool CallWithGrownInts(const FunctionCode& fn, Value* regs, GrownInts& grown, const Instr& in, int pc) {
  const FunctionCode& callee = *fn.module->functions[in.d];
  PyObject* function = nullptr;
  if (callee.module->defs_bind_names) {
    if (callee.runtime->name_object == nullptr) {
      callee.runtime->name_object = PyUnicode_InternFromString(callee.name.c_str());
      if (callee.runtime->name_object == nullptr) return false;
    }
    function = LookupGlobal(callee, callee.runtime->name_object);  // borrowed
  }
  if (function == nullptr) {
    if (!PyErr_Occurred()) RaiseIntOverflow(fn, pc, "an argument");  // no Python code to run (the unit tests)
    return false;
  }
  PyObject* returned = CallWithArgumentsBoxed(function, callee, &regs[in.b],
                                              grown.values != nullptr ? grown.values + in.b : nullptr);
  if (returned == nullptr) return false;
  bool ok;
  switch (callee.result) {
    case ValueType::kInt:
      if (!PyLong_CheckExact(returned)) break;
      return SetIntObject(fn, regs, grown, in.a, returned, pc, "the call");
    case ValueType::kFloat:
      ok = UnboxFloat(returned, &regs[in.a].f);
      Py_DECREF(returned);
      return ok;
    case ValueType::kBool: {
      int64_t value;
      ok = UnboxBool(returned, &value);
      Py_DECREF(returned);
      if (ok) SetInt(regs, grown, in.a, value);
      return ok;
    }
    default:
      Py_XSETREF(regs[in.a].o, returned);
      return true;
  }
  int64_t value;  // an int result that is not an exact int: UnboxInt's TypeError
  ok = UnboxInt(returned, &value);
  Py_DECREF(returned);
  if (ok) SetInt(regs, grown, in.a, value);
  return ok;
}

// GrownIntStep indexes tables by an instruction's place in its family.
constexpr int OpIndex(Op op, Op first) { return static_cast<int>(op) - static_cast<int>(first); }
static_assert(OpIndex(Op::NE_I, Op::LT_I) == 3 && OpIndex(Op::JNE_I, Op::JLT_I) == 3);
static_assert(OpIndex(Op::GE_FI, Op::LT_FI) == 3 && OpIndex(Op::NE_FI, Op::LT_FI) == 5);
static_assert(OpIndex(Op::JGE_FI, Op::JLT_FI) == 3 && OpIndex(Op::JNGE_FI, Op::JLT_FI) == 7);

// Runs `in`, an instruction that makes or reads a grown int, on Python ints,
// with CPython's semantics: arithmetic through the number protocol, exact
// comparisons (a float with an int too), truth, boxing, float(). Sets
// *target to the pc a taken jump goes to. An int that must fit 64 bits (an
// index, a typed call's argument, a range's start or step) raises what
// CPython raises for such an index, or OverflowError.
bool GrownIntStep(const FunctionCode& fn, Value* regs, GrownInts& grown, const Instr& in, int pc, int64_t* target) {
  // What an OverflowError names: the operator whose result an annotated int
  // cannot hold.
  const char* what = "this operation";
  switch (in.op) {
    case Op::ADD_I: what = "+"; break;
    case Op::SUB_I: what = "-"; break;
    case Op::MUL_I: what = "*"; break;
    case Op::FLOORDIV_I: what = "//"; break;
    case Op::MOD_I: what = "%"; break;
    case Op::POW_I: what = "**"; break;
    case Op::SHL_I: what = "<<"; break;
    case Op::NEG_I: what = "unary -"; break;
    case Op::ABS_I: what = "abs()"; break;
    case Op::MOVE_I: what = "="; break;
    default: break;
  }
  auto object = [&](int reg) { return IntObject(regs, grown, reg); };
  // A binary number-protocol operation of two int registers.
  auto binary = [&](PyObject* (*op)(PyObject*, PyObject*)) {
    PyObject* x = object(in.b);
    PyObject* y = x ? object(in.c) : nullptr;
    PyObject* value = y ? op(x, y) : nullptr;
    Py_XDECREF(x);
    Py_XDECREF(y);
    return SetIntObject(fn, regs, grown, in.a, value, pc, what);
  };
  auto unary = [&](PyObject* (*op)(PyObject*)) {
    PyObject* x = object(in.b);
    PyObject* value = x ? op(x) : nullptr;
    Py_XDECREF(x);
    return SetIntObject(fn, regs, grown, in.a, value, pc, what);
  };
  // x <cmp> y for two Python objects (new references, stolen): 1, 0, or -1.
  auto compare = [](PyObject* x, PyObject* y, int op) {
    int result = x && y ? PyObject_RichCompareBool(x, y, op) : -1;
    Py_XDECREF(x);
    Py_XDECREF(y);
    return result;
  };
  auto float_object = [&](int reg) { return PyFloat_FromDouble(regs[reg].f); };
  auto truth = [&](int reg) {
    PyObject* x = object(reg);
    int result = x ? PyObject_IsTrue(x) : -1;
    Py_XDECREF(x);
    return result;
  };
  auto jump_if = [&](int condition) {
    if (condition < 0) return false;
    if (condition) *target = in.d;
    return true;
  };
  switch (in.op) {
    case Op::MOVE_I: return SetIntObject(fn, regs, grown, in.a, object(in.b), pc, what);
    case Op::I2F: {
      PyObject* x = object(in.b);
      double value = x ? PyLong_AsDouble(x) : -1.0;  // OverflowError "int too large to convert to float"
      Py_XDECREF(x);
      if (value == -1.0 && PyErr_Occurred()) return false;
      regs[in.a].f = value;
      return true;
    }
    case Op::F2I: return SetIntObject(fn, regs, grown, in.a, PyLong_FromDouble(regs[in.b].f), pc, "int()");
    case Op::MATH_FI:
      return SetIntObject(fn, regs, grown, in.a, PyLong_FromDouble(kMathInfo[in.d].fast1(regs[in.b].f)), pc, "int()");
    case Op::UNBOX_I:  // (a Python int, from object code, into an int register)
      return SetIntObject(fn, regs, grown, in.a, PyNumber_Index(regs[in.b].o), pc, "this expression");
    case Op::TRUTH_I:
    case Op::NOT: {
      int value = truth(in.b);
      if (value < 0) return false;
      SetInt(regs, grown, in.a, in.op == Op::NOT ? !value : value);
      return true;
    }
    case Op::BOX_I: {
      PyObject* value = object(in.b);
      if (value == nullptr) return false;
      Py_XSETREF(regs[in.a].o, value);
      return true;
    }
    case Op::JT: return jump_if(truth(in.a));
    case Op::JF: {
      int value = truth(in.a);
      return jump_if(value < 0 ? -1 : !value);
    }
    case Op::ADD_I: return binary(PyNumber_Add);
    case Op::SUB_I: return binary(PyNumber_Subtract);
    case Op::MUL_I: return binary(PyNumber_Multiply);
    case Op::FLOORDIV_I: return binary(PyNumber_FloorDivide);
    case Op::MOD_I: return binary(PyNumber_Remainder);
    case Op::AND_I: return binary(PyNumber_And);
    case Op::OR_I: return binary(PyNumber_Or);
    case Op::XOR_I: return binary(PyNumber_Xor);
    case Op::SHL_I: return binary(PyNumber_Lshift);
    case Op::SHR_I: return binary(PyNumber_Rshift);
    case Op::POW_I: {
      // A negative exponent is the typed instruction's own error.
      PyObject* exponent = object(in.c);
      if (exponent == nullptr) return false;
      const bool negative = _PyLong_Sign(exponent) < 0;
      Py_DECREF(exponent);
      if (negative) return RaiseNegativePower(1);
      return binary(IntPower);
    }
    case Op::TRUEDIV_I: {
      PyObject* x = object(in.b);
      PyObject* y = x ? object(in.c) : nullptr;
      PyObject* value = y ? PyNumber_TrueDivide(x, y) : nullptr;
      Py_XDECREF(x);
      Py_XDECREF(y);
      if (value == nullptr) return false;
      regs[in.a].f = PyFloat_AsDouble(value);
      Py_DECREF(value);
      return true;
    }
    case Op::MIN_I:
    case Op::MAX_I: {
      // R[C] if R[C] < R[B] (>, for max) else R[B]: the first of equals.
      int smaller = compare(object(in.c), object(in.b), in.op == Op::MIN_I ? Py_LT : Py_GT);
      if (smaller < 0) return false;
      return SetIntObject(fn, regs, grown, in.a, object(smaller ? in.c : in.b), pc, what);
    }
    case Op::NEG_I: return unary(PyNumber_Negative);
    case Op::INVERT_I: return unary(PyNumber_Invert);
    case Op::ABS_I: return unary(PyNumber_Absolute);
    case Op::LT_I:
    case Op::LE_I:
    case Op::EQ_I:
    case Op::NE_I: {
      static const int kOps[] = {Py_LT, Py_LE, Py_EQ, Py_NE};
      int value = compare(object(in.b), object(in.c), kOps[OpIndex(in.op, Op::LT_I)]);
      if (value < 0) return false;
      SetInt(regs, grown, in.a, value);
      return true;
    }
    case Op::LT_FI:
    case Op::LE_FI:
    case Op::GT_FI:
    case Op::GE_FI:
    case Op::EQ_FI:
    case Op::NE_FI: {
      static const int kOps[] = {Py_LT, Py_LE, Py_GT, Py_GE, Py_EQ, Py_NE};
      int value = compare(float_object(in.b), object(in.c), kOps[OpIndex(in.op, Op::LT_FI)]);
      if (value < 0) return false;
      SetInt(regs, grown, in.a, value);
      return true;
    }
    case Op::JLT_I:
    case Op::JLE_I:
    case Op::JEQ_I:
    case Op::JNE_I: {
      static const int kOps[] = {Py_LT, Py_LE, Py_EQ, Py_NE};
      return jump_if(compare(object(in.a), object(in.b), kOps[OpIndex(in.op, Op::JLT_I)]));
    }
    case Op::JLT_FI:
    case Op::JLE_FI:
    case Op::JGT_FI:
    case Op::JGE_FI:
    case Op::JNLT_FI:
    case Op::JNLE_FI:
    case Op::JNGT_FI:
    case Op::JNGE_FI: {
      static const int kOps[] = {Py_LT, Py_LE, Py_GT, Py_GE, Py_LT, Py_LE, Py_GT, Py_GE};
      const int index = OpIndex(in.op, Op::JLT_FI);
      int value = compare(float_object(in.a), object(in.b), kOps[index]);
      if (value < 0) return false;
      return jump_if(index >= 4 ? !value : value);
    }
    case Op::FORPREP:
    case Op::FORLOOP:
    case Op::FORLOOP_INC: {
      // A grown stop: no 64-bit counter reaches it (nor falls below a
      // negative one), so it stands for the farthest int64. A counter or a
      // step beyond 64 bits (a range from 2**70) is refused.
      if (grown.At(in.a) != nullptr || (in.op == Op::FORLOOP && grown.At(in.c) != nullptr) ||
          (in.op == Op::FORPREP && grown.At(in.c) != nullptr)) {
        return RaiseIntOverflow(fn, pc, "range()");
      }
      // The stop grown (here, since nothing else names it): beyond every
      // int64, above them all or below them all, so that the loop runs
      // while the counter fits 64 bits if it counts toward it, and not at
      // all if away from it. A counter that would pass INT64_MAX (or
      // INT64_MIN) on its way there, which Python's would, raises
      // OverflowError: the loop variable cannot outgrow 64 bits.
      const int64_t step = in.op == Op::FORLOOP_INC ? 1 : regs[in.c].i;
      int64_t& counter = regs[in.a].i;
      PyObject* stop_object = grown.At(in.b);
      auto before_stop = [&](int64_t value) {
        if (stop_object != nullptr) return (step > 0) == (_PyLong_Sign(stop_object) > 0);
        return step > 0 ? value < regs[in.b].i : value > regs[in.b].i;
      };
      if (in.op == Op::FORPREP) {
        if (step == 0) return RaiseValueError("range() arg 3 must not be zero");
        if (!before_stop(counter)) *target = in.d;
        return true;
      }
      int64_t next;
      if (__builtin_add_overflow(counter, step, &next)) {
        // (A stop of 64 bits lies before any sum that overflows.)
        if (stop_object != nullptr && before_stop(0)) return RaiseIntOverflow(fn, pc, "range()");
        return true;
      }
      if (before_stop(next)) {
        counter = next;
        *target = in.d;
      }
      return true;
    }
    case Op::CALL_FN: return CallWithGrownInts(fn, regs, grown, in, pc);
    case Op::GETITEM_I: {  // (a container subscripted by an int beyond 64 bits: a dict's key, say)
      PyObject* key = object(in.c);
      PyObject* value = key ? PyObject_GetItem(regs[in.b].o, key) : nullptr;
      Py_XDECREF(key);
      if (value == nullptr) return false;
      SetObject(regs[in.a], value);
      return true;
    }
    case Op::SETITEM_I: {  // (the same for a store)
      PyObject* key = object(in.b);
      const int stored = key ? PyObject_SetItem(regs[in.a].o, key, regs[in.c].o) : -1;
      Py_XDECREF(key);
      return stored == 0;
    }
    default: {
      // An index or an element: ints that must fit 64 bits, where CPython
      // raises for one this large. buf[i] = value, the value grown: the
      // exporter's own error for it, after the checks that come first there
      // (as in the store's handler).
      if ((in.op == Op::STORE_I64 || in.op == Op::STORE_I) && grown.At(in.c) != nullptr &&
          grown.At(in.b) == nullptr) {
        const BufferView& view = *regs[in.a].u;
        int64_t at = 0;
        if (!StoreOffset(view, regs[in.b].i, &at)) return false;
        return RaiseGrownElementOverflow(view, grown.At(in.c));
      }
      // The same for an N-d store (m[i, j] = value), whose offset INDEX_U
      // checked: the read-only check comes first, as in STOREN_I's handler.
      if (in.op == Op::STOREN_I && grown.At(in.c) != nullptr && grown.At(in.b) == nullptr) {
        const BufferView& view = *regs[in.a].u;
        if (view.readonly) return RaiseReadOnly(view);
        return RaiseGrownElementOverflow(view, grown.At(in.c));
      }
      // Else a grown index of a buffer access, read or store: the exporter
      // refuses it. (A grown value stored by another instruction keeps the
      // OverflowError below.)
      int buffer = -1;
      bool grown_index = false;
      switch (in.op) {
        case Op::LOAD_F64: case Op::LOAD_I64: case Op::LOAD_F: case Op::LOAD_I:
          buffer = in.b, grown_index = grown.At(in.c) != nullptr;
          break;
        case Op::LOADX_F64: case Op::LOADX_I64:
          buffer = in.b, grown_index = grown.At(in.c) != nullptr || grown.At(in.d) != nullptr;
          break;
        case Op::STORE_F64: case Op::STORE_I64: case Op::STORE_F: case Op::STORE_I:
        case Op::ADDTO_F64: case Op::ADDTO_I64:
          buffer = in.a, grown_index = grown.At(in.b) != nullptr;
          break;
        case Op::STOREX_F64: case Op::STOREX_I64:
          buffer = in.a, grown_index = grown.At(in.b) != nullptr || grown.At(in.c) != nullptr;
          break;
        case Op::INDEX_U:
          buffer = in.b, grown_index = grown.At(in.d) != nullptr;
          break;
        default:
          break;
      }
      if (grown_index) return RaiseGrownIndexError(*regs[buffer].u);
      if (!HasFlag(in.op, kFlagStore)) {
        PyErr_SetString(PyExc_IndexError, "cannot fit 'int' into an index-sized integer");
        return false;
      }
      return RaiseIntOverflow(fn, pc, what);
    }
  }
}

namespace {

// ---- Unboxed floats (vm/unbox.h) ------------------------------------------------------

// An operand of an unboxed instruction as a double: a slot's value, or an
// exact float, or an exact int within 2**53 (which CPython's float arithmetic
// and comparisons convert exactly, as here). False for anything else: the
// instruction deoptimizes. `floats` counts the operands that were floats (a
// float result needs one: int op int is an int).
inline bool FloatOperand(const Value& reg, bool slot, double* out, int* floats) {
  if (slot) {
    *out = reg.f;
    ++*floats;
    return true;
  }
  PyObject* object = reg.o;
  if (PyFloat_CheckExact(object)) {
    *out = PyFloat_AS_DOUBLE(object);
    ++*floats;
    return true;
  }
  long long value;
  constexpr long long kExact = 1LL << 53;
  if (PyLong_CheckExact(object) && ExactIntValue(object, &value) && value >= -kExact && value <= kExact) {
    *out = static_cast<double>(value);
    return true;
  }
  return false;
}

// x <op> y as CPython's float type computes it (BINARY_O's D, in-place
// forms included), or false where it would raise or make something other
// than a float (a division by zero, a negative number to a fractional
// power, an overflow): the object code then says what CPython says.
inline bool FloatArithmetic(int op, double x, double y, double* out) {
  switch (static_cast<BinaryOp>(op >= kBinaryInPlace ? op - kBinaryInPlace : op)) {
    case BinaryOp::ADD: *out = x + y; return true;
    case BinaryOp::SUB: *out = x - y; return true;
    case BinaryOp::MUL: *out = x * y; return true;
    case BinaryOp::TRUEDIV:
      if (y == 0.0) return false;
      *out = x / y;
      return true;
    case BinaryOp::FLOORDIV:
      if (y == 0.0) return false;
      *out = FloorDivFloat(x, y);
      return true;
    case BinaryOp::MOD:
      if (y == 0.0) return false;
      *out = ModFloat(x, y);
      return true;
    case BinaryOp::POW: {
      // float_pow's ordinary case: finite operands, a positive base or an
      // integral exponent, a finite result (C's pow then agrees with it,
      // signed zeros and odd exponents included); the rest is its own.
      if (!std::isfinite(x) || !std::isfinite(y) || x == 0.0 || (x < 0.0 && y != std::floor(y))) return false;
      const double value = std::pow(x, y);
      if (!std::isfinite(value)) return false;
      *out = value;
      return true;
    }
    default: return false;
  }
}

// container[i] for an exact list or tuple and i inside it, when that item is
// an exact float: its value. False for anything else.
inline bool FloatItemAt(PyObject* container, int64_t i, double* out) {
  PyObject** item = ItemAt(container, i);
  if (item == nullptr || !PyFloat_CheckExact(*item)) return false;
  *out = PyFloat_AS_DOUBLE(*item);
  return true;
}

// An operand of an unboxed int instruction: an int slot's value, or an exact
// int within 64 bits. False for anything else: the instruction deoptimizes.
inline bool IntOperand(const Value& reg, bool slot, int64_t* out) {
  if (slot) {
    *out = reg.i;
    return true;
  }
  return ExactInt64(reg.o, out);
}

// x <op> y as CPython's int type computes it (BINARY_O's D: + - * // % and
// their in-place forms), or false where the result is no int within 64 bits
// or CPython raises (a division by zero): the object code then says what
// CPython says.
inline bool IntArithmetic(int op, int64_t x, int64_t y, int64_t* out) {
  switch (static_cast<BinaryOp>(op >= kBinaryInPlace ? op - kBinaryInPlace : op)) {
    case BinaryOp::ADD: return !__builtin_add_overflow(x, y, out);
    case BinaryOp::SUB: return !__builtin_sub_overflow(x, y, out);
    case BinaryOp::MUL: return !__builtin_mul_overflow(x, y, out);
    case BinaryOp::FLOORDIV:
      if (y == 0 || (x == INT64_MIN && y == -1)) return false;
      return FloorDivInt(x, y, out);
    case BinaryOp::MOD:
      if (y == 0) return false;
      *out = ModInt(x, y);
      return true;
    default: return false;
  }
}

// container[i] for an exact list or tuple and i inside it, when that item is
// an exact int within 64 bits: its value. False for anything else.
inline bool IntItemAt(PyObject* container, int64_t i, int64_t* out) {
  PyObject** item = ItemAt(container, i);
  return item != nullptr && ExactInt64(*item, out);
}

// Whether the value a float guard at `in` failed on is an exact int within
// 64 bits (or, for arithmetic into a slot, whether both operands are): the
// type feedback that makes the next version guard for an int there.
bool FloatGuardMetInt(const Instr& in, const Value* regs) {
  int64_t value;
  switch (in.op) {
    case Op::GUARD_F: return ExactInt64(regs[in.b].o, &value);
    case Op::GETITEM_I_GF: {
      PyObject** item = ItemAt(regs[in.b].o, regs[in.c].i);
      return item != nullptr && ExactInt64(*item, &value);
    }
    case Op::GETITEM_GF: {
      int64_t i;
      if (!ExactInt64(regs[in.c].o, &i)) return false;
      PyObject** item = ItemAt(regs[in.b].o, i);
      return item != nullptr && ExactInt64(*item, &value);
    }
    case Op::BINARY_UF:
      return (in.d & 0x100) && !(in.d & 0x600) && ExactInt64(regs[in.b].o, &value) &&
             ExactInt64(regs[in.c].o, &value);
    default: return false;
  }
}

// Whether machine code may enter the unboxed loop whose head is `head`: a
// `for` loop's head (FOR_ITER_GF/GI) runs there over a list's iterator only,
// and over anything else (a tuple, a generator) would leave again at once,
// every time round.
inline bool MachineCodeIterates(const Instr& head, const Value* regs) {
  return (head.op != Op::FOR_ITER_GF && head.op != Op::FOR_ITER_GI && head.op != Op::FOR_ITER_L) ||
         Py_IS_TYPE(regs[head.b].o, &PyListIter_Type);
}

// The unboxed code a frame of `fn` may run now, built here if the function
// is hot and has none: null if there is none worth running. Under the GIL.
const UnboxedCode* UnboxedCodeFor(const FunctionCode& fn) {
  FunctionRuntime& runtime = *fn.runtime;
  if (const UnboxedCode* code = runtime.unboxed.load(std::memory_order_acquire)) return code;
  if (runtime.unbox_final) return nullptr;
  const bool hot = g_tiering.mode == JitMode::kEager || runtime.calls >= g_tiering.call_threshold ||
                   runtime.back_edges >= g_tiering.back_edge_threshold;
  if (!hot) return nullptr;
  std::unique_ptr<UnboxedCode> code = BuildUnboxedCode(fn, runtime.unbox_feedback);
  if (code == nullptr) {
    runtime.unbox_final = true;
    return nullptr;
  }
  const UnboxedCode* built = code.get();
  runtime.unboxed_versions.push_back(std::move(code));
  runtime.unboxed.store(built, std::memory_order_release);
  // Its loops that machine code runs whole: compiled now (a frame enters
  // them at a back edge, see BACK_EDGE_TO), claimed first as TierUp claims a
  // compile (the report may let the GIL go).
  if (built->machine != nullptr && g_tiering.compile != nullptr) {
    JitState expected = JitState::kNone;
    if (built->machine->runtime->jit_state.compare_exchange_strong(expected, JitState::kCompiling)) {
      g_tiering.compile(*built->machine, "unboxed");
    }
  }
  return built;
}

// A guard of `code` failed at pc: the next version leaves that instruction
// alone, or, where a float guard met an exact int within 64 bits (`saw_int`)
// for the first time there, guards for an int instead (or, after
// kMaxUnboxBuilds versions, the function keeps its object code).
void RecordUnboxFailure(const FunctionCode& fn, const UnboxedCode& code, int pc, bool saw_int = false) {
  FunctionRuntime& runtime = *fn.runtime;
  ++runtime.unbox_deopts;
  runtime.unbox_deopt_pc.store(pc, std::memory_order_relaxed);
  if (runtime.unbox_feedback.size() < fn.code.size()) runtime.unbox_feedback.resize(fn.code.size());
  uint8_t& feedback = runtime.unbox_feedback[pc];
  feedback = saw_int && feedback == kUnboxNothing ? kUnboxSawInt : kUnboxFailed;
  if (runtime.unboxed.load(std::memory_order_relaxed) == &code) runtime.unboxed.store(nullptr, std::memory_order_release);
  if (runtime.unboxed_versions.size() >= static_cast<size_t>(kMaxUnboxBuilds)) runtime.unbox_final = true;
}

// The constants `code` keeps in slots (UnboxedCode::constant_slots).
inline void SetConstantSlots(const UnboxedCode& code, int num_registers, Value* regs) {
  for (const auto& [slot, value] : code.constant_slots) regs[num_registers + slot].f = value;
  for (const auto& [slot, value] : code.int_constant_slots) regs[num_registers + slot].i = value;
}

inline bool IsIntSlot(const UnboxedCode& code, int slot) { return (code.int_slots >> slot & 1) != 0; }

// A slot's value as a new object: an int, or a float. Null with the
// exception set if it cannot be allocated.
inline PyObject* BoxSlot(const Value& slot, bool is_int) {
  return is_int ? PyLong_FromLongLong(slot.i) : PyFloat_FromDouble(slot.f);
}

// A value for an int slot: an exact int within 64 bits (not a bool).
inline bool IntSlotValue(PyObject* object, int64_t* out) { return object != nullptr && ExactInt64(object, out); }

// Moves a frame of the object code into `code` before pc (a loop's back
// edge): each slot live there takes the value of the object register it
// stands for, which is released. False, with nothing changed, if one of
// those holds anything but an exact float (an exact int within 64 bits, for
// an int slot).
bool EnterUnboxed(const UnboxedCode& code, int num_registers, Value* regs, int pc) {
  const uint64_t live = code.live[pc];
  for (uint64_t bits = live; bits != 0; bits &= bits - 1) {
    const int slot = __builtin_ctzll(bits);
    PyObject* value = regs[code.slot_register[slot]].o;
    int64_t i;
    if (IsIntSlot(code, slot) ? !IntSlotValue(value, &i) : value == nullptr || !PyFloat_CheckExact(value)) {
      return false;
    }
  }
  for (uint64_t bits = live; bits != 0; bits &= bits - 1) {
    const int slot = __builtin_ctzll(bits);
    Value& reg = regs[code.slot_register[slot]];
    if (IsIntSlot(code, slot)) {
      IntSlotValue(reg.o, &regs[num_registers + slot].i);
    } else {
      regs[num_registers + slot].f = PyFloat_AS_DOUBLE(reg.o);
    }
    Py_DECREF(reg.o);  // (a float's or an int's release runs no code)
    reg.o = nullptr;
  }
  SetConstantSlots(code, num_registers, regs);
  return true;
}

// Moves a frame of `code` back to the object code before pc: each slot live
// there (but `except`, whose register already holds its object) is boxed
// into the object register it stands for. False with the exception set if a
// float cannot be allocated (the registers hold objects or null either way).
bool LeaveUnboxed(const UnboxedCode& code, int num_registers, Value* regs, int pc, int except = -1) {
  const uint64_t live = code.live[pc] & ~(except >= 0 ? uint64_t{1} << except : 0);
  for (uint64_t bits = live; bits != 0; bits &= bits - 1) {
    const int slot = __builtin_ctzll(bits);
    PyObject* boxed = BoxSlot(regs[num_registers + slot], IsIntSlot(code, slot));
    if (boxed == nullptr) return false;
    Value& reg = regs[code.slot_register[slot]];
    if (!ReleaseIsPure(reg.o)) ++g_effects;  // (a temporary's last object, released late)
    SetObject(reg, boxed);
  }
  return true;
}

// A prange chunk to run (vm/prange.h): its copy of the caller's frame, and
// where it starts.
struct ChunkStart {
  const PrangeChunk* chunk;
  Value* regs;
  int pc;
  bool views_contiguous;
};

// A frame whose machine code, entered at the function's start by
// RunMachineCodeOnFrame, left it otherwise than by returning: the registers it
// left, what its entry returned, and g_effects when the call began.
struct MachineCodeExit {
  Value* regs;
  int64_t outcome;
  uint64_t effects_at_entry;
};

bool Execute(const FunctionCode& fn, const Value* args, Value* result, const ChunkStart* start,
             const MachineCodeExit* exit = nullptr);

}  // namespace

bool Interpret(const FunctionCode& fn, const Value* args, Value* result) { return Execute(fn, args, result, nullptr); }

namespace {

// A call of a function RunsMachineCodeDirectly allows: its frame, made as
// Execute makes it, runs the machine code from pc 0, as Execute's enter_jit
// does (with the value specialization where the frame holds its values).
// Only a return ends it here; a side exit or an error goes on in Execute
// from where the machine code left, on this frame, as if Execute had
// entered it (the common call of a small function from Python pays for no
// interpreter frame).
[[gnu::always_inline]] inline bool RunMachineCodeOnFrame(const FunctionCode& fn, Value* result, Value* regs) {
  FunctionRuntime& runtime = *fn.runtime;
  const uint64_t effects_at_entry = g_effects;
  JitCallContext context{g_tiering.helpers, &fn, ModuleVersionsOf(fn)};
  runtime.jit_entries.Bump(false);
  JitFunction entry = runtime.jit_entry;
  if (runtime.special_state.load(std::memory_order_acquire) == JitState::kCompiled && SpecialMatches(runtime, regs)) {
    entry = runtime.special_entry;
    runtime.special_entries.Bump(false);
  }
  const int64_t outcome = entry(regs, result, &context, 0);
  if (__builtin_expect(outcome == kJitReturned, 1)) return true;
  const MachineCodeExit exit{regs, outcome, effects_at_entry};
  return Execute(fn, nullptr, result, nullptr, &exit);
}

}  // namespace

bool InterpretChunk(const FunctionCode& fn, Value* regs, int pc, bool views_contiguous, const PrangeChunk& chunk) {
  Value ignored;
  const ChunkStart start{&chunk, regs, pc, views_contiguous};
  return Execute(fn, nullptr, &ignored, &start);
}

namespace {

// The interpreter loop proper. A call (`start` null) makes its frame from
// `args` and the function's constants, owns its object registers and
// releases them at the end. A prange chunk runs on its copy of the caller's
// frame, whose object registers it never touches (the verifier allows only
// instructions flagged JIT in a prange loop, and those name no object
// register), from the loop's test to its PRANGE_END.
bool Execute(const FunctionCode& fn, const Value* args, Value* result, const ChunkStart* start,
             const MachineCodeExit* exit) {
  const int num_registers = fn.num_registers();
  const PrangeChunk* const chunk = start ? start->chunk : nullptr;
  Value* regs;
  // Machine code addresses the innermost axis of every view without a stride
  // multiply: a frame that holds a view strided there (a[::2], m[:, 1], a
  // transposed matrix) stays on the interpreter.
  bool views_contiguous = true;
  if (__builtin_expect(exit != nullptr, 0)) {
    // (A scalar frame: no buffer parameter. A view a local borrows later,
    // BORROW_U, is borrowed here, in `borrows`: machine code never runs it.)
    regs = exit->regs;
  } else if (__builtin_expect(start == nullptr, 1)) {
    regs = static_cast<Value*>(alloca(FrameBytes(fn)));
    MakeFrame(fn, args, regs);
    if (!fn.object_params.empty()) {
      TakeGil();  // (a nogil thread's callee that takes objects)
      for (uint8_t reg : fn.object_params) Py_INCREF(regs[reg].o);
    }
    for (int reg = 0; reg < fn.num_params() && fn.num_buffer_params > 0; ++reg) {
      if (fn.registers[reg].kind == Kind::kBuffer && !InnermostContiguous(*regs[reg].u)) views_contiguous = false;
    }
  } else {
    regs = start->regs;
    views_contiguous = start->views_contiguous;
  }
  LocalBorrows borrows;
  // No effect visible outside this call has happened since it started while
  // g_effects is unchanged (see RaiseDeoptimize). A prange chunk is never
  // pure: its caller cannot be abandoned (it counted the loop as an effect),
  // so nothing in it may deoptimize or grow an int.
  const uint64_t effects_at_entry = exit != nullptr ? exit->effects_at_entry : chunk == nullptr ? g_effects : g_effects - 1;

  // The code the frame runs: the function's, or its unboxed version
  // (vm/unbox.h), which has the same pcs. A frame moves between the two.
  const Instr* code = fn.code.data();
  const UnboxedCode* unboxed = nullptr;
  const Instr* ip = code + (start ? start->pc : 0);
  // The frame into `version` before pc (EnterUnboxed; the same pc of its
  // code, which the caller goes to): false, nothing changed, if it cannot.
  auto enter_unboxed = [&](const UnboxedCode* version, int pc) {
    if (!EnterUnboxed(*version, num_registers, regs, pc)) return false;
    unboxed = version;
    code = version->code.data();
    fn.runtime->unboxed_entries.Bump(false);
    return true;
  };
  // The frame back to the object code before pc (LeaveUnboxed), `ip` there:
  // false, with the exception set, if a float could not be boxed.
  auto leave_unboxed = [&](int pc, int except = -1) {
    const bool left = LeaveUnboxed(*unboxed, num_registers, regs, pc, except);
    unboxed = nullptr;
    code = fn.code.data();
    ip = code + pc;
    return left;
  };
  // PPY_JIT=eager enters machine code at the first back edge of a loop the
  // function reaches on the interpreter (after object code before it), so
  // that short loops run it too; otherwise every kBackEdgesPerCheck, or at
  // the first back edge once the function is compiled (at the frame's start,
  // below). A prange chunk enters it at its first back edge if the function
  // has it (the loop is hot as a whole: the chunks are its pieces).
  uint32_t ticks = g_tiering.mode == JitMode::kEager || chunk != nullptr ? 1 : kBackEdgesPerCheck;
  // The back edges since the last credit are period - ticks: credited to the
  // function's count at every loop check and when the frame ends, so that
  // the count is the sum over all frames (short ones included), then the
  // countdown restarts at `next`. (Not for a prange chunk: its loop's
  // caller counts the loop.)
  uint32_t period = ticks;
  auto credit_back_edges = [&](uint32_t next) {
    if (chunk == nullptr && period > ticks) fn.runtime->back_edges += period - ticks;
    ticks = period = next;
  };
  bool ok = false;

  static void* const kDispatch[kOpCount] = {
#define PPY_OPCODE(name, a, b, c, d, flags, meaning) &&L_##name,
#include "vm/opcodes.def"
#undef PPY_OPCODE
  };
  // While an int register holds a grown int: every instruction that names an
  // int register goes through grown_int_instruction first.
  static void* const kGrownDispatch[kOpCount] = {
#define PPY_OPCODE(name, a, b, c, d, flags, meaning)                                                     \
  NamesIntRegisters(opinfo_detail::a, opinfo_detail::b, opinfo_detail::c, opinfo_detail::d) ? &&grown_int_instruction \
                                                                                            : &&L_##name,
#include "vm/opcodes.def"
#undef PPY_OPCODE
  };
  // In a nogil scope (vm/gil.h) the GIL may be released: every instruction
  // that needs it (NeedsGil: all that touch Python objects, and the rest of
  // the interpreter-only ones) takes it first, through take_gil.
  static void* const kNogilDispatch[kOpCount] = {
#define PPY_OPCODE(name, a, b, c, d, op_flags, meaning) \
  !NeedsGil(Op::name) ? &&L_##name : &&take_gil,
#include "vm/opcodes.def"
#undef PPY_OPCODE
  };
  static void* const kGrownNogilDispatch[kOpCount] = {
#define PPY_OPCODE(name, a, b, c, d, op_flags, meaning)                                                     \
  NamesIntRegisters(opinfo_detail::a, opinfo_detail::b, opinfo_detail::c, opinfo_detail::d) ? &&grown_int_instruction \
  : !NeedsGil(Op::name)                                                                     ? &&L_##name               \
                                                                                            : &&take_gil,
#include "vm/opcodes.def"
#undef PPY_OPCODE
  };
  const bool nogil = InNogil();
  void* const* const plain_dispatch = nogil ? kNogilDispatch : kDispatch;
  void* const* const grown_dispatch = nogil ? kGrownNogilDispatch : kGrownDispatch;
  void* const* dispatch = plain_dispatch;
  GrownInts grown(num_registers);

#define R(x) regs[x]
#define CASE(name) L_##name : in = *ip;
#define NEXT            \
  do {                  \
    ++ip;               \
    goto* dispatch[static_cast<uint8_t>(ip->op)]; \
  } while (0)
// After an instruction that may have run Python code (an object operation, a
// call, a release that runs __del__): torch tensors the call borrowed may have
// moved (see RefreshTorchViews).
#define NEXT_AFTER_PYTHON                     \
  do {                                        \
    ++g_effects;                              \
    if (!RefreshTorchViews()) goto error;     \
    NEXT;                                     \
  } while (0)
  // After an object instruction whose operands (and the value it replaced)
  // were all plain numbers: no Python code ran, so the frame stays pure and
  // no torch view can have moved. A frame that has had an effect skips the
  // checks (`PURE && ...`): counting one more effect changes nothing then,
  // for it or its callers, whose effects began before its own.
#define NEXT_AFTER_NUMBERS(plain) \
  do {                            \
    if (plain) NEXT;              \
    NEXT_AFTER_PYTHON;            \
  } while (0)
#define PURE (g_effects == effects_at_entry)
  // An int result that does not fit 64 bits: OverflowError in an annotated
  // int; else the frame deoptimizes if it may (see RaiseDeoptimize), or the
  // register holds the Python int from here on (grow_int).
  // (An unboxed version's int slot, past the registers, deoptimizes: the
  // object code makes the long int, vm/unbox.h. So does a division of
  // slots by zero: the object code raises.)
#define INT_OVERFLOW(what)                     \
  do {                                         \
    if (in.a >= num_registers) goto unbox_deopt; \
    if (fn.registers[in.a].annotated || chunk) { \
      RaiseIntOverflow(fn, PC, what);          \
      goto error;                              \
    }                                          \
    if (PURE) {                                \
      RaiseDeoptimize(fn, PC, what);           \
      goto error;                              \
    }                                          \
    goto grow_int;                             \
  } while (0)
#define JUMP_TO(target)  \
  do {                   \
    ip = code + (target); \
    goto* dispatch[static_cast<uint8_t>(ip->op)]; \
  } while (0)
  // Every kBackEdgesPerCheck back edges: Ctrl-C, and the switch to machine code
  // once the function's loops are hot.
#define BACK_EDGE_TO(target)                                             \
  do {                                                                   \
    if (--ticks == 0) {                                                  \
      credit_back_edges(kBackEdgesPerCheck);                             \
      if (!PollInterrupts()) goto error;                                 \
      if (nogil && grown.count == 0) ReleaseGilAgain();                  \
      /* (Other threads' Python code is no effect of this call's: a     \
         call that deoptimizes reruns as if it had begun after it. A     \
         tensor it resized has moved, though.) */                        \
      if (!nogil && chunk == nullptr && YieldGilIfDue() && !RefreshTorchViews()) goto error; \
      if (g_tiering.mode != JitMode::kOff && views_contiguous && grown.count == 0 && TierUpAtLoop(fn)) { \
        if (fn.runtime->jit_entry != nullptr && fn.IsJitLoopEntry(target)) {      \
          jit_pc = (target);                                             \
          goto enter_jit;                                                \
        }                                                                \
      }                                                                  \
      if (unboxed == nullptr && fn.unbox_slots > 0 && g_tiering.mode != JitMode::kOff && g_tiering.unbox && \
          grown.count == 0 && !nogil) {                                  \
        const UnboxedCode* version = UnboxedCodeFor(fn);                 \
        if (version != nullptr) enter_unboxed(version, (target));        \
      }                                                                  \
    }                                                                    \
    /* An unboxed version's loop that machine code runs: entered at every \
       back edge (an outer loop's, say, that is not), not every few      \
       thousand, since it leaves at the loop's end. */                   \
    if (unboxed != nullptr && unboxed->machine != nullptr && views_contiguous && grown.count == 0 && \
        unboxed->machine->runtime->jit_state.load(std::memory_order_acquire) == JitState::kCompiled && \
        unboxed->machine->IsJitLoopEntry(target) && MachineCodeIterates(unboxed->code[target], regs)) { \
      jit_pc = (target);                                                 \
      jit_fn = unboxed->machine.get();                                   \
      goto enter_jit;                                                    \
    }                                                                    \
    JUMP_TO(target);                                                     \
  } while (0)
#define PC static_cast<int>(ip - code)

  Instr in;
  int64_t jit_pc = 0;
  int64_t outcome = kJitReturned;  // what the machine code's entry returned
  PyObject* unbox_value = nullptr;  // (what FOR_ITER_GF and LOAD_ATTR_GF hand unbox_result)
  // The machine code enter_jit enters: the function's, or its unboxed
  // version's (UnboxedCode::machine, on the unboxed code's registers).
  const FunctionCode* jit_fn = &fn;
  // A prange chunk's error already has this function's frame, at its line.
  bool traced = false;
  // Whether the machine code last entered was the function's, entered here at
  // its start (NoteLeftFromStart; a scalar frame that RunMachineCodeOnFrame
  // ran, returning without the interpreter, is not counted at all).
  bool entered_at_start = false;
  if (exit != nullptr) {
    outcome = exit->outcome;
    goto machine_code_left;
  }
  if (chunk == nullptr && g_tiering.mode != JitMode::kOff) {
    if (!fn.value_params.empty() && fn.runtime->special_state.load(std::memory_order_relaxed) == JitState::kNone) {
      RecordValues(fn, regs);
    }
    if (views_contiguous && TierUpAtCall(fn)) {
      if (fn.runtime->jit_enters_at_start.load(std::memory_order_relaxed)) goto enter_jit;
      // Machine code that starts at a loop: entered at this frame's first
      // back edge, not after a check interval that a short call never
      // reaches.
      credit_back_edges(1);
    }
    if (fn.unbox_slots > 0 && g_tiering.unbox && !nogil) {
      // (No slot is live at pc 0: every web is defined before it is read.)
      const UnboxedCode* version = UnboxedCodeFor(fn);
      if (version != nullptr && enter_unboxed(version, 0)) ip = code;
    }
  }
  goto* dispatch[static_cast<uint8_t>(ip->op)];

  // An instruction that may touch Python while this thread may have released
  // the GIL: it takes it (kept until the next loop check), then runs.
take_gil:
  TakeGil();
  goto* kDispatch[static_cast<uint8_t>(ip->op)];

  // Machine code runs on this same frame. It returns to be resumed at a pc (a
  // side exit: the instruction there runs here, raising what it must), or with
  // the function's result, or with an exception raised at a pc.
enter_jit : {
  const FunctionCode& machine = *std::exchange(jit_fn, &fn);
  // Machine code runs without the GIL in a nogil scope: code that moves
  // object references (MOVE_O) stays on the interpreter there, which takes
  // the GIL for them.
  if (nogil && machine.moves_objects) {
    ip = code + jit_pc;
    goto* dispatch[static_cast<uint8_t>(ip->op)];
  }
  // The function's machine code runs on the object code's registers.
  if (unboxed != nullptr && &machine == &fn && !leave_unboxed(static_cast<int>(jit_pc))) goto error;
  // Machine code holds no Python object: a nogil thread runs it without the
  // GIL even if something before (a compile, say) took it back.
  if (nogil) ReleaseGilAgain();
  JitCallContext context{g_tiering.helpers, &machine, ModuleVersionsOf(fn)};
  fn.runtime->jit_entries.Bump(nogil);
  entered_at_start = &machine == &fn && jit_pc == 0;
  JitFunction entry = machine.runtime->jit_entry;
  if (&machine == &fn && fn.runtime->special_state.load(std::memory_order_acquire) == JitState::kCompiled &&
      SpecialMatches(*fn.runtime, regs)) {
    entry = fn.runtime->special_entry;
    fn.runtime->special_entries.Bump(nogil);
  }
  outcome = entry(regs, result, &context, jit_pc);
}
machine_code_left : {
  if (outcome != kJitReturned) {
    // Machine code does not count its stores: leaving where one may have run
    // counts them (FunctionCode::after_store).
    const int64_t left_at = outcome < kJitReturned ? JitErrorPc(outcome) : outcome;
    if (left_at >= 0 && left_at < static_cast<int64_t>(fn.after_store.size()) && fn.after_store[left_at]) {
      ++g_effects;
    }
  }
  if (entered_at_start && (outcome <= kJitReturned || !HasFlag(code[outcome].op, kFlagJit))) {
    NoteLeftFromStart(*fn.runtime, outcome <= kJitReturned);
  }
  if (outcome == kJitReturned) {
    ok = true;
    goto done;
  }
  if (outcome < kJitReturned) {
    ip = code + JitErrorPc(outcome);
    goto error;
  }
  // Machine code returns None through the interpreter (a new reference to
  // None wants the GIL): that is the function's return, not a side exit.
  if (code[outcome].op != Op::RET_NONE) {
    fn.runtime->jit_exits.Bump(nogil);
    fn.runtime->exit_pc.store(static_cast<int32_t>(outcome), std::memory_order_relaxed);
  }
  ip = code + outcome;
  credit_back_edges(1);  // back into machine code at the next back edge
  goto* dispatch[static_cast<uint8_t>(ip->op)];
}

  // ---- Grown ints --------------------------------------------------------------------
  // `in` made an int beyond 64 bits, for an unannotated register, in a frame
  // that has had effects: the register holds the Python int from here on,
  // and the instructions that read it run on Python ints (GrownIntStep).
grow_int : {
  TakeGil();  // (the frame keeps the GIL while any int is grown: see BACK_EDGE_TO)
  if (unboxed != nullptr && !leave_unboxed(PC)) goto error;  // (the grown-int path knows the object code only)
  dispatch = grown_dispatch;
  int64_t target = -1;
  if (!GrownIntStep(fn, regs, grown, in, PC, &target)) goto error;
  if (grown.count == 0) dispatch = plain_dispatch;
  NEXT_AFTER_PYTHON;  // (a release it made may have run Python code)
}
  // An instruction that names an int register while some hold grown ints: if
  // it reads none of them, it runs as usual (an int it writes is an int64
  // again); else on the Python ints.
grown_int_instruction : {
  in = *ip;
  TakeGil();
  if (!grown.ReadBy(fn, in)) {
    grown.ForgetWrittenBy(fn, in);
    if (grown.count == 0) dispatch = plain_dispatch;
    goto* kDispatch[static_cast<uint8_t>(in.op)];
  }
  if (in.op == Op::RET_I) {  // the caller keeps it, or Python gets it (RaiseGrownInt)
    RaiseGrownInt(fn, PC, "return", grown.values[in.a]);
    goto error;
  }
  int64_t target = -1;
  if (!GrownIntStep(fn, regs, grown, in, PC, &target)) goto error;
  if (grown.count == 0) dispatch = plain_dispatch;
  if (target < 0) NEXT_AFTER_PYTHON;  // (a call, or a release, may have run Python code)
  if (HasFlag(in.op, kFlagLoop)) BACK_EDGE_TO(target);
  JUMP_TO(target);
}

  // ---- Moves -----------------------------------------------------------------------
  CASE(MOVE_I) R(in.a).i = R(in.b).i; NEXT;
  CASE(MOVE_F) R(in.a).f = R(in.b).f; NEXT;
  CASE(MOVE_O) {
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    SetObject(R(in.a), Py_XNewRef(R(in.b).o));
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(MOVE_U) R(in.a).u = R(in.b).u; NEXT;

  // ---- Conversions -------------------------------------------------------------------
  CASE(I2F) R(in.a).f = static_cast<double>(R(in.b).i); NEXT;
  CASE(F2I) {
    if (!FloatToInt(fn, PC, R(in.b).f, &R(in.a).i)) {
      // int() of a finite float beyond 64 bits is a Python int.
      if (std::isfinite(R(in.b).f) && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        INT_OVERFLOW("int()");
      }
      goto error;
    }
  }
  NEXT;
  CASE(TRUTH_I) R(in.a).i = R(in.b).i != 0; NEXT;
  CASE(TRUTH_F) R(in.a).i = R(in.b).f != 0.0; NEXT;
  CASE(TRUTH_O) {
    int truth = PyObject_IsTrue(R(in.b).o);
    if (truth < 0) goto error;
    R(in.a).i = truth;
    NEXT_AFTER_NUMBERS(PURE && IsPlainNumber(R(in.b).o));
  }
  CASE(NOT) R(in.a).i = R(in.b).i == 0; NEXT;
  CASE(BOX_I) {
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    PyObject* boxed = PyLong_FromLongLong(R(in.b).i);
    if (boxed == nullptr) goto error;
    SetObject(R(in.a), boxed);
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(BOX_B) {
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    SetObject(R(in.a), Py_NewRef(R(in.b).i ? Py_True : Py_False));
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(BOX_F) {
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    if (!StoreFloat(R(in.a), R(in.b).f)) goto error;
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(BOX_C) {
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    PyObject* boxed = PyComplex_FromDoubles(R(in.b).f, R(in.b + 1).f);
    if (boxed == nullptr) goto error;
    SetObject(R(in.a), boxed);
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(BOX_U) SetObject(R(in.a), Py_NewRef(R(in.b).u->owner)); NEXT_AFTER_PYTHON;
  CASE(BORROW_U) {
    if (!borrows.Borrow(fn, regs, in.a, R(in.b).o, fn.objects[in.d], in.c != 0)) goto error;
    views_contiguous = views_contiguous && InnermostContiguous(*R(in.a).u);
  }
  NEXT_AFTER_PYTHON;
  CASE(UNBOX_I) {
    if (!UnboxInt(R(in.b).o, &R(in.a).i)) {
      // A Python int beyond 64 bits (int("1" * 30), or object code's
      // arithmetic) stays a Python int.
      if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        INT_OVERFLOW("this expression");
      }
      goto error;
    }
    NEXT_AFTER_NUMBERS(PURE && IsPlainNumber(R(in.b).o));
  }
  CASE(UNBOX_F) {
    if (!UnboxFloat(R(in.b).o, &R(in.a).f)) goto error;
    NEXT_AFTER_NUMBERS(PURE && IsPlainNumber(R(in.b).o));
  }
  CASE(UNBOX_FE) {  // (array.array's and numpy's conversion, and array's TypeError for a str)
    const double value = PyFloat_AsDouble(R(in.b).o);
    if (value == -1.0 && PyErr_Occurred()) goto error;
    R(in.a).f = value;
    NEXT_AFTER_NUMBERS(PURE && IsPlainNumber(R(in.b).o));
  }
  CASE(UNBOX_C) {
    double real, imag;
    if (!UnboxComplex(R(in.b).o, &real, &imag)) goto error;
    R(in.a).f = real;
    R(in.a + 1).f = imag;
    NEXT_AFTER_NUMBERS(PURE && IsPlainNumber(R(in.b).o));
  }
  CASE(UNBOX_INDEX) {
    if (PyBool_Check(R(in.b).o)) {
      if (!ReadsBoolAsInt(*R(in.c).u)) {
        RaiseBoolMaskIndex(*R(in.c).u);
        goto error;
      }
      R(in.a).i = R(in.b).o == Py_True;
    } else if (!UnboxIndexValue(R(in.b).o, &R(in.a).i)) {
      goto error;
    }
  }
  NEXT_AFTER_PYTHON;
  CASE(UNBOX_B) {
    if (!UnboxBool(R(in.b).o, &R(in.a).i)) goto error;
  }
  NEXT_AFTER_PYTHON;

  // ---- Integer arithmetic --------------------------------------------------------------
  CASE(ADD_I) {
    int64_t value;  // R[A] is written only when it fits: it may be an operand
    if (__builtin_add_overflow(R(in.b).i, R(in.c).i, &value)) {
      INT_OVERFLOW("+");
    }
    R(in.a).i = value;
  }
  NEXT;
  CASE(SUB_I) {
    int64_t value;  // R[A] is written only when it fits: it may be an operand
    if (__builtin_sub_overflow(R(in.b).i, R(in.c).i, &value)) {
      INT_OVERFLOW("-");
    }
    R(in.a).i = value;
  }
  NEXT;
  CASE(MUL_I) {
    int64_t value;  // R[A] is written only when it fits: it may be an operand
    if (__builtin_mul_overflow(R(in.b).i, R(in.c).i, &value)) {
      INT_OVERFLOW("*");
    }
    R(in.a).i = value;
  }
  NEXT;
  CASE(FLOORDIV_I) {
    int64_t x = R(in.b).i, y = R(in.c).i;
    if (y == 0) {
      if (in.a >= num_registers) goto unbox_deopt;  // (an int slot's: see INT_OVERFLOW)
      RaiseZeroDivision("integer division or modulo by zero");
      goto error;
    }
    if (x == INT64_MIN && y == -1) {
      INT_OVERFLOW("//");
    }
    FloorDivInt(x, y, &R(in.a).i);
  }
  NEXT;
  CASE(MOD_I) {
    int64_t y = R(in.c).i;
    if (y == 0) {
      if (in.a >= num_registers) goto unbox_deopt;  // (an int slot's: see INT_OVERFLOW)
      RaiseZeroDivision("integer modulo by zero");
      goto error;
    }
    R(in.a).i = ModInt(R(in.b).i, y);
  }
  NEXT;
  CASE(POW_I) {
    int64_t x = R(in.b).i, y = R(in.c).i;
    if (y < 0) {
      RaiseNegativePower(x);
      goto error;
    }
    int64_t value;
    if (!PowInt(x, y, &value)) {
      INT_OVERFLOW("**");
    }
    R(in.a).i = value;
  }
  NEXT;
  CASE(TRUEDIV_I) {
    int64_t y = R(in.c).i;
    if (y == 0) {
      RaiseZeroDivision("division by zero");
      goto error;
    }
    if (!TrueDivideInt(R(in.b).i, y, &R(in.a).f)) goto error;
  }
  NEXT;
  CASE(AND_I) R(in.a).i = R(in.b).i & R(in.c).i; NEXT;
  CASE(OR_I) R(in.a).i = R(in.b).i | R(in.c).i; NEXT;
  CASE(XOR_I) R(in.a).i = R(in.b).i ^ R(in.c).i; NEXT;
  CASE(SHL_I) {
    int64_t y = R(in.c).i;
    if (y < 0) {
      RaiseValueError("negative shift count");
      goto error;
    }
    int64_t value;
    if (!ShiftLeftInt(R(in.b).i, y, &value)) {
      INT_OVERFLOW("<<");
    }
    R(in.a).i = value;
  }
  NEXT;
  CASE(SHR_I) {
    int64_t y = R(in.c).i;
    if (y < 0) {
      RaiseValueError("negative shift count");
      goto error;
    }
    R(in.a).i = ShiftRightInt(R(in.b).i, y);
  }
  NEXT;
  CASE(MIN_I) {
    int64_t x = R(in.b).i, y = R(in.c).i;
    R(in.a).i = y < x ? y : x;
  }
  NEXT;
  CASE(MAX_I) {
    int64_t x = R(in.b).i, y = R(in.c).i;
    R(in.a).i = y > x ? y : x;
  }
  NEXT;
  CASE(NEG_I) {
    if (R(in.b).i == INT64_MIN) {
      INT_OVERFLOW("unary -");
    }
    R(in.a).i = -R(in.b).i;
  }
  NEXT;
  CASE(INVERT_I) R(in.a).i = ~R(in.b).i; NEXT;
  CASE(ABS_I) {
    int64_t x = R(in.b).i;
    if (x == INT64_MIN) {
      INT_OVERFLOW("abs()");
    }
    R(in.a).i = x < 0 ? -x : x;
  }
  NEXT;

  // ---- Float arithmetic ------------------------------------------------------------------
  CASE(ADD_F) R(in.a).f = R(in.b).f + R(in.c).f; NEXT;
  CASE(SUB_F) R(in.a).f = R(in.b).f - R(in.c).f; NEXT;
  CASE(MUL_F) R(in.a).f = R(in.b).f * R(in.c).f; NEXT;
  CASE(DIV_F) {
    double y = R(in.c).f;
    if (y == 0.0) {
      RaiseZeroDivision("float division by zero");
      goto error;
    }
    R(in.a).f = R(in.b).f / y;
  }
  NEXT;
  CASE(FLOORDIV_F) {
    double y = R(in.c).f;
    if (y == 0.0) {
      RaiseZeroDivision("float floor division by zero");
      goto error;
    }
    R(in.a).f = FloorDivFloat(R(in.b).f, y);
  }
  NEXT;
  CASE(MOD_F) {
    double y = R(in.c).f;
    if (y == 0.0) {
      RaiseZeroDivision(kFloatModuloByZero);
      goto error;
    }
    R(in.a).f = ModFloat(R(in.b).f, y);
  }
  NEXT;
  CASE(POW_F) {
    if (!PowFloat(R(in.b).f, R(in.c).f, &R(in.a).f)) goto error;
  }
  NEXT;
  CASE(MIN_F) {
    double x = R(in.b).f, y = R(in.c).f;
    R(in.a).f = y < x ? y : x;
  }
  NEXT;
  CASE(MAX_F) {
    double x = R(in.b).f, y = R(in.c).f;
    R(in.a).f = y > x ? y : x;
  }
  NEXT;
  CASE(NEG_F) R(in.a).f = -R(in.b).f; NEXT;
  CASE(ABS_F) R(in.a).f = std::fabs(R(in.b).f); NEXT;

  // ---- Complex arithmetic ------------------------------------------------------------------
#define COMPLEX(x) Py_complex{R(x).f, R((x) + 1).f}
#define SET_COMPLEX(x, value)   \
  do {                          \
    const Py_complex v_ = value; \
    R(x).f = v_.real;           \
    R((x) + 1).f = v_.imag;     \
  } while (0)
  CASE(ADD_C) SET_COMPLEX(in.a, _Py_c_sum(COMPLEX(in.b), COMPLEX(in.c))); NEXT;
  CASE(SUB_C) SET_COMPLEX(in.a, _Py_c_diff(COMPLEX(in.b), COMPLEX(in.c))); NEXT;
  CASE(MUL_C) SET_COMPLEX(in.a, _Py_c_prod(COMPLEX(in.b), COMPLEX(in.c))); NEXT;
  CASE(DIV_C) {
    Py_complex quotient;
    if (!ComplexQuotient(COMPLEX(in.b), COMPLEX(in.c), &quotient)) goto error;
    SET_COMPLEX(in.a, quotient);
  }
  NEXT;
  CASE(ABS_C) {
    if (!ComplexAbs(COMPLEX(in.b), &R(in.a).f)) goto error;
  }
  NEXT;
  CASE(EQ_C) R(in.a).i = R(in.b).f == R(in.c).f && R(in.b + 1).f == R(in.c + 1).f; NEXT;
#undef COMPLEX
#undef SET_COMPLEX

  // ---- Comparisons -----------------------------------------------------------------------
  CASE(LT_I) R(in.a).i = R(in.b).i < R(in.c).i; NEXT;
  CASE(LE_I) R(in.a).i = R(in.b).i <= R(in.c).i; NEXT;
  CASE(EQ_I) R(in.a).i = R(in.b).i == R(in.c).i; NEXT;
  CASE(NE_I) R(in.a).i = R(in.b).i != R(in.c).i; NEXT;
  CASE(LT_F) R(in.a).i = R(in.b).f < R(in.c).f; NEXT;
  CASE(LE_F) R(in.a).i = R(in.b).f <= R(in.c).f; NEXT;
  CASE(EQ_F) R(in.a).i = R(in.b).f == R(in.c).f; NEXT;
  CASE(NE_F) R(in.a).i = R(in.b).f != R(in.c).f; NEXT;
  CASE(LT_FI) R(in.a).i = CompareFloatInt(R(in.b).f, R(in.c).i) == -1; NEXT;
  CASE(LE_FI) {
    int c = CompareFloatInt(R(in.b).f, R(in.c).i);
    R(in.a).i = c == -1 || c == 0;
  }
  NEXT;
  CASE(GT_FI) R(in.a).i = CompareFloatInt(R(in.b).f, R(in.c).i) == 1; NEXT;
  CASE(GE_FI) {
    int c = CompareFloatInt(R(in.b).f, R(in.c).i);
    R(in.a).i = c == 1 || c == 0;
  }
  NEXT;
  CASE(EQ_FI) R(in.a).i = CompareFloatInt(R(in.b).f, R(in.c).i) == 0; NEXT;
  CASE(NE_FI) R(in.a).i = CompareFloatInt(R(in.b).f, R(in.c).i) != 0; NEXT;

  // ---- Control flow ----------------------------------------------------------------------
  CASE(JMP) JUMP_TO(in.d);
  CASE(JT) if (R(in.a).i) JUMP_TO(in.d); NEXT;
  CASE(JF) if (!R(in.a).i) JUMP_TO(in.d); NEXT;
  CASE(LOOP) BACK_EDGE_TO(in.d);
  CASE(JLT_I) if (R(in.a).i < R(in.b).i) JUMP_TO(in.d); NEXT;
  CASE(JLE_I) if (R(in.a).i <= R(in.b).i) JUMP_TO(in.d); NEXT;
  CASE(JEQ_I) if (R(in.a).i == R(in.b).i) JUMP_TO(in.d); NEXT;
  CASE(JNE_I) if (R(in.a).i != R(in.b).i) JUMP_TO(in.d); NEXT;
  CASE(JLT_F) if (R(in.a).f < R(in.b).f) JUMP_TO(in.d); NEXT;
  CASE(JLE_F) if (R(in.a).f <= R(in.b).f) JUMP_TO(in.d); NEXT;
  CASE(JEQ_F) if (R(in.a).f == R(in.b).f) JUMP_TO(in.d); NEXT;
  CASE(JNE_F) if (R(in.a).f != R(in.b).f) JUMP_TO(in.d); NEXT;
  CASE(JNLT_F) if (!(R(in.a).f < R(in.b).f)) JUMP_TO(in.d); NEXT;
  CASE(JNLE_F) if (!(R(in.a).f <= R(in.b).f)) JUMP_TO(in.d); NEXT;
  CASE(JLT_FI) if (CompareFloatInt(R(in.a).f, R(in.b).i) == -1) JUMP_TO(in.d); NEXT;
  CASE(JLE_FI) {
    int c = CompareFloatInt(R(in.a).f, R(in.b).i);
    if (c == -1 || c == 0) JUMP_TO(in.d);
  }
  NEXT;
  CASE(JGT_FI) if (CompareFloatInt(R(in.a).f, R(in.b).i) == 1) JUMP_TO(in.d); NEXT;
  CASE(JGE_FI) {
    int c = CompareFloatInt(R(in.a).f, R(in.b).i);
    if (c == 1 || c == 0) JUMP_TO(in.d);
  }
  NEXT;
  CASE(JNLT_FI) if (CompareFloatInt(R(in.a).f, R(in.b).i) != -1) JUMP_TO(in.d); NEXT;
  CASE(JNLE_FI) {
    int c = CompareFloatInt(R(in.a).f, R(in.b).i);
    if (!(c == -1 || c == 0)) JUMP_TO(in.d);
  }
  NEXT;
  CASE(JNGT_FI) if (CompareFloatInt(R(in.a).f, R(in.b).i) != 1) JUMP_TO(in.d); NEXT;
  CASE(JNGE_FI) {
    int c = CompareFloatInt(R(in.a).f, R(in.b).i);
    if (!(c == 1 || c == 0)) JUMP_TO(in.d);
  }
  NEXT;

  // ---- Range loops -----------------------------------------------------------------------
  CASE(FORPREP) {
    int64_t start = R(in.a).i, stop = R(in.b).i, step = R(in.c).i;
    if (step == 0) {
      RaiseValueError("range() arg 3 must not be zero");
      goto error;
    }
    if (step > 0 ? start >= stop : start <= stop) JUMP_TO(in.d);
  }
  NEXT;
  CASE(FORLOOP) {
    int64_t step = R(in.c).i, next;
    if (!__builtin_add_overflow(R(in.a).i, step, &next) &&
        (step > 0 ? next < R(in.b).i : next > R(in.b).i)) {
      R(in.a).i = next;
      BACK_EDGE_TO(in.d);
    }
  }
  NEXT;
  CASE(FORLOOP_INC) {
    int64_t next = R(in.a).i + 1;  // R[A] < R[B] <= INT64_MAX: no overflow
    if (next < R(in.b).i) {
      R(in.a).i = next;
      BACK_EDGE_TO(in.d);
    }
  }
  NEXT;

  // ---- Buffers ---------------------------------------------------------------------------
  CASE(LEN_U) R(in.a).i = R(in.b).u->length; NEXT;
  CASE(LOAD_F64) {
    const BufferView& view = *R(in.b).u;
    int64_t index = R(in.c).i;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, R(in.c).i, false);
      goto error;
    }
    R(in.a).f = reinterpret_cast<const double*>(view.data)[index * view.strides[0]];
  }
  NEXT;
  CASE(LOAD_I64) {
    const BufferView& view = *R(in.b).u;
    int64_t index = R(in.c).i;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, R(in.c).i, false);
      goto error;
    }
    R(in.a).i = reinterpret_cast<const int64_t*>(view.data)[index * view.strides[0]];
  }
  NEXT;
  CASE(LOAD_F) {
    const BufferView& view = *R(in.b).u;
    int64_t index = R(in.c).i;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, R(in.c).i, false);
      goto error;
    }
    R(in.a).f = LoadFloatElement(view, index * view.strides[0]);
  }
  NEXT;
  CASE(LOAD_I) {
    const BufferView& view = *R(in.b).u;
    int64_t index = R(in.c).i;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, R(in.c).i, false);
      goto error;
    }
    if (!LoadIntElement(view, index * view.strides[0], &R(in.a).i)) goto error;
  }
  NEXT;
  CASE(STORE_F64) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t at = 0;
    if (!StoreOffset(view, R(in.b).i, &at)) goto error;
    reinterpret_cast<double*>(view.data)[at] = R(in.c).f;
  }
  NEXT;
  CASE(STORE_I64) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t at = 0;
    if (!StoreOffset(view, R(in.b).i, &at)) goto error;
    reinterpret_cast<int64_t*>(view.data)[at] = R(in.c).i;
  }
  NEXT;
  CASE(STORE_F) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t at = 0;
    if (!StoreOffset(view, R(in.b).i, &at)) goto error;
    StoreFloatElement(view, at, R(in.c).f);
  }
  NEXT;
  CASE(STORE_I) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t at = 0;
    if (!StoreOffset(view, R(in.b).i, &at)) goto error;
    if (!StoreIntElement(view, at, R(in.c).i)) goto error;
  }
  NEXT;
  CASE(LOADX_F64) {
    const BufferView& view = *R(in.b).u;
    int64_t index;
    if (__builtin_add_overflow(R(in.c).i, R(in.d).i, &index)) {
      RaiseIntOverflow(fn, PC, "+");
      goto error;
    }
    int64_t original = index;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, original, false);
      goto error;
    }
    R(in.a).f = reinterpret_cast<const double*>(view.data)[index * view.strides[0]];
  }
  NEXT;
  CASE(LOADX_I64) {
    const BufferView& view = *R(in.b).u;
    int64_t index;
    if (__builtin_add_overflow(R(in.c).i, R(in.d).i, &index)) {
      RaiseIntOverflow(fn, PC, "+");
      goto error;
    }
    int64_t original = index;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, original, false);
      goto error;
    }
    R(in.a).i = reinterpret_cast<const int64_t*>(view.data)[index * view.strides[0]];
  }
  NEXT;
  CASE(STOREX_F64) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t index;
    if (__builtin_add_overflow(R(in.b).i, R(in.c).i, &index)) {
      RaiseIntOverflow(fn, PC, "+");
      goto error;
    }
    int64_t at = 0;
    if (!StoreOffset(view, index, &at)) goto error;
    reinterpret_cast<double*>(view.data)[at] = R(in.d).f;
  }
  NEXT;
  CASE(STOREX_I64) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t index;
    if (__builtin_add_overflow(R(in.b).i, R(in.c).i, &index)) {
      RaiseIntOverflow(fn, PC, "+");
      goto error;
    }
    int64_t at = 0;
    if (!StoreOffset(view, index, &at)) goto error;
    reinterpret_cast<int64_t*>(view.data)[at] = R(in.d).i;
  }
  NEXT;

  CASE(ADDTO_F64) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t index = R(in.b).i;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, R(in.b).i, false);
      goto error;
    }
    if (view.readonly) {
      RaiseReadOnly(view);
      goto error;
    }
    reinterpret_cast<double*>(view.data)[index * view.strides[0]] += R(in.c).f;
  }
  NEXT;
  CASE(ADDTO_I64) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    int64_t index = R(in.b).i;
    if (!NormalizeIndex(view, &index)) {
      RaiseIndexError(view, R(in.b).i, false);
      goto error;
    }
    int64_t* element = reinterpret_cast<int64_t*>(view.data) + index * view.strides[0];
    int64_t sum;
    if (__builtin_add_overflow(*element, R(in.c).i, &sum)) {
      // Python's sum, an int past 64 bits, is what the store refuses: the
      // exporter's own error, after its read-only check.
      if (view.readonly) {
        RaiseReadOnly(view);
      } else if (PyObject* grown = AddedInt(*element, R(in.c).i)) {
        RaiseGrownElementOverflow(view, grown);
        Py_DECREF(grown);
      }
      goto error;
    }
    if (view.readonly) {
      RaiseReadOnly(view);
      goto error;
    }
    *element = sum;
  }
  NEXT;

  CASE(SHAPE_U) {
    const BufferView& view = *R(in.b).u;
    if (view.shapeless) {  // Python's own error (and if the attribute has appeared since the borrow, the view's shape)
      PyObject* shape = PyObject_GetAttrString(view.owner, "shape");
      if (shape == nullptr) goto error;
      Py_DECREF(shape);
      R(in.a).i = view.shape[in.c];
      NEXT_AFTER_PYTHON;
    }
    R(in.a).i = view.shape[in.c];
  }
  NEXT;
  CASE(INDEX_U) {
    const BufferView& view = *R(in.b).u;
    int64_t index = R(in.d).i;
    if (!NormalizeAxisIndex(view, in.c, &index)) {
      RaiseAxisIndexError(view, in.c, R(in.d).i);
      goto error;
    }
    R(in.a).i = index * view.strides[in.c];  // |result| <= the view's extent: no overflow
  }
  NEXT;
  CASE(LOADN_F) {
    const BufferView& view = *R(in.b).u;
    if (!OffsetInView(view, R(in.c).i)) {
      RaiseBadOffset(view, R(in.c).i);
      goto error;
    }
    R(in.a).f = LoadFloatElement(view, R(in.c).i);
  }
  NEXT;
  CASE(LOADN_I) {
    const BufferView& view = *R(in.b).u;
    if (!OffsetInView(view, R(in.c).i)) {
      RaiseBadOffset(view, R(in.c).i);
      goto error;
    }
    if (!LoadIntElement(view, R(in.c).i, &R(in.a).i)) goto error;
  }
  NEXT;
  CASE(STOREN_F) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    if (view.readonly) {
      RaiseReadOnly(view);
      goto error;
    }
    if (!OffsetInView(view, R(in.b).i)) {
      RaiseBadOffset(view, R(in.b).i);
      goto error;
    }
    StoreFloatElement(view, R(in.b).i, R(in.c).f);
  }
  NEXT;
  CASE(STOREN_I) {
    ++g_effects;
    const BufferView& view = *R(in.a).u;
    if (view.readonly) {
      RaiseReadOnly(view);
      goto error;
    }
    if (!OffsetInView(view, R(in.b).i)) {
      RaiseBadOffset(view, R(in.b).i);
      goto error;
    }
    if (!StoreIntElement(view, R(in.b).i, R(in.c).i)) goto error;
  }
  NEXT;

  // ---- math ------------------------------------------------------------------------------
  CASE(SQRT_F) {
    double x = R(in.b).f;
    if (x >= 0.0 && x != HUGE_VAL) {
      R(in.a).f = std::sqrt(x);
    } else if (!MathFloat(static_cast<int>(MathFn::SQRT), x, &R(in.a).f)) {
      goto error;
    }
  }
  NEXT;
  CASE(MATH_F) {
    if (!MathFloat(in.d, R(in.b).f, &R(in.a).f)) goto error;
  }
  NEXT;
  CASE(MATH_FF) {
    if (!MathFloat2(in.d, R(in.b).f, R(in.c).f, &R(in.a).f)) goto error;
  }
  NEXT;
  CASE(MATH_FI) {
    if (!MathToInt(fn, PC, in.d, R(in.b).f, &R(in.a).i)) {
      // floor/ceil/trunc of a finite float beyond 64 bits is a Python int.
      if (std::isfinite(R(in.b).f) && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        INT_OVERFLOW("int()");
      }
      goto error;
    }
  }
  NEXT;
  CASE(MATH_FB) R(in.a).i = MathToBool(in.d, R(in.b).f); NEXT;

  // ---- Calls and returns -----------------------------------------------------------------
  CASE(CALL_FN) {
    const FunctionCode& callee = *fn.module->functions[in.d];
    Value returned;
    if (!CallModuleFunction(callee, &R(in.b), &returned)) {
      // A result Python's code made too large for an annotated int.
      if (fn.registers[in.a].annotated && DeoptimizePending()) DeoptimizeToError();
      goto error;
    }
    if (KindOf(callee.result) == Kind::kObject) {
      SetObject(R(in.a), returned.o);
    } else {
      R(in.a) = returned;
    }
  }
  NEXT_AFTER_PYTHON;
  CASE(RET_I) {
    result->i = R(in.a).i;
    ok = true;
    goto done;
  }
  CASE(RET_F) {
    result->f = R(in.a).f;
    ok = true;
    goto done;
  }
  CASE(RET_O) {
    result->o = Py_NewRef(R(in.a).o);
    ok = true;
    goto done;
  }
  CASE(RET_NONE) {
    result->o = Py_NewRef(Py_None);
    ok = true;
    goto done;
  }

  // ---- Errors ----------------------------------------------------------------------------
  CASE(RAISE) {
    RaiseObject(R(in.a).o);
    goto error;
  }
  CASE(ASSERT_FAIL) {
    // AssertionError(message), one argument even when the message is a tuple.
    PyObject* message = R(in.a).o;
    if (message == Py_None) {
      PyErr_SetNone(PyExc_AssertionError);
    } else {
      PyObject* exception = PyObject_CallOneArg(PyExc_AssertionError, message);
      if (exception != nullptr) {
        PyErr_SetObject(PyExc_AssertionError, exception);
        Py_DECREF(exception);
      }
    }
    goto error;
  }
  CASE(CHECK_BOUND_I) {
    if (R(in.a).i == 0) {
      RaiseUnbound(fn.objects[in.d]);
      goto error;
    }
  }
  NEXT;
  CASE(CHECK_BOUND_O) {
    if (R(in.a).o == nullptr) {
      RaiseUnbound(fn.objects[in.d]);
      goto error;
    }
  }
  NEXT;
  CASE(CHECK_BOUND_U) {
    if (R(in.a).u == nullptr) {
      RaiseUnbound(fn.objects[in.d]);
      goto error;
    }
  }
  NEXT;

  // ---- Globals ---------------------------------------------------------------------------
  CASE(LOAD_GLOBAL) {
    // A lookup of a str key runs no Python code; only releasing what R[A]
    // held might.
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    PyObject* value = LookupGlobalCached(fn, PC, fn.objects[in.d]);
    if (value == nullptr) goto error;
    SetObject(R(in.a), Py_NewRef(value));
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(STORE_GLOBAL) {
    if (PyDict_SetItem(fn.module->globals, fn.objects[in.d], R(in.a).o) < 0) goto error;
  }
  NEXT_AFTER_PYTHON;
  // An annotated module constant holds its type's exact value (an int
  // within 64 bits, a float, a bool). Rebound to anything else (an int where
  // the annotation says float, 2**70, a numpy scalar), the call reruns as
  // Python while it has had no effect, exactly as CPython runs it; after
  // one, the read raises TypeError naming the global.
#define LOAD_GLOBAL_TYPED(expected, fits, unbox)                                  \
  do {                                                                            \
    PyObject* value = LookupGlobalCached(fn, PC, fn.objects[in.d]);               \
    if (value == nullptr) goto error;                                             \
    if (fits) {                                                                   \
      unbox;                                                                      \
      NEXT;                                                                       \
    }                                                                             \
    if (PURE && chunk == nullptr) {                                               \
      RaiseDeoptimizeForGlobal(fn, PC, fn.objects[in.d], expected, value);        \
    } else {                                                                      \
      RaiseGlobalTypeError(fn.objects[in.d], expected, value);                    \
    }                                                                             \
    goto error;                                                                   \
  } while (0)
  CASE(LOAD_GLOBAL_I) {
    int64_t number = 0;
    LOAD_GLOBAL_TYPED("int", PyLong_CheckExact(value) && ExactInt64(value, &number), R(in.a).i = number);
  }
  CASE(LOAD_GLOBAL_F) LOAD_GLOBAL_TYPED("float", PyFloat_CheckExact(value), R(in.a).f = PyFloat_AS_DOUBLE(value));
  CASE(LOAD_GLOBAL_B) LOAD_GLOBAL_TYPED("bool", PyBool_Check(value), R(in.a).i = value == Py_True);
#undef LOAD_GLOBAL_TYPED

  // ---- Object mode ------------------------------------------------------------------------
  CASE(LOAD_ATTR) {
    PyObject* value = GetAttribute(fn, PC, R(in.b).o, fn.objects[in.d]);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(STORE_ATTR) {
    if (SetAttribute(fn, PC, R(in.a).o, fn.objects[in.d], R(in.b).o) < 0) goto error;
  }
  NEXT_AFTER_PYTHON;
  CASE(GETITEM) {
    // Reading a list or tuple item runs no Python code: only the release of
    // what the register held might.
    if (PyObject* item = FastGetItem(R(in.b).o, R(in.c).o)) {
      const bool plain = PURE && ReleaseIsPure(R(in.a).o);
      SetObject(R(in.a), item);
      NEXT_AFTER_NUMBERS(plain);
    }
    PyObject* value = PyObject_GetItem(R(in.b).o, R(in.c).o);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(GETITEM_I) {
    // A typed int index: a list or tuple item needs no int object (CPython
    // makes one per iteration of the loop that counts it); anything else gets
    // the int, boxed, as CPython's subscript would.
    if (PyObject* item = FastGetItemAt(R(in.b).o, R(in.c).i)) {
      const bool plain = PURE && ReleaseIsPure(R(in.a).o);
      SetObject(R(in.a), item);
      NEXT_AFTER_NUMBERS(plain);
    }
    PyObject* key = PyLong_FromLongLong(R(in.c).i);
    if (key == nullptr) goto error;
    PyObject* value = PyObject_GetItem(R(in.b).o, key);
    Py_DECREF(key);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  // R[A][R[B]] := R[C]: an exact list's item replaced in place, by an exact
  // int index or, for SETITEM_I, a typed int one (which needs no int object:
  // anything else gets the int boxed, as GETITEM_I's does).
  CASE(SETITEM) goto setitem;
  CASE(SETITEM_I) goto setitem;
setitem : {
  const bool typed_index = in.op == Op::SETITEM_I;
  if (PyObject** item = typed_index ? ListItemAtIndex(R(in.a).o, R(in.b).i) : ListItemAt(R(in.a).o, R(in.b).o)) {
    PyObject* old = *item;
    *item = Py_NewRef(R(in.c).o);
    Py_DECREF(old);
    NEXT_AFTER_PYTHON;  // a store other code sees
  }
  const bool stored = typed_index ? SetItemAtIndex(R(in.a).o, R(in.b).i, R(in.c).o)
                                  : PyObject_SetItem(R(in.a).o, R(in.b).o, R(in.c).o) == 0;
  if (!stored) goto error;
}
  NEXT_AFTER_PYTHON;
  CASE(BINARY_O) {
    // `s += t` and `s = s + t` on exact strs: appended in place when nothing
    // but this register refers to s (PyUnicode_Append resizes such a str, as
    // CPython's BINARY_OP_INPLACE_ADD_UNICODE has it do), so that a loop that
    // builds a string takes linear time, not quadratic. (Not `s += s`: the
    // resize would move the str it copies from. On an error, MemoryError,
    // the register is left empty, and the frame ends: compiled code has no
    // `try`.)
    if (in.a == in.b && in.a != in.c && (in.d & ~kBinaryInPlace) == static_cast<int>(BinaryOp::ADD) &&
        PyUnicode_CheckExact(R(in.b).o) && PyUnicode_CheckExact(R(in.c).o)) {
      PyUnicode_Append(&R(in.a).o, R(in.c).o);
      if (R(in.a).o == nullptr) goto error;
      NEXT_AFTER_PYTHON;
    }
    const bool plain = PURE && IsPlainNumber(R(in.b).o) && IsPlainNumber(R(in.c).o) && ReleaseIsPure(R(in.a).o);
    double result;
    if (FastFloatBinary(in.d, R(in.b).o, R(in.c).o, &result)) {
      if (!StoreFloat(R(in.a), result)) goto error;
      NEXT_AFTER_NUMBERS(plain);
    }
    PyObject* value = FastIntBinary(in.d, R(in.b).o, R(in.c).o);
    if (value == nullptr) {
      if (PyErr_Occurred()) goto error;  // (a float could not be allocated)
      value = BinaryObjectOp(in.d, R(in.b).o, R(in.c).o);
      if (value == nullptr) goto error;
    }
    SetObject(R(in.a), value);
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(UNARY_O) {
    const bool plain = PURE && IsPlainNumber(R(in.b).o) && ReleaseIsPure(R(in.a).o);
    PyObject* value = UnaryObject(in.d, R(in.b).o);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(COMPARE_O) {
    const bool plain = PURE && IsPlainNumber(R(in.b).o) && IsPlainNumber(R(in.c).o) && ReleaseIsPure(R(in.a).o);
    PyObject* value = FastCompare(in.d, R(in.b).o, R(in.c).o);
    if (value == nullptr) value = PyObject_RichCompare(R(in.b).o, R(in.c).o, in.d);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
    NEXT_AFTER_NUMBERS(plain);
  }
  // An object comparison that only decides a branch (CPython's COMPARE_OP
  // then POP_JUMP_IF_*): the fast operands make no bool object and run no
  // Python code; anything else is COMPARE_O, then bool() of its result.
  CASE(JT_COMPARE_O) goto compare_branch;
  CASE(JF_COMPARE_O) goto compare_branch;
compare_branch : {
  int truth = FastCompareTruth(in.c, R(in.a).o, R(in.b).o);
  if (truth < 0) {
    PyObject* value = PyObject_RichCompare(R(in.a).o, R(in.b).o, in.c);
    if (value == nullptr) goto error;
    truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    if (truth < 0) goto error;
    ++g_effects;
    if (!RefreshTorchViews()) goto error;
  }
  if ((truth != 0) == (in.op == Op::JT_COMPARE_O)) JUMP_TO(in.d);
}
  NEXT;
  CASE(IS_O) R(in.a).i = R(in.b).o == R(in.c).o; NEXT;
  CASE(CONTAINS_O) {
    int found = PySequence_Contains(R(in.c).o, R(in.b).o);
    if (found < 0) goto error;
    R(in.a).i = found;
  }
  NEXT_AFTER_PYTHON;
  CASE(CALL_O) {
    if (in.c == 1 && IsBuiltinLen(R(in.b).o)) {
      const Py_ssize_t length = PyObject_Length(R(in.b + 1).o);
      PyObject* value = length >= 0 ? PyLong_FromSsize_t(length) : nullptr;
      if (value == nullptr) goto error;
      SetObject(R(in.a), value);
      NEXT_AFTER_PYTHON;  // (a __len__ may run any code)
    }
    const bool plain = PURE && IsPureBuiltinCall(fn, &R(in.b), in.c) && ReleaseIsPure(R(in.a).o);
    PyObject* value = PyObject_Vectorcall(R(in.b).o, reinterpret_cast<PyObject* const*>(&R(in.b + 1)),
                                          in.c, nullptr);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(CALL_KW) {
    PyObject* kwnames = fn.objects[in.d];
    PyObject* value = PyObject_Vectorcall(R(in.b).o, reinterpret_cast<PyObject* const*>(&R(in.b + 1)),
                                          in.c - PyTuple_GET_SIZE(kwnames), kwnames);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(CALL_METHOD) {
    PyObject* value = CallMethodCached(fn, PC, fn.objects[in.d], reinterpret_cast<PyObject* const*>(&R(in.b)), in.c);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(BUILD_LIST) goto build_span;
  CASE(BUILD_TUPLE) goto build_span;
  CASE(BUILD_SET) goto build_span;
  CASE(BUILD_DICT) goto build_span;
  CASE(BUILD_SLICE) goto build_span;
  CASE(BUILD_STRING) goto build_span;
build_span : {
  PyObject* value = BuildSpan(in.op, regs, in.b, in.c);
  if (value == nullptr) goto error;
  SetObject(R(in.a), value);
}
  NEXT_AFTER_PYTHON;
  // A slice read or assigned: an exact list's or tuple's without a slice
  // object (CPython 3.11 makes one per BUILD_SLICE and takes it apart in the
  // container), anything else's through the slice object, as CPython's.
  CASE(GETSLICE) {
    PyObject* const* span = reinterpret_cast<PyObject* const*>(&R(in.b));
    PyObject* value;
    if (!FastGetSlice(span, in.c - 1, &value)) {
      PyObject* slice = BuildSpan(Op::BUILD_SLICE, regs, in.b + 1, in.c - 1);
      if (slice == nullptr) goto error;
      value = PyObject_GetItem(span[0], slice);
      Py_DECREF(slice);
    }
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(SETSLICE) {
    PyObject* const* span = reinterpret_cast<PyObject* const*>(&R(in.b));
    bool stored;
    if (!FastSetSlice(span, in.c - 1, R(in.a).o, &stored)) {
      PyObject* slice = BuildSpan(Op::BUILD_SLICE, regs, in.b + 1, in.c - 1);
      if (slice == nullptr) goto error;
      stored = PyObject_SetItem(span[0], slice, R(in.a).o) == 0;
      Py_DECREF(slice);
    }
    if (!stored) goto error;
  }
  NEXT_AFTER_PYTHON;
  CASE(FORMAT) {
    PyObject* value = FormatObject(R(in.b).o, in.c, nullptr);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(FORMAT_SPEC) {
    PyObject* value = FormatObject(R(in.b).o, in.c, R(in.d).o);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(GET_ITER) {
    PyObject* value = PyObject_GetIter(R(in.b).o);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;
  CASE(FOR_ITER) goto for_iter_object;
  CASE(FOR_ITER_L) goto for_iter_object;  // (machine code's form of it, vm/opcodes.def)
for_iter_object : {
  PyObject* value = PyIter_Next(R(in.b).o);
  if (value == nullptr) {
    if (PyErr_Occurred() || !RefreshTorchViews()) goto error;
    JUMP_TO(in.d);
  }
  SetObject(R(in.a), value);
}
  NEXT_AFTER_PYTHON;
  CASE(UNPACK) {
    PyObject* items[kMaxRegisters];
    if (!UnpackObject(R(in.b).o, in.c, items)) goto error;
    for (int i = 0; i < in.c; ++i) SetObject(R(in.a + i), items[i]);
  }
  NEXT_AFTER_PYTHON;
  // ---- Parallel loops (vm/prange.h) -----------------------------------------------------
  CASE(PRANGE) {
    if (!RunPrange(fn, regs, PC, views_contiguous, &traced)) goto error;
  }
  JUMP_TO(in.d);
  CASE(PRANGE_REDUCE_I) NEXT;  // data for the PRANGE before it
  CASE(PRANGE_REDUCE_F) NEXT;
  CASE(PRANGE_END) {
    if (chunk != nullptr) {
      ok = true;
      goto done;
    }
    PyErr_SetString(PyExc_SystemError, "PRANGE_END reached outside a prange chunk");
  }
  goto error;
  CASE(IMPORT) {
    PyObject* value = PyImport_ImportModuleLevelObject(fn.objects[in.d], fn.module->globals, nullptr,
                                                       nullptr, 0);
    if (value == nullptr) goto error;
    SetObject(R(in.a), value);
  }
  NEXT_AFTER_PYTHON;

  // ---- Unboxed floats (vm/unbox.h): only in a frame that runs unboxed code ----------------
  CASE(GETITEM_GF) {
    long long i;
    if (!PyLong_CheckExact(R(in.c).o) || !ExactIntValue(R(in.c).o, &i) || !FloatItemAt(R(in.b).o, i, &R(in.a).f)) {
      goto unbox_deopt;
    }
    if (in.d != 0) goto unbox_clear;
  }
  NEXT;
  CASE(GETITEM_I_GF) {
    if (!FloatItemAt(R(in.b).o, R(in.c).i, &R(in.a).f)) goto unbox_deopt;
    if (in.d != 0) goto unbox_clear;
  }
  NEXT;
  CASE(GUARD_F) {
    if (!PyFloat_CheckExact(R(in.b).o)) goto unbox_deopt;
    R(in.a).f = PyFloat_AS_DOUBLE(R(in.b).o);
    if (in.d != 0) goto unbox_clear;
  }
  NEXT;
  CASE(FARITH_UF) {
    const double x = R(in.b).f, y = R(in.c).f;
    switch (static_cast<BinaryOp>(in.d & 0xff)) {
      case BinaryOp::ADD: R(in.a).f = x + y; break;
      case BinaryOp::SUB: R(in.a).f = x - y; break;
      default: R(in.a).f = x * y; break;
    }
    if (in.d >> 16 != 0) goto unbox_clear;
  }
  NEXT;
  CASE(BINARY_UF) {
    double x, y, value;
    int floats = 0;
    if (!FloatOperand(R(in.b), in.d & 0x200, &x, &floats) || !FloatOperand(R(in.c), in.d & 0x400, &y, &floats) ||
        floats == 0 || !FloatArithmetic(in.d & 0xff, x, y, &value)) {
      goto unbox_deopt;
    }
    if (in.d & 0x100) {
      R(in.a).f = value;
      if (in.d >> 16 != 0) goto unbox_clear;
      NEXT;
    }
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    if (!StoreFloat(R(in.a), value)) goto error;
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(COMPARE_UF) {
    double x, y;
    int floats = 0;
    if (!FloatOperand(R(in.b), in.d & 0x20, &x, &floats) || !FloatOperand(R(in.c), in.d & 0x40, &y, &floats) ||
        floats == 0) {
      goto unbox_deopt;
    }
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    SetObject(R(in.a), Py_NewRef(CompareNumbers(in.d & 15, x, y) == 1 ? Py_True : Py_False));
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(JT_COMPARE_UF) goto compare_branch_unboxed;
  CASE(JF_COMPARE_UF) goto compare_branch_unboxed;
compare_branch_unboxed : {
  double x, y;
  int floats = 0;
  if (!FloatOperand(R(in.a), in.c & 0x10, &x, &floats) || !FloatOperand(R(in.b), in.c & 0x20, &y, &floats) ||
      floats == 0) {
    goto unbox_deopt;
  }
  if ((CompareNumbers(in.c & 15, x, y) == 1) == (in.op == Op::JT_COMPARE_UF)) JUMP_TO(in.d);
}
  NEXT;
  // A float slot stored into R[A] at R[B], an object index, or, for
  // SETITEM_I_UF, a typed int one. (An exact float only the list holds takes
  // the value in place.)
  CASE(SETITEM_UF) goto setitem_unboxed_float;
  CASE(SETITEM_I_UF) goto setitem_unboxed_float;
setitem_unboxed_float : {
  const bool typed_index = in.op == Op::SETITEM_I_UF;
  if (PyObject** item = typed_index ? ListItemAtIndex(R(in.a).o, R(in.b).i) : ListItemAt(R(in.a).o, R(in.b).o)) {
    if (!StoreFloat(*item, R(in.c).f)) goto error;
    NEXT_AFTER_PYTHON;  // a store other code sees
  }
  PyObject* boxed = PyFloat_FromDouble(R(in.c).f);
  if (boxed == nullptr) goto error;
  const bool stored = typed_index ? SetItemAtIndex(R(in.a).o, R(in.b).i, boxed)
                                  : PyObject_SetItem(R(in.a).o, R(in.b).o, boxed) == 0;
  Py_DECREF(boxed);
  if (!stored) goto error;
}
  NEXT_AFTER_PYTHON;
  // The forms below serve float and int slots alike (the _UI and _GI ones
  // jump here): a slot leaves boxed by its kind, and unbox_result checks a
  // value by the kind of the slot it is for.
  CASE(RET_UF) goto return_unboxed;
  CASE(RET_UI) goto return_unboxed;
return_unboxed : {
  result->o = BoxSlot(R(in.a), in.op == Op::RET_UI);
  if (result->o == nullptr) goto error;
  ok = true;
  goto done;
}
  CASE(FOR_ITER_GF) goto for_iter_unboxed;
  CASE(FOR_ITER_GI) goto for_iter_unboxed;
for_iter_unboxed : {
  PyObject* value = PyIter_Next(R(in.b).o);
  if (value == nullptr) {
    if (PyErr_Occurred() || !RefreshTorchViews()) goto error;
    JUMP_TO(in.d);
  }
  unbox_value = value;
  goto unbox_result;
}
  CASE(LOAD_ATTR_GF) goto load_attr_unboxed;
  CASE(LOAD_ATTR_GI) goto load_attr_unboxed;
load_attr_unboxed : {
  PyObject* value = GetAttribute(fn, PC, R(in.b).o, fn.objects[in.d]);
  if (value == nullptr) goto error;
  unbox_value = value;
  goto unbox_result;
}
  CASE(STORE_ATTR_UF) goto store_attr_unboxed;
  CASE(STORE_ATTR_UI) goto store_attr_unboxed;
store_attr_unboxed : {
  PyObject* boxed = BoxSlot(R(in.b), in.op == Op::STORE_ATTR_UI);
  if (boxed == nullptr) goto error;
  const int stored = SetAttribute(fn, PC, R(in.a).o, fn.objects[in.d], boxed);
  Py_DECREF(boxed);
  if (stored < 0) goto error;
}
  NEXT_AFTER_PYTHON;

  // ---- Unboxed ints (vm/unbox.h) ----------------------------------------------------------
  CASE(GETITEM_GI) {
    int64_t i;
    if (!ExactInt64(R(in.c).o, &i) || !IntItemAt(R(in.b).o, i, &R(in.a).i)) goto unbox_deopt;
    if (in.d != 0) goto unbox_clear;
  }
  NEXT;
  CASE(GETITEM_I_GI) {
    if (!IntItemAt(R(in.b).o, R(in.c).i, &R(in.a).i)) goto unbox_deopt;
    if (in.d != 0) goto unbox_clear;
  }
  NEXT;
  CASE(GUARD_I) {
    if (!ExactInt64(R(in.b).o, &R(in.a).i)) goto unbox_deopt;
    if (in.d != 0) goto unbox_clear;
  }
  NEXT;
  CASE(IARITH_UI) {
    const int64_t x = R(in.b).i, y = R(in.c).i;
    int64_t value;
    bool overflow;
    switch (static_cast<BinaryOp>(in.d & 0xff)) {
      case BinaryOp::ADD: overflow = __builtin_add_overflow(x, y, &value); break;
      case BinaryOp::SUB: overflow = __builtin_sub_overflow(x, y, &value); break;
      default: overflow = __builtin_mul_overflow(x, y, &value); break;
    }
    if (overflow) goto unbox_deopt;  // (the object code makes the long int)
    R(in.a).i = value;
    if (in.d >> 16 != 0) goto unbox_clear;
  }
  NEXT;
  CASE(BINARY_UI) {
    int64_t x, y, value;
    if (!IntOperand(R(in.b), in.d & 0x200, &x) || !IntOperand(R(in.c), in.d & 0x400, &y) ||
        !IntArithmetic(in.d & 0xff, x, y, &value)) {
      goto unbox_deopt;
    }
    if (in.d & 0x100) {
      R(in.a).i = value;
      if (in.d >> 16 != 0) goto unbox_clear;
      NEXT;
    }
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    PyObject* boxed = PyLong_FromLongLong(value);
    if (boxed == nullptr) goto error;
    SetObject(R(in.a), boxed);
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(COMPARE_UI) {
    int64_t x, y;
    if (!IntOperand(R(in.b), in.d & 0x20, &x) || !IntOperand(R(in.c), in.d & 0x40, &y)) goto unbox_deopt;
    const bool plain = PURE && ReleaseIsPure(R(in.a).o);
    SetObject(R(in.a), Py_NewRef(CompareNumbers(in.d & 15, x, y) == 1 ? Py_True : Py_False));
    NEXT_AFTER_NUMBERS(plain);
  }
  CASE(JT_COMPARE_UI) goto compare_branch_unboxed_int;
  CASE(JF_COMPARE_UI) goto compare_branch_unboxed_int;
compare_branch_unboxed_int : {
  int64_t x, y;
  if (!IntOperand(R(in.a), in.c & 0x10, &x) || !IntOperand(R(in.b), in.c & 0x20, &y)) goto unbox_deopt;
  if ((CompareNumbers(in.c & 15, x, y) == 1) == (in.op == Op::JT_COMPARE_UI)) JUMP_TO(in.d);
}
  NEXT;
  // The same for an int slot, SETITEM_UI and SETITEM_I_UI.
  CASE(SETITEM_UI) goto setitem_unboxed_int;
  CASE(SETITEM_I_UI) goto setitem_unboxed_int;
setitem_unboxed_int : {
  const bool typed_index = in.op == Op::SETITEM_I_UI;
  PyObject* boxed = PyLong_FromLongLong(R(in.c).i);
  if (boxed == nullptr) goto error;
  if (PyObject** item = typed_index ? ListItemAtIndex(R(in.a).o, R(in.b).i) : ListItemAt(R(in.a).o, R(in.b).o)) {
    PyObject* old = *item;
    *item = boxed;
    Py_DECREF(old);
    NEXT_AFTER_PYTHON;  // a store other code sees
  }
  const bool stored = typed_index ? SetItemAtIndex(R(in.a).o, R(in.b).i, boxed)
                                  : PyObject_SetItem(R(in.a).o, R(in.b).o, boxed) == 0;
  Py_DECREF(boxed);
  if (!stored) goto error;
}
  NEXT_AFTER_PYTHON;

  // FOR_ITER_G[FI]'s and LOAD_ATTR_G[FI]'s value, made by the object code's
  // own path (which may have run Python code): an exact float (an exact int
  // within 64 bits, for an int slot) goes into the slot; anything else into
  // the object register the slot stands for, and the frame goes on in the
  // object code after the instruction (it cannot run again).
unbox_result : {
  PyObject* value = unbox_value;
  const int slot = in.a - num_registers;
  Value& reg = R(unboxed->slot_register[slot]);
  const bool int_slot = IsIntSlot(*unboxed, slot);
  if (int_slot ? IntSlotValue(value, &R(in.a).i) : PyFloat_CheckExact(value)) {
    if (!int_slot) R(in.a).f = PyFloat_AS_DOUBLE(value);
    Py_DECREF(value);
    PyObject* old = reg.o;  // (a temporary's object of another web)
    reg.o = nullptr;
    Py_XDECREF(old);
    NEXT_AFTER_PYTHON;
  }
  int64_t met_int;
  const bool saw_int = !int_slot && ExactInt64(value, &met_int);
  SetObject(reg, value);
  const int pc = PC;
  RecordUnboxFailure(fn, *unboxed, pc, saw_int);
  const bool left = leave_unboxed(pc + 1, slot);
  ip = code + pc;  // (an error is this instruction's; NEXT goes on after it)
  if (!left) goto error;
  NEXT_AFTER_PYTHON;
}
  // An unboxed value replaced what a reused object register may hold (an
  // object of another of its webs, vm/unbox.cpp): released now, as the
  // object code's write would release it.
unbox_clear : {
  // (Arithmetic keeps its operator in D's low bits and the register above.)
  const bool arithmetic =
      in.op == Op::BINARY_UF || in.op == Op::BINARY_UI || in.op == Op::FARITH_UF || in.op == Op::IARITH_UI;
  const int reg = (arithmetic ? in.d >> 16 : in.d) - 1;
  PyObject* old = R(reg).o;
  R(reg).o = nullptr;
  const bool plain = PURE && ReleaseIsPure(old);
  Py_XDECREF(old);
  NEXT_AFTER_NUMBERS(plain);
}
  // A guard failed: the instruction runs again in the object code, at the
  // same pc, with the live slots boxed; the next unboxed version leaves it
  // alone.
unbox_deopt : {
  RecordUnboxFailure(fn, *unboxed, PC, FloatGuardMetInt(in, regs));
  if (!leave_unboxed(PC)) goto error;
  goto* dispatch[static_cast<uint8_t>(ip->op)];
}

error:
  TakeGil();  // (whatever raised took it; a callee's error may come back without)
  if (DeoptimizePending()) {
    if (PURE) {
      ForgetGrownInt();  // the call reruns as Python from its start
    } else if (ip->op == Op::CALL_FN && !fn.registers[ip->a].annotated && GrownIntPending() && chunk == nullptr) {
      // The callee returned a grown int: this frame keeps it (in the object code).
      if (unboxed != nullptr && !leave_unboxed(PC)) goto error_unwind;  // (MemoryError: no frame keeps the int)
      grown.Set(ip->a, TakeGrownInt());
      dispatch = grown_dispatch;
      NEXT_AFTER_PYTHON;
    } else if (!(ip->op == Op::RET_I && GrownIntPending() && chunk == nullptr)) {
      DeoptimizeToError();  // this frame can neither rerun nor keep it
    }
  }
error_unwind:
  if (!traced) AddTraceback(fn, PC);
  ok = false;

done:
  if (chunk != nullptr) return ok;  // (a copy of its caller's frame: it owns nothing)
  credit_back_edges(0);
  if (!fn.object_params.empty() || !fn.owned_objects.empty() || !borrows.empty()) {
    TakeGil();
    for (uint8_t reg : fn.object_params) Py_XDECREF(regs[reg].o);
    for (uint8_t reg : fn.owned_objects) Py_XDECREF(regs[reg].o);
  }
  return ok;

#undef R
#undef CASE
#undef NEXT
#undef NEXT_AFTER_PYTHON
#undef INT_OVERFLOW
#undef PURE
#undef NEXT_AFTER_NUMBERS
#undef JUMP_TO
#undef BACK_EDGE_TO
#undef PC
}

}  // namespace

}  // namespace ppy
