// Static types of the ppy language.
//
// int (64-bit), float (IEEE double), bool, complex (a pair of doubles), None,
// Buffer[T] and Buffer[T, n] (n dimensions), and object: any
// other Python value, handled through the C API. An object type may know its
// Python class (a str literal is an object known to be "str"), which lets the
// checker reject what CPython would reject at run time anyway, such as storing a
// str into an int variable.
#pragma once

#include <string>

#include "vm/code.h"

namespace ppy {

enum class TypeKind : uint8_t { kUnknown, kInt, kFloat, kBool, kNone, kBuffer, kObject, kComplex };

struct Type {
  TypeKind kind = TypeKind::kUnknown;
  ElemType elem = ElemType::kNone;  // Buffer only
  const char* known_class = nullptr;  // object only: a class known statically, or null
  uint8_t ndim = 1;                   // Buffer only: its dimensions (Buffer[float, 2])

  static Type Unknown() { return {}; }
  static Type Int() { return {TypeKind::kInt}; }
  static Type Float() { return {TypeKind::kFloat}; }
  static Type Bool() { return {TypeKind::kBool}; }
  static Type Complex() { return {TypeKind::kComplex}; }
  static Type None() { return {TypeKind::kNone}; }
  static Type Object(const char* known = nullptr) { return {TypeKind::kObject, ElemType::kNone, known}; }
  static Type Buffer(ElemType elem, int ndim = 1) {
    return {TypeKind::kBuffer, elem, nullptr, static_cast<uint8_t>(ndim)};
  }
  // The register that holds a value of this type at a function's boundary,
  // with its element type and dimensions for a buffer. (A complex crosses the
  // boundary as an object; inside a function it is a pair of float
  // registers, which the lowering allocates itself.)
  RegisterType register_type(bool annotated = false) const {
    RegisterType reg{kind_of_register(), is_buffer() ? elem : ElemType::kNone, annotated};
    reg.ndim = is_buffer() ? ndim : 1;
    return reg;
  }

  bool is_known() const { return kind != TypeKind::kUnknown; }
  bool is_int() const { return kind == TypeKind::kInt; }
  bool is_float() const { return kind == TypeKind::kFloat; }
  bool is_bool() const { return kind == TypeKind::kBool; }
  bool is_object() const { return kind == TypeKind::kObject || kind == TypeKind::kNone; }
  bool is_buffer() const { return kind == TypeKind::kBuffer; }
  bool is_complex() const { return kind == TypeKind::kComplex; }
  // int and bool: the integer kinds arithmetic accepts.
  bool is_integral() const { return kind == TypeKind::kInt || kind == TypeKind::kBool; }
  bool is_numeric() const { return is_integral() || kind == TypeKind::kFloat; }
  bool is_tensor() const;

  // The type of an element read from this buffer: float or int.
  Type element() const;

  // The register kind that holds a value of this type (object for a complex,
  // as at the boundary: code that meets a complex without handling its pair
  // of float registers fails the verifier instead of losing a part).
  Kind kind_of_register() const;
  ValueType value_type() const;

  std::string name() const;

  bool operator==(const Type& other) const;
  bool operator!=(const Type& other) const { return !(*this == other); }
};

}  // namespace ppy
