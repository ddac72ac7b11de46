// Where CPython keeps the attributes of an instance of a plain class: the one
// place ppy reads CPython's private object layout for attributes (each
// version's layout is cited below, from its Include/internal headers).
//
// An instance of a class without `__slots__` has no dict of its own while its
// attributes fit the class's shared keys (PEP 412's key-sharing dictionaries):
// its attribute values sit in an array ("values"), in the order of the keys
// the class shares among its instances (`ht_cached_keys`), and a dict is made
// only when something asks for `__dict__` or the keys overflow. CPython 3.11's
// LOAD_ATTR_INSTANCE_VALUE reads `values[index]` behind a check of the type's
// version tag, and so do the instructions here (vm/interpreter.cpp,
// InstanceAttribute): finding the index is a scan of the shared keys, once per
// instruction and type version; reading is two loads.
//
//   3.11  the values pointer is the word 4 words before the object (null once
//         a dict was made);
//   3.12  the word 3 words before the object is the values pointer minus 1
//         (odd: "values") or the dict (even);
//   3.13  the values are inline, right after the object's fixed part
//         (Py_TPFLAGS_INLINE_VALUES), with a `valid` byte that turns 0 when a
//         dict took them over; a dict made from them may also share them
//         (then stores must go through the dict: the managed dict pointer, 3
//         words before the object, is not null).
//
// In the free-threaded build (not supported by ppy) none of this is used.
#pragma once

#include <Python.h>

#include <cstdint>

namespace ppy {

#if !defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define PPY_INSTANCE_VALUES 1
#else
#define PPY_INSTANCE_VALUES 0
#endif

namespace instance_values_detail {

// The head of a dict's keys object (`struct _dictkeysobject` of
// pycore_dict.h, the same on 3.11, 3.12 and 3.13 with the GIL), then the
// index table of 1 << log2_index_bytes bytes, then the entries.
struct DictKeysHead {
  Py_ssize_t refcnt;
  uint8_t log2_size;
  uint8_t log2_index_bytes;
  uint8_t kind;  // DICT_KEYS_SPLIT (2): the shared keys of a class
  uint32_t version;
  Py_ssize_t usable;
  Py_ssize_t nentries;
  char indices[];
};
// An entry of a table of str keys (PyDictUnicodeEntry).
struct UnicodeEntry {
  PyObject* key;
  PyObject* value;  // (null in a split table: the values are the instances')
};
inline constexpr uint8_t kSplitKeys = 2;

}  // namespace instance_values_detail

// Whether instances of `type` keep their attributes in a values array while
// they have no dict (and the class's shared keys say where each one is).
inline bool TypeHasInstanceValues(PyTypeObject* type) {
#if PPY_INSTANCE_VALUES
#if PY_VERSION_HEX >= 0x030D0000
  if (!PyType_HasFeature(type, Py_TPFLAGS_INLINE_VALUES)) return false;
#else
  if (!PyType_HasFeature(type, Py_TPFLAGS_MANAGED_DICT)) return false;
#endif
  if (!PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE)) return false;
  auto* keys = reinterpret_cast<instance_values_detail::DictKeysHead*>(
      reinterpret_cast<PyHeapTypeObject*>(type)->ht_cached_keys);
  return keys != nullptr && keys->kind == instance_values_detail::kSplitKeys;
#else
  (void)type;
  return false;
#endif
}

// The position of attribute `name` (an exact str) in the values of instances
// of `type` (TypeHasInstanceValues), or -1 if the class's shared keys do not
// hold it. A position, once given, stays: shared keys only ever grow.
inline Py_ssize_t InstanceValueIndex(PyTypeObject* type, PyObject* name) {
#if PPY_INSTANCE_VALUES
  using instance_values_detail::DictKeysHead;
  using instance_values_detail::UnicodeEntry;
  auto* keys = reinterpret_cast<DictKeysHead*>(reinterpret_cast<PyHeapTypeObject*>(type)->ht_cached_keys);
  const auto* entries = reinterpret_cast<const UnicodeEntry*>(keys->indices + (size_t{1} << keys->log2_index_bytes));
  for (Py_ssize_t i = 0; i < keys->nentries; ++i) {
    PyObject* key = entries[i].key;
    if (key == name) return i;
    if (key != nullptr && PyUnicode_CheckExact(key) && PyUnicode_Compare(key, name) == 0) return i;
  }
  return -1;
#else
  (void)type;
  (void)name;
  return -1;
#endif
}

// How many keys the shared keys of `type` (TypeHasInstanceValues) hold: while
// it is unchanged, a name InstanceValueIndex did not find is still not there.
inline Py_ssize_t InstanceValueKeyCount(PyTypeObject* type) {
#if PPY_INSTANCE_VALUES
  return reinterpret_cast<instance_values_detail::DictKeysHead*>(
             reinterpret_cast<PyHeapTypeObject*>(type)->ht_cached_keys)
      ->nentries;
#else
  (void)type;
  return -1;
#endif
}

// The values array of `object`, whose type has instance values, or null when
// its attributes live in a dict. `for_store`: also null when a dict shares the
// values (3.13), so that a store goes through that dict.
inline PyObject** InstanceValues(PyObject* object, bool for_store) {
#if PPY_INSTANCE_VALUES && PY_VERSION_HEX >= 0x030D0000
  // struct _dictvalues { uint8_t capacity, size, embedded, valid; PyObject* values[]; }
  char* values = reinterpret_cast<char*>(object) + Py_TYPE(object)->tp_basicsize;
  if (values[3] == 0) return nullptr;
  if (for_store && reinterpret_cast<PyObject**>(object)[-3] != nullptr) return nullptr;
  return reinterpret_cast<PyObject**>(values + sizeof(PyObject*));
#elif PPY_INSTANCE_VALUES && PY_VERSION_HEX >= 0x030C0000
  (void)for_store;
  const uintptr_t tagged = reinterpret_cast<uintptr_t*>(object)[-3];
  return (tagged & 1) != 0 ? reinterpret_cast<PyObject**>(tagged + 1) : nullptr;
#elif PPY_INSTANCE_VALUES
  (void)for_store;
  return reinterpret_cast<PyObject***>(object)[-4];
#else
  (void)object;
  (void)for_store;
  return nullptr;
#endif
}

}  // namespace ppy
