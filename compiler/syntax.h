// The ppy syntax tree: the part of CPython's ast that ppy compiles, in C++.
//
// compiler/ast_reader.cpp builds it from the tree CPython's own parser returns,
// so the grammar, the positions and the SyntaxErrors are CPython's. Constructs
// ppy does not compile become Unsupported nodes that remember what they were, so
// that a function using one falls back to Python with a reason.
//
// The type checker annotates the tree in place (the fields under "filled by the
// checker"); the lowering reads those annotations and never re-derives them.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/types.h"

namespace ppy {

// A source range. Lines are 1-based; columns are 0-based UTF-8 byte offsets, as
// in CPython's ast.
struct Loc {
  int line = 0;
  int col = 0;
  int end_line = 0;
  int end_col = 0;
};

enum class BinOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kLShift, kRShift, kBitOr, kBitXor, kBitAnd, kMatMul };
enum class UnOp : uint8_t { kNeg, kPos, kInvert, kNot };
enum class CmpOp : uint8_t { kLt, kLe, kEq, kNe, kGt, kGe, kIs, kIsNot, kIn, kNotIn };

const char* SymbolOf(BinOp op);
const char* SymbolOf(CmpOp op);

enum class ExprKind : uint8_t {
  kInt,        // int_value
  kBigInt,     // an int literal beyond 64 bits: `object` holds it
  kFloat,      // float_value
  kBool,       // int_value 0 or 1
  kNone,
  kConstant,   // any other literal (str, bytes, complex, ...): `object`
  kName,       // text
  kAttribute,  // children[0].text
  kSubscript,  // children[0][children[1]]
  kSlice,      // children: lower, upper, step (each may be null)
  kCall,       // children[0](children[1..]) with keywords
  kBinary,     // children[0] bin_op children[1]
  kUnary,      // un_op children[0]
  kBoolOp,     // children joined by and (is_and) or or
  kCompare,    // children[0] cmp_ops[0] children[1] cmp_ops[1] ...
  kIfExp,      // children[1] if children[0] else children[2]
  kTuple,
  kList,
  kSet,
  kDict,       // children: key0, value0, key1, value1, ...
  kJoinedStr,  // children: constant strings and formatted values
  kFormatted,  // children[0] with conversion, children[1] the spec (a JoinedStr) or null
  kUnsupported,
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
  std::string name;  // empty for **kwargs
  ExprPtr value;
  Loc loc;
};

// How the checker resolved a name or a call.
enum class Resolution : uint8_t {
  kUnresolved,
  kLocal,          // a local variable or parameter
  kGlobal,         // a module global read dynamically
  kTypedGlobal,    // an annotated module constant
  kFunction,       // a compiled function of this module, called directly
  kBuiltin,        // a builtin the checker types (len, int, ...)
  kMath,           // a math function with a typed fast path
  kMathConstant,   // math.pi and friends, folded
  kModule,         // an imported module used as a namespace (math, ppy)
  kBufferShape,    // a.shape[k] of a buffer, k (a constant) in `index`
  kComplexPart,    // z.real (index 0) or z.imag (index 1) of a complex
  kConjugate,      // z.conjugate() of a complex
  kUnboxedCall,    // a call through the C API whose result type is known (cmath.sqrt): unboxed after
};

struct Expr {
  ExprKind kind = ExprKind::kUnsupported;
  Loc loc;
  int64_t int_value = 0;
  double float_value = 0.0;
  std::string text;
  PyObject* object = nullptr;  // owned
  BinOp bin_op = BinOp::kAdd;
  UnOp un_op = UnOp::kNeg;
  bool is_and = false;
  int conversion = 0;  // f-string conversion: 0 none, 1 !s, 2 !r, 3 !a
  std::vector<CmpOp> cmp_ops;
  std::vector<ExprPtr> children;
  std::vector<Keyword> keywords;

  // ---- filled by the checker ----
  Type type;
  Resolution resolution = Resolution::kUnresolved;
  int index = -1;           // local slot, function index, builtin or math id
  bool check_bound = false; // a local read that may come before any assignment
  // A typed call's argument for each parameter of the callee: k >= 1 is
  // children[k], k <= -1 is keywords[-k - 1], 0 is the parameter's default.
  std::vector<int> binding;

  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  ~Expr() { Py_XDECREF(object); }
};

enum class StmtKind : uint8_t {
  kExpr,       // value
  kAssign,     // targets = value
  kAnnAssign,  // targets[0]: annotation = value (value may be null)
  kAugAssign,  // targets[0] bin_op= value
  kReturn,     // value may be null
  kPass,
  kBreak,
  kContinue,
  kIf,         // test, body, orelse
  kWhile,      // test, body, orelse
  kFor,        // targets[0] in value: body, orelse
  kAssert,     // test, value (the message, may be null)
  kRaise,      // value (may be null for a bare raise)
  kGlobal,     // names
  kImport,     // names: (module, as-name) pairs
  kFunctionDef,
  kUnsupported,
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

// How a `for` statement iterates, as the checker decided. The counted forms
// name the builtin that the iterable calls; their operands (value's children
// from 1 on) are each a Buffer or a call of the builtin range with a literal
// step, and the loop counts instead of making an iterator.
enum class IterForm : uint8_t {
  kGeneral,    // range(...), a Buffer or any iterable object: see Lowering::For
  kEnumerate,     // for i, v in enumerate(X) or enumerate(X, start), start an int
  kEnumerateZip,  // for i, (a, b, ...) in enumerate(zip(X, Y, ...)[, start])
  kZip,           // for a, b, ... in zip(X, Y, ...), one target per operand
  kReversed,      // for v in reversed(X)
  kPrange,        // for i in ppy.prange(...): range()'s operands, parallel iterations (vm/prange.h)
};
struct FunctionDef;

struct Stmt {
  StmtKind kind = StmtKind::kUnsupported;
  Loc loc;
  std::vector<ExprPtr> targets;
  ExprPtr value;
  ExprPtr test;
  ExprPtr annotation;
  BinOp bin_op = BinOp::kAdd;
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> orelse;
  std::vector<std::pair<std::string, std::string>> names;
  std::unique_ptr<FunctionDef> function;
  std::string what;  // for kUnsupported: the construct, e.g. "a with statement"

  // ---- filled by the checker ----
  Type result_type;  // kAugAssign: the type of `target op value`
  IterForm iter_form = IterForm::kGeneral;  // kFor
  // kFor over ppy.prange: the locals the loop reduces, each with its
  // operation (a PrangeOp: +, *, min, max), in the order they appear.
  std::vector<std::pair<std::string, uint8_t>> prange_reductions;
};

// The targets of a counted `for` (enumerate or zip forms), one for each value
// a step yields, in the order Python assigns them: enumerate's count first,
// then one per operand (inside the nested tuple for kEnumerateZip).
inline std::vector<Expr*> CountedTargets(const Stmt& stmt) {
  std::vector<Expr*> targets;
  for (const ExprPtr& child : stmt.targets[0]->children) {
    if (stmt.iter_form == IterForm::kEnumerateZip && !targets.empty()) {
      for (const ExprPtr& inner : child->children) targets.push_back(inner.get());
    } else {
      targets.push_back(child.get());
    }
  }
  return targets;
}

enum class ParamKind : uint8_t { kPositionalOnly, kPositional, kKeywordOnly };

struct ParamSyntax {
  std::string name;
  ExprPtr annotation;  // may be null
  ExprPtr default_value;  // may be null
  ParamKind kind = ParamKind::kPositional;
  Loc loc;
};

struct FunctionDef {
  std::string name;
  Loc loc;          // the def line
  Loc name_loc;     // for diagnostics about the function as a whole
  std::vector<ParamSyntax> params;
  std::string star_params;  // "*args" or "**kwargs" when present: ppy does not compile those
  Loc star_loc;
  ExprPtr returns;  // may be null
  std::vector<ExprPtr> decorators;
  std::vector<StmtPtr> body;
  bool is_async = false;
  bool has_type_params = false;  // def f[T](...) (3.12+): generic, runs as Python
  Loc type_params_loc;
  PyObject* doc = nullptr;  // owned; the docstring or nullptr

  ~FunctionDef() { Py_XDECREF(doc); }
};

struct ModuleSyntax {
  std::vector<StmtPtr> body;
};

}  // namespace ppy
