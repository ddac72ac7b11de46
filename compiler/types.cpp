#include "compiler/types.h"

#include <cstring>

namespace ppy {

bool Type::is_tensor() const {
  return kind == TypeKind::kObject && known_class != nullptr && std::strcmp(known_class, "torch.Tensor") == 0;
}

Type Type::element() const {
  if (elem == ElemType::kBool) return Bool();
  return InfoOf(elem).is_float ? Float() : Int();
}

Kind Type::kind_of_register() const {
  switch (kind) {
    case TypeKind::kInt:
    case TypeKind::kBool: return Kind::kInt;
    case TypeKind::kFloat: return Kind::kFloat;
    case TypeKind::kBuffer: return Kind::kBuffer;
    default: return Kind::kObject;
  }
}

ValueType Type::value_type() const {
  switch (kind) {
    case TypeKind::kInt: return ValueType::kInt;
    case TypeKind::kBool: return ValueType::kBool;
    case TypeKind::kFloat: return ValueType::kFloat;
    case TypeKind::kBuffer: return ValueType::kBuffer;
    case TypeKind::kNone: return ValueType::kNone;
    case TypeKind::kComplex: return ValueType::kComplex;
    default: return ValueType::kObject;
  }
}

std::string Type::name() const {
  switch (kind) {
    case TypeKind::kUnknown: return "unknown";
    case TypeKind::kInt: return "int";
    case TypeKind::kFloat: return "float";
    case TypeKind::kBool: return "bool";
    case TypeKind::kComplex: return "complex";
    case TypeKind::kNone: return "None";
    case TypeKind::kBuffer:
      return std::string("Buffer[") + InfoOf(elem).name + (ndim == 1 ? "" : ", " + std::to_string(ndim)) + "]";
    case TypeKind::kObject: return known_class ? known_class : "object";
  }
  return "?";
}

bool Type::operator==(const Type& other) const {
  if (kind != other.kind) return false;
  if (kind == TypeKind::kBuffer) return elem == other.elem && ndim == other.ndim;
  return true;
}

}  // namespace ppy
