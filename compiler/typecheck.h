// The type checker: decides, per function, whether ppy compiles it, and types
// every expression of those it compiles.
//
// A function falls back to plain Python when it uses a construct the VM does not
// run (a class body, a lambda, try, with, ...): that is a reason, not an error.
// A function that uses the typed subset inconsistently (a float stored into an
// int local, a str added to an int) has type errors: `ppy check` reports them,
// and an import runs that function as Python with a warning. `@ppy.native` makes
// a fallback an error too.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/syntax.h"

namespace ppy {

// The builtins the checker gives types to; any other builtin is called as an
// object, through CPython.
#define PPY_TYPED_BUILTINS(X) \
  X(LEN, "len")               \
  X(RANGE, "range")           \
  X(INT, "int")               \
  X(FLOAT, "float")           \
  X(BOOL, "bool")             \
  X(ABS, "abs")               \
  X(MIN, "min")               \
  X(MAX, "max")               \
  X(ROUND, "round")           \
  X(COMPLEX, "complex")

enum class Builtin : uint8_t {
#define PPY_BUILTIN_ENUM(id, name) k##id,
  PPY_TYPED_BUILTINS(PPY_BUILTIN_ENUM)
#undef PPY_BUILTIN_ENUM
};

// What a module-level name is, as far as compiled code is concerned.
struct GlobalSymbol {
  enum class Kind : uint8_t {
    kDynamic,        // anything else: read from the module's dict at run time
    kModule,         // `import math`: module_name
    kMathFunction,   // `from math import sqrt`: math_id
    kMathConstant,   // `from math import pi`: value
    kPpyName,        // `from ppy import Buffer, f32, native`: ppy_name
    kTypedConstant,  // `SCALE: float = 2.5`: type
    kFunction,       // a top-level def: function (index into ModuleInfo::functions)
  };
  Kind kind = Kind::kDynamic;
  std::string module_name;
  // For `from torch... import name`: the dotted name it was imported as
  // ("torch.nn.functional", "torch.relu"), which the region tier resolves.
  std::string origin;
  std::string ppy_name;
  int math_id = -1;
  double value = 0.0;
  Type type;
  int function = -1;
};

struct LocalVariable {
  std::string name;
  Type type;
  Loc first_assignment;
  bool is_param = false;
  bool annotated = false;  // its type is its annotation's, not its assignments'
  // An unannotated local whose assignments disagree (an int and a float, a
  // number and an object) holds a dynamic value: the first assignment that
  // disagreed, and the two types, for `ppy check -v`.
  Loc conflict;
  Type first_type;
  Type conflict_type;
  bool needs_bound_check = false;  // some read may come before any assignment
};

struct FunctionInfo {
  FunctionDef* def = nullptr;
  int statement_index = -1;  // position among the module's top-level statements
  std::string name;

  // Whether ppy compiles it, and if not, why.
  bool compiled = false;
  std::string fallback_reason;
  Loc fallback_loc;
  bool native_required = false;  // decorated with @ppy.native or @ppy.nogil
  bool nogil = false;             // decorated with @ppy.nogil
  bool other_decorators = false;  // decorated with anything else
  bool rebound = false;  // the module binds its name again
  bool has_type_errors = false;

  std::vector<Type> param_types;
  Type result;
  bool result_annotated = false;

  std::vector<LocalVariable> locals;  // parameters first, in order
  std::map<std::string, int> local_index;
  std::set<std::string> declared_global;
  std::vector<std::pair<std::string, Type>> typed_globals;  // annotated constants read

  int code_index = -1;  // index in the ModuleCode, when compiled

  // An element-generic function: its first parameter annotated `Buffer`
  // alone (see ModuleInfo::generic_elem), or -1.
  int generic_param = -1;

  bool passes_scan = false;        // uses no construct that forces a fallback
  std::set<int> direct_callees;    // functions it calls directly (typed calls)
};

struct ModuleInfo {
  std::map<std::string, GlobalSymbol> globals;
  std::vector<FunctionInfo> functions;
  std::vector<Diagnostic> diagnostics;  // errors and warnings, in source order
  bool imports_torch = false;
  // What a bare `Buffer` annotation means in this check: the element type of
  // an element-generic function's specialization. The module is checked once
  // per element type; generic functions are lowered each time (compile.cpp).
  ElemType generic_elem = ElemType::kF64;
};

// Checks every top-level function of `module`, annotating the tree. Functions
// in `forced_fallbacks` (by index among the module's functions) run as Python
// for the reason given, as if they used an unsupported construct.
std::unique_ptr<ModuleInfo> CheckModule(ModuleSyntax& module,
                                        const std::map<int, std::string>& forced_fallbacks = {},
                                        ElemType generic_elem = ElemType::kF64);

// Parses an annotation. Returns an unknown type (and sets `error`) for one that
// names no type ppy knows how to hold.
Type TypeOfAnnotation(const Expr& annotation, const ModuleInfo& module, std::string* error);
// The index of a def's first parameter annotated `Buffer` alone (which makes
// the function element-generic), or -1.
int GenericParamOf(const FunctionDef& def, const ModuleInfo& module);

}  // namespace ppy
