#include "compiler/typecheck.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vm/math_table.h"

namespace ppy {
namespace {

constexpr const char* kBuiltinNames[] = {
#define PPY_BUILTIN_NAME(id, name) name,
    PPY_TYPED_BUILTINS(PPY_BUILTIN_NAME)
#undef PPY_BUILTIN_NAME
};

// The id of `name` among the builtins with typed forms (PPY_TYPED_BUILTINS:
// len, range, int, float, bool, abs, min, max, round, complex), or -1.
int BuiltinId(const std::string& name) {
  for (size_t i = 0; i < std::size(kBuiltinNames); ++i) {
    if (name == kBuiltinNames[i]) return static_cast<int>(i);
  }
  return -1;
}

// The math table entry for `name` called with `arity` arguments, or -1.
int MathId(const std::string& name, size_t arity) {
  for (int i = 0; i < kMathCount; ++i) {
    if (name != kMathInfo[i].name || !IsMathModuleFunction(i)) continue;
    size_t expected = kMathInfo[i].shape == MathShape::FF ? 2 : 1;
    if (expected == arity) return i;
  }
  return -1;
}

// Whether `name` is a function of the math module that ppy types.
bool IsMathName(const std::string& name) {
  for (int i = 0; i < kMathCount; ++i) {
    if (name == kMathInfo[i].name && IsMathModuleFunction(i)) return true;
  }
  return false;
}

// The value of a math module constant ppy folds (pi, e, tau, inf, nan), or
// nullptr. Folding is safe because typecheck proves the name still means the
// module's constant where it is read.
const double* MathConstant(const std::string& name) {
  for (const auto& constant : kMathConstants) {
    if (name == constant.name) return &constant.value;
  }
  return nullptr;
}

// The element type the ppy package exports under `name` (f64, i32, ...), or kNone.
ElemType ElemTypeNamed(const std::string& name) {
  for (int i = 1; i < kElemTypeCount; ++i) {
    if (name == InfoOf(static_cast<ElemType>(i)).name) return static_cast<ElemType>(i);
  }
  return ElemType::kNone;
}

// The last component of an annotation like `np.ndarray` or `list`, for messages.
const char* InternedClassName(const std::string& name) {
  static std::set<std::string>* names = new std::set<std::string>();
  return names->insert(name).first->c_str();
}

// Whether `expr` is a name bound at module level to `import ppy`.
bool IsPpyModule(const Expr& expr, const ModuleInfo& module) {
  if (expr.kind != ExprKind::kName) return false;
  auto it = module.globals.find(expr.text);
  return it != module.globals.end() && it->second.kind == GlobalSymbol::Kind::kModule &&
         it->second.module_name == "ppy";
}

// A name or attribute (`f32`, `ppy.f32`) that names something the ppy package
// exports; returns that name or "".
std::string PpyNameOf(const Expr& expr, const ModuleInfo& module) {
  if (expr.kind == ExprKind::kName) {
    auto it = module.globals.find(expr.text);
    if (it != module.globals.end() && it->second.kind == GlobalSymbol::Kind::kPpyName) return it->second.ppy_name;
    return "";
  }
  if (expr.kind == ExprKind::kAttribute && IsPpyModule(*expr.children[0], module)) return expr.text;
  return "";
}

// Whether `expr` is `torch.Tensor` (or `t.Tensor` for `import torch as t`):
// the annotation that makes a function a region candidate.
bool IsTorchTensor(const Expr& expr, const ModuleInfo& module) {
  if (expr.kind != ExprKind::kAttribute || expr.text != "Tensor") return false;
  const Expr& base = *expr.children[0];
  if (base.kind != ExprKind::kName) return false;
  auto it = module.globals.find(base.text);
  return it != module.globals.end() && it->second.kind == GlobalSymbol::Kind::kModule &&
         it->second.module_name == "torch";
}

}  // namespace

// See compiler/typecheck.h.
int GenericParamOf(const FunctionDef& def, const ModuleInfo& module) {
  for (size_t i = 0; i < def.params.size(); ++i) {
    const Expr* annotation = def.params[i].annotation.get();
    if (annotation != nullptr && (annotation->kind == ExprKind::kName || annotation->kind == ExprKind::kAttribute) &&
        PpyNameOf(*annotation, module) == "Buffer") {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// The type an annotation declares: int, float, bool and None are typed;
// Buffer[T] a buffer of T's element type (float is f64 and int i64, as
// Python's own float and int) and Buffer[T, n] one of n dimensions; Buffer
// alone the element type this check is for (ModuleInfo::generic_elem);
// torch.Tensor and any other class an object that remembers its class for
// messages. A string annotation is not evaluated (PEP 563 semantics would
// need the namespace), so it is dynamic. Misused ppy names (an element type
// as a value type, a bad dimension count) set `error`.
Type TypeOfAnnotation(const Expr& annotation, const ModuleInfo& module, std::string* error) {
  switch (annotation.kind) {
    case ExprKind::kNone: return Type::None();
    case ExprKind::kName: {
      const std::string& name = annotation.text;
      if (name == "int") return Type::Int();
      if (name == "float") return Type::Float();
      if (name == "bool") return Type::Bool();
      if (name == "complex") return Type::Complex();
      if (name == "None") return Type::None();
      std::string ppy_name = PpyNameOf(annotation, module);
      if (ppy_name == "Buffer") return Type::Buffer(module.generic_elem);  // element-generic
      if (!ppy_name.empty()) {
        *error = absl::StrCat("'", ppy_name, "' is an element type, not a value type: write Buffer[", ppy_name, "]");
        return Type::Unknown();
      }
      return Type::Object(InternedClassName(name));
    }
    case ExprKind::kAttribute:
      if (IsTorchTensor(annotation, module)) return Type::Object("torch.Tensor");
      if (PpyNameOf(annotation, module) == "Buffer") return Type::Buffer(module.generic_elem);  // element-generic
      return Type::Object(InternedClassName(annotation.text));
    case ExprKind::kSubscript: {
      const Expr& base = *annotation.children[0];
      if (PpyNameOf(base, module) != "Buffer") return Type::Object();
      // Buffer[T] is one-dimensional; Buffer[T, n] has n dimensions.
      const Expr* elem_expr = annotation.children[1].get();
      int ndim = 1;
      if (elem_expr->kind == ExprKind::kTuple) {
        const Expr& tuple = *elem_expr;
        if (tuple.children.size() != 2 || tuple.children[1]->kind != ExprKind::kInt ||
            tuple.children[1]->int_value < 1 || tuple.children[1]->int_value > kMaxDims) {
          *error = absl::StrCat("a Buffer's dimensions are a number from 1 to ", kMaxDims, ": Buffer[float, 2]");
          return Type::Unknown();
        }
        elem_expr = tuple.children[0].get();
        ndim = static_cast<int>(tuple.children[1]->int_value);
      }
      const Expr& elem = *elem_expr;
      if (elem.kind == ExprKind::kName && elem.text == "float") return Type::Buffer(ElemType::kF64, ndim);
      if (elem.kind == ExprKind::kName && elem.text == "int") return Type::Buffer(ElemType::kI64, ndim);
      if (elem.kind == ExprKind::kName && elem.text == "bool") return Type::Buffer(ElemType::kBool, ndim);
      std::string elem_name = PpyNameOf(elem, module);
      ElemType elem_type = ElemTypeNamed(elem_name);
      if (elem_type != ElemType::kNone) return Type::Buffer(elem_type, ndim);
      *error = "a Buffer's element type is float, int, bool, or one of ppy's f32, f64, i8..i64, u8..u64";
      return Type::Unknown();
    }
    case ExprKind::kConstant:
      // A string annotation is not evaluated by ppy; the value is dynamic.
      return Type::Object();
    default:
      return Type::Object();
  }
}

namespace {

// Whether a value can be stored into a buffer element, which converts it as the
// exporter would (array.array('d') stores float(1) for 1).
bool StorableIn(Type element, Type value) {
  if (element.is_float()) return value.is_numeric() || value.kind == TypeKind::kObject;
  // A bool element takes a bool: numpy would store any value's truth, a
  // memoryview refuses anything but a bool.
  if (element.kind == TypeKind::kBool) return value.kind == TypeKind::kBool;
  return value.is_integral() || value.kind == TypeKind::kObject;
}

// The error for a value StorableIn refuses.
std::string CannotStore(Type value, Type buffer) {
  std::string message = absl::StrCat("cannot store ", value.name(), " into ", buffer.name());
  if (buffer.elem == ElemType::kBool) absl::StrAppend(&message, " (a bool element takes a bool: `x != 0`)");
  return message;
}

// The dynamic result of mixing typed numbers (max(1, 2.5), `a if c else b`):
// CPython returns whichever operand it picks, so it is an int or a float, and it
// may be stored only where either would fit (an object), not in a float local.
Type MixedNumber(const std::vector<Type>& types) {
  bool has_float = std::any_of(types.begin(), types.end(), [](const Type& t) { return t.is_float(); });
  bool has_int = std::any_of(types.begin(), types.end(), [](const Type& t) { return t.is_int(); });
  return Type::Object(has_float && has_int ? "int or float" : has_float ? "float or bool" : "int or bool");
}

// ---- Definite assignment ---------------------------------------------------------------------

struct Flow {
  std::vector<bool> assigned;
  bool reachable = true;
};

// Definite assignment where two paths join: a local is assigned after the
// join only if it is on both paths; a path that cannot reach the join (it
// returned, raised, broke out) does not count.
Flow Merge(const Flow& a, const Flow& b) {
  if (!a.reachable) return b;
  if (!b.reachable) return a;
  Flow merged = a;
  for (size_t i = 0; i < merged.assigned.size(); ++i) merged.assigned[i] = a.assigned[i] && b.assigned[i];
  return merged;
}

class ModuleChecker;

class FunctionChecker {
 public:
  FunctionChecker(ModuleChecker& module, FunctionInfo& fn);
  void Run();
  // The first phase alone, for a function forced to fall back: whether it
  // must compile decides whether that is an error (compiler/compile.cpp).
  void ReadDecorators();

 private:
  // ---- Diagnostics ----
  void Error(const Loc& loc, std::string message);

  // ---- Phases ----
  bool FindUnsupported();
  bool FindUnsupportedIn(const std::vector<StmtPtr>& body);
  bool FindUnsupportedIn(const Expr* expr);
  void Fallback(const Loc& loc, const std::string& reason);
  void DeclareParams();
  void CollectLocals(const std::vector<StmtPtr>& body);
  void CollectTarget(const Expr& target, const Loc& loc);
  void DeclareLocal(const std::string& name, const Loc& loc);
  void InferLocalTypes();
  void InferBlock(std::vector<StmtPtr>& body);
  void InferTarget(Expr& target, Type type, const Loc& loc);
  void CheckBody();
  void DecideResult();

  // ---- Statements ----
  void CheckBlock(std::vector<StmtPtr>& body);
  void CheckStatement(Stmt& stmt);
  void CheckAssignTarget(Expr& target, Type value, const Loc& value_loc);
  void CheckAugAssign(Stmt& stmt);
  void CheckFor(Stmt& stmt);
  void CheckPrange(Stmt& stmt);
  IterForm CountedForm(Stmt& stmt, std::vector<Type>* elements);
  bool CountableOperand(Expr& operand, Type* element);
  bool IsBuiltinName(const Expr& expr, const char* name) const;
  bool IsRangeCall(const Expr& iter) const;
  void CheckLoopBody(Stmt& stmt, bool infinite);
  void AssignLocal(int slot);

  // ---- Expressions ----
 public:
  Type Check(Expr& expr);

 private:
  Type CheckInner(Expr& expr);
  Type CheckName(Expr& expr);
  Type CheckAttribute(Expr& expr);
  Type CheckSubscript(Expr& expr);
  void CheckNotBoolIndex(const Expr& index, const Type& index_type);
  bool CheckBufferIndex(const Type& base, Expr& index);
  Type CheckCall(Expr& expr);
  Type CheckTypedCall(Expr& expr, int function);
  Type CheckMathCall(Expr& expr, const std::string& name);
  Type CheckCmathCall(Expr& expr, const std::string& name);
  Type CheckBuiltinCall(Expr& expr, Builtin builtin);
  Type CheckDynamicCall(Expr& expr);
  Type CheckBinary(Expr& expr);
  Type CheckUnary(Expr& expr);
  Type CheckCompare(Expr& expr);
  Type BinaryType(BinOp op, Type left, Type right, const Expr* right_expr, const Loc& loc);
  bool Assignable(Type target, Type value) const;
  std::string CannotAssign(Type target, Type value) const;
  int LocalSlot(const std::string& name) const;
  bool IsLocal(const std::string& name) const { return LocalSlot(name) >= 0; }
  const GlobalSymbol* Global(const std::string& name) const;

  ModuleChecker& module_;
  ModuleInfo& info_;
  FunctionInfo& fn_;
  bool quiet_ = false;  // while inferring local types: no diagnostics
  Flow flow_;
  std::vector<std::vector<Flow>*> break_flows_;
  std::vector<std::pair<Type, Loc>> returns_;
  bool bare_return_ = false;
  int loop_depth_ = 0;
};

class ModuleChecker {
 public:
  ModuleChecker(ModuleSyntax& syntax, const std::map<int, std::string>& forced_fallbacks, ElemType generic_elem)
      : syntax_(syntax), info_(std::make_unique<ModuleInfo>()), forced_fallbacks_(forced_fallbacks) {
    info_->generic_elem = generic_elem;
  }

  // Checks the module: binds its global names, checks every function (callees
  // before callers where it can, for direct calls), revisits callers of
  // functions that ended up falling back, numbers the compiled functions in
  // source order, and sorts diagnostics by position.
  std::unique_ptr<ModuleInfo> Run() {
    ScanGlobals();
    state_.assign(info_->functions.size(), 0);
    for (size_t i = 0; i < info_->functions.size(); ++i) EnsureChecked(static_cast<int>(i));
    RecheckCallersOfFallbacks();
    int next = 0;
    for (FunctionInfo& fn : info_->functions) {
      if (fn.compiled) fn.code_index = next++;
    }
    std::stable_sort(info_->diagnostics.begin(), info_->diagnostics.end(),
                     [](const Diagnostic& a, const Diagnostic& b) {
                       return a.loc.line != b.loc.line ? a.loc.line < b.loc.line : a.loc.col < b.loc.col;
                     });
    return std::move(info_);
  }

  // Checks function `index` unless it has been; returns false while it is being
  // checked (a recursive call).
  bool EnsureChecked(int index) {
    if (state_[index] == 2) return true;
    if (state_[index] == 1) return false;
    state_[index] = 1;
    FunctionInfo& fn = info_->functions[index];
    auto forced = forced_fallbacks_.find(index);
    if (forced != forced_fallbacks_.end()) {
      FunctionChecker(*this, fn).ReadDecorators();
      fn.compiled = false;
      fn.fallback_reason = forced->second;
      fn.fallback_loc = fn.def->name_loc;
    } else {
      FunctionChecker(*this, fn).Run();
    }
    state_[index] = 2;
    return true;
  }

  ModuleInfo& info() { return *info_; }

  // Whether a call of module function `index` by name may be a typed CALL_FN:
  // it compiles (or is being checked, for recursion), has no other decorator,
  // and its name is never rebound, so the name always means this function
  // (CallModuleFunction still checks that at run time).
  bool DirectlyCallable(int index) const {
    const FunctionInfo& fn = info_->functions[index];
    bool compiles = state_[index] == 2 ? fn.compiled : fn.passes_scan;
    // An element-generic function is called through its Python-visible
    // object, which picks the specialization for the argument's element type.
    return compiles && !fn.other_decorators && !fn.rebound && !not_direct_.count(index) &&
           GenericParamOf(*fn.def, *info_) < 0;
  }

 private:
  // A recursive call may have been compiled as a direct call to a function that
  // later failed its check: check its callers again, calling it as an object.
  void RecheckCallersOfFallbacks() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t callee = 0; callee < info_->functions.size(); ++callee) {
        if (info_->functions[callee].compiled || not_direct_.count(callee)) continue;
        not_direct_.insert(static_cast<int>(callee));
        for (size_t caller = 0; caller < info_->functions.size(); ++caller) {
          FunctionInfo& fn = info_->functions[caller];
          if (!fn.direct_callees.count(static_cast<int>(callee))) continue;
          FunctionInfo fresh;
          fresh.def = fn.def;
          fresh.statement_index = fn.statement_index;
          fresh.name = fn.name;
          fresh.rebound = fn.rebound;
          fn = std::move(fresh);
          state_[caller] = 1;
          // Diagnostics of the first check would be reported twice.
          std::vector<Diagnostic> kept = std::move(info_->diagnostics);
          FunctionChecker(*this, fn).Run();
          info_->diagnostics = std::move(kept);
          state_[caller] = 2;
          changed = true;
        }
      }
    }
  }

  // Records what a module-level name means. A name bound twice to the same
  // thing keeps it; bound to two different things it becomes a plain dynamic
  // global (and a function bound so is `rebound`, never called directly), since
  // which binding a call sees depends on execution order.
  void Bind(const std::string& name, GlobalSymbol symbol) {
    auto it = info_->globals.find(name);
    if (it == info_->globals.end()) {
      info_->globals[name] = std::move(symbol);
      return;
    }
    GlobalSymbol& existing = it->second;
    bool same = existing.kind == symbol.kind &&
                ((existing.kind == GlobalSymbol::Kind::kTypedConstant && existing.type == symbol.type) ||
                 (existing.kind == GlobalSymbol::Kind::kModule && existing.module_name == symbol.module_name) ||
                 (existing.kind == GlobalSymbol::Kind::kPpyName && existing.ppy_name == symbol.ppy_name) ||
                 (existing.kind == GlobalSymbol::Kind::kMathFunction && existing.math_id == symbol.math_id)) &&
                existing.origin == symbol.origin;
    if (same) return;
    if (existing.kind == GlobalSymbol::Kind::kFunction) info_->functions[existing.function].rebound = true;
    if (symbol.kind == GlobalSymbol::Kind::kFunction) info_->functions[symbol.function].rebound = true;
    existing = GlobalSymbol{};
  }

  // Module-level assignment targets become dynamic globals.
  void BindTargets(const Expr* target) {
    if (target == nullptr) return;
    if (target->kind == ExprKind::kName) {
      Bind(target->text, GlobalSymbol{});
    } else if (target->kind == ExprKind::kTuple || target->kind == ExprKind::kList) {
      for (const ExprPtr& child : target->children) BindTargets(child.get());
    }
  }

  // `import a.b` binds `a` to module a; `import a.b as c` binds `c` to module
  // a.b, as Python binds them. Importing torch marks the module for regions.
  void BindImport(const Stmt& stmt) {
    for (const auto& [name, as_name] : stmt.names) {
      GlobalSymbol symbol;
      symbol.kind = GlobalSymbol::Kind::kModule;
      if (as_name.empty()) {
        symbol.module_name = name.substr(0, name.find('.'));
        Bind(symbol.module_name, symbol);
      } else {
        symbol.module_name = name;
        Bind(as_name, symbol);
      }
      if (name == "torch" || name.rfind("torch.", 0) == 0) info_->imports_torch = true;
    }
  }

  // `from m import x`: math constants and functions and ppy's names keep what
  // they are (so that math.sqrt and Buffer are recognized under any spelling);
  // anything else is a dynamic global. Names from torch remember their origin
  // for the region extractor.
  void BindImportFrom(const Stmt& stmt) {
    const std::string& module = stmt.names[0].first;
    for (size_t i = 1; i < stmt.names.size(); ++i) {
      const auto& [name, as_name] = stmt.names[i];
      const std::string& bound = as_name.empty() ? name : as_name;
      GlobalSymbol symbol;
      if (module == "math" && MathConstant(name)) {
        symbol.kind = GlobalSymbol::Kind::kMathConstant;
        symbol.value = *MathConstant(name);
      } else if (module == "math" && IsMathName(name)) {
        symbol.kind = GlobalSymbol::Kind::kMathFunction;
        symbol.ppy_name = name;
      } else if (module == "ppy") {
        symbol.kind = GlobalSymbol::Kind::kPpyName;
        symbol.ppy_name = name;
      }
      if (module == "torch" || module.rfind("torch.", 0) == 0) {
        info_->imports_torch = true;
        symbol.origin = module + "." + name;
      }
      Bind(bound, symbol);
    }
  }

  // Module-level bindings inside control flow are plain dynamic globals.
  void ScanNested(const std::vector<StmtPtr>& body) {
    for (const StmtPtr& stmt : body) {
      switch (stmt->kind) {
        case StmtKind::kAssign:
          for (const ExprPtr& target : stmt->targets) BindTargets(target.get());
          break;
        case StmtKind::kAnnAssign:
        case StmtKind::kAugAssign:
        case StmtKind::kFor:
          BindTargets(stmt->targets[0].get());
          break;
        case StmtKind::kFunctionDef: Bind(stmt->function->name, GlobalSymbol{}); break;
        case StmtKind::kImport:
          for (const auto& [name, as_name] : stmt->names) {
            Bind(as_name.empty() ? name.substr(0, name.find('.')) : as_name, GlobalSymbol{});
          }
          break;
        case StmtKind::kUnsupported:
          if (stmt->what == "from ... import") {
            for (size_t i = 1; i < stmt->names.size(); ++i) {
              const auto& [name, as_name] = stmt->names[i];
              Bind(as_name.empty() ? name : as_name, GlobalSymbol{});
            }
          } else if (stmt->what == "a class definition" && !stmt->names.empty()) {
            Bind(stmt->names[0].first, GlobalSymbol{});
          }
          break;
        default: break;
      }
      ScanNested(stmt->body);
      ScanNested(stmt->orelse);
    }
  }

  // The names a function's `global` statements declare, nested blocks included.
  void CollectGlobalDeclarations(const std::vector<StmtPtr>& body, std::set<std::string>* names) {
    for (const StmtPtr& stmt : body) {
      if (stmt->kind == StmtKind::kGlobal) {
        for (const auto& [name, unused] : stmt->names) names->insert(name);
      }
      CollectGlobalDeclarations(stmt->body, names);
      CollectGlobalDeclarations(stmt->orelse, names);
    }
  }

  // One pass over the module's top-level statements, binding every name they
  // define: defs, imports, annotated numeric constants (typed, read once per
  // call), and everything else as a dynamic global. Names declared `global` in
  // a function are dynamic too, since running that function may rebind them.
  void ScanGlobals() {
    for (size_t i = 0; i < syntax_.body.size(); ++i) {
      Stmt& stmt = *syntax_.body[i];
      switch (stmt.kind) {
        case StmtKind::kFunctionDef: {
          FunctionInfo fn;
          fn.def = stmt.function.get();
          fn.statement_index = static_cast<int>(i);
          fn.name = stmt.function->name;
          info_->functions.push_back(std::move(fn));
          GlobalSymbol symbol;
          symbol.kind = GlobalSymbol::Kind::kFunction;
          symbol.function = static_cast<int>(info_->functions.size()) - 1;
          Bind(stmt.function->name, symbol);
          break;
        }
        case StmtKind::kImport: BindImport(stmt); break;
        case StmtKind::kAnnAssign: {
          const Expr* target = stmt.targets[0].get();
          if (target->kind != ExprKind::kName) break;
          std::string error;
          Type type = TypeOfAnnotation(*stmt.annotation, *info_, &error);
          GlobalSymbol symbol;
          if (type.is_numeric()) {
            symbol.kind = GlobalSymbol::Kind::kTypedConstant;
            symbol.type = type;
          }
          Bind(target->text, symbol);
          break;
        }
        case StmtKind::kUnsupported:
          if (stmt.what == "from ... import") {
            BindImportFrom(stmt);
            break;
          }
          if (stmt.what == "a class definition" && !stmt.names.empty()) Bind(stmt.names[0].first, GlobalSymbol{});
          break;
        default: {
          switch (stmt.kind) {
            case StmtKind::kAssign:
              for (const ExprPtr& target : stmt.targets) BindTargets(target.get());
              break;
            case StmtKind::kAugAssign:
            case StmtKind::kFor:
              BindTargets(stmt.targets[0].get());
              break;
            default: break;
          }
          ScanNested(stmt.body);
          ScanNested(stmt.orelse);
          break;
        }
      }
    }
    // A function that declares a module function's name global may rebind it.
    // A name that only functions declare global is a dynamic global too: once
    // such a function has run, `range`, `enumerate` or `len` may be anything,
    // so no function may take it for the builtin.
    for (FunctionInfo& fn : info_->functions) {
      std::set<std::string> declared;
      CollectGlobalDeclarations(fn.def->body, &declared);
      for (const std::string& name : declared) {
        auto it = info_->globals.find(name);
        if (it == info_->globals.end()) {
          info_->globals[name] = GlobalSymbol{};
        } else if (it->second.kind == GlobalSymbol::Kind::kFunction) {
          info_->functions[it->second.function].rebound = true;
        }
      }
    }
  }

  ModuleSyntax& syntax_;
  std::unique_ptr<ModuleInfo> info_;
  std::vector<int> state_;
  std::set<int> not_direct_;
  const std::map<int, std::string>& forced_fallbacks_;
};

// ---- FunctionChecker ------------------------------------------------------------------------------

FunctionChecker::FunctionChecker(ModuleChecker& module, FunctionInfo& fn)
    : module_(module), info_(module.info()), fn_(fn) {}

// A type error at `loc`: reported (unless inferring quietly) and the function
// falls back to Python once its check ends, so that it still runs, as Python.
void FunctionChecker::Error(const Loc& loc, std::string message) {
  if (quiet_) return;
  fn_.has_type_errors = true;
  info_.diagnostics.push_back({Severity::kError, loc, std::move(message)});
}

// Marks the function as running as Python because of `reason` at `loc`; for
// a @ppy.native function, which must compile, that is an error.
void FunctionChecker::Fallback(const Loc& loc, const std::string& reason) {
  fn_.compiled = false;
  fn_.fallback_reason = reason;
  fn_.fallback_loc = loc;
  if (fn_.native_required) {
    info_.diagnostics.push_back({Severity::kError, loc,
                                 absl::StrCat(fn_.nogil ? "@ppy.nogil" : "@ppy.native", " function '", fn_.name,
                                              "' cannot be compiled: it uses ", reason)});
  }
}

// Decides whether the function compiles and types it, in phases: decorators,
// a scan for constructs the VM does not run, parameters, locals (collected,
// then their types inferred), the body, and the result type. Any type error
// makes the function fall back as a whole.
void FunctionChecker::Run() {
  ReadDecorators();
  if (FindUnsupported()) return;
  // Until its check ends, a function counts as compiled for the direct calls
  // recursion makes; ModuleChecker revisits callers if it turns out not to be.
  fn_.passes_scan = true;
  DeclareParams();
  CollectLocals(fn_.def->body);
  InferLocalTypes();
  CheckBody();
  DecideResult();
  if (fn_.has_type_errors) {
    fn_.compiled = false;
    fn_.fallback_reason = "type errors";
    fn_.fallback_loc = fn_.def->name_loc;
  } else {
    fn_.compiled = true;
  }
}

// @ppy.native requires the function to compile (a fallback becomes an
// error), and so does @ppy.nogil, which also marks it to release the GIL; any
// other decorator may replace the function, so calls by its name
// are never typed calls (DirectlyCallable).
void FunctionChecker::ReadDecorators() {
  for (const ExprPtr& decorator : fn_.def->decorators) {
    const std::string name = PpyNameOf(*decorator, info_);
    if (name == "native") {
      fn_.native_required = true;
    } else if (name == "nogil") {
      // Releasing the GIL needs compiled code: a nogil function must compile.
      fn_.native_required = true;
      fn_.nogil = true;
    } else {
      fn_.other_decorators = true;
    }
  }
}

// Whether `expr` contains a construct the reader left Unsupported (a lambda,
// a comprehension, ...); if so the function falls back, naming it.
bool FunctionChecker::FindUnsupportedIn(const Expr* expr) {
  if (expr == nullptr) return false;
  if (expr->kind == ExprKind::kUnsupported) {
    Fallback(expr->loc, expr->text);
    return true;
  }
  for (const ExprPtr& child : expr->children) {
    if (FindUnsupportedIn(child.get())) return true;
  }
  for (const Keyword& keyword : expr->keywords) {
    if (FindUnsupportedIn(keyword.value.get())) return true;
  }
  return false;
}

// Whether a statement of `body` is unsupported, or a nested def: a closure
// needs cells, which the VM does not have, so the enclosing function runs as
// Python.
bool FunctionChecker::FindUnsupportedIn(const std::vector<StmtPtr>& body) {
  for (const StmtPtr& stmt : body) {
    if (stmt->kind == StmtKind::kUnsupported) {
      Fallback(stmt->loc, stmt->what);
      return true;
    }
    if (stmt->kind == StmtKind::kFunctionDef) {
      Fallback(stmt->loc, "a nested function (a closure)");
      return true;
    }
    for (const ExprPtr& target : stmt->targets) {
      if (FindUnsupportedIn(target.get())) return true;
    }
    if (FindUnsupportedIn(stmt->value.get()) || FindUnsupportedIn(stmt->test.get())) return true;
    if (FindUnsupportedIn(stmt->body) || FindUnsupportedIn(stmt->orelse)) return true;
  }
  return false;
}

// Whether the function uses what the VM does not run: async def, type
// parameters, *args or **kwargs, or an unsupported construct in its body.
// Then it falls back as a whole, before anything is typed.
bool FunctionChecker::FindUnsupported() {
  const FunctionDef& def = *fn_.def;
  if (def.is_async) {
    Fallback(def.loc, "async def");
    return true;
  }
  if (def.has_type_params) {
    Fallback(def.type_params_loc, "type parameters (def f[T])");
    return true;
  }
  if (!def.star_params.empty()) {
    Fallback(def.star_loc, absl::StrCat("a variadic parameter (", def.star_params, ")"));
    return true;
  }
  return FindUnsupportedIn(def.body);
}

// The parameters become the first locals, typed by their annotations (an
// unannotated parameter, or one annotated None, takes any object, as Python
// checks nothing at a call). A Buffer result annotation is the exporting
// object, since a view is only borrowed for the call.
void FunctionChecker::DeclareParams() {
  fn_.generic_param = GenericParamOf(*fn_.def, info_);
  for (const ParamSyntax& param : fn_.def->params) {
    LocalVariable local;
    local.name = param.name;
    local.is_param = true;
    local.first_assignment = param.loc;
    if (param.annotation) {
      std::string error;
      local.type = TypeOfAnnotation(*param.annotation, info_, &error);
      if (!error.empty()) Error(param.annotation->loc, error);
      if (local.type.kind == TypeKind::kNone) local.type = Type::Object();
    } else {
      local.type = Type::Object();
    }
    if (!local.type.is_known()) local.type = Type::Object();
    fn_.local_index[param.name] = static_cast<int>(fn_.locals.size());
    fn_.param_types.push_back(local.type);
    fn_.locals.push_back(std::move(local));
  }
  if (fn_.def->returns) {
    std::string error;
    fn_.result = TypeOfAnnotation(*fn_.def->returns, info_, &error);
    fn_.result_annotated = true;
    if (!error.empty()) Error(fn_.def->returns->loc, error);
    // A buffer is borrowed for the call only; what a function returns is the
    // exporting object, as in Python.
    if (fn_.result.is_buffer()) fn_.result = Type::Object();
    if (!fn_.result.is_known()) fn_.result = Type::Object();
  }
}

// Makes `name` a local, first assigned at `loc`, unless it is one already or
// is declared global: Python decides locality per function, by whether the
// name is bound anywhere in it.
void FunctionChecker::DeclareLocal(const std::string& name, const Loc& loc) {
  if (fn_.declared_global.count(name) || fn_.local_index.count(name)) return;
  LocalVariable local;
  local.name = name;
  local.first_assignment = loc;
  fn_.local_index[name] = static_cast<int>(fn_.locals.size());
  fn_.locals.push_back(std::move(local));
}

// The names an assignment target binds (through tuple and list unpacking).
void FunctionChecker::CollectTarget(const Expr& target, const Loc& loc) {
  if (target.kind == ExprKind::kName) {
    DeclareLocal(target.text, loc);
  } else if (target.kind == ExprKind::kTuple || target.kind == ExprKind::kList) {
    for (const ExprPtr& child : target.children) CollectTarget(*child, loc);
  }
}

// Every name the body binds is a local of the whole function, as in Python
// (assignments, annotations, augmented assignments, for targets, imports),
// except names declared `global` anywhere in it. An annotation fixes the
// local's type; annotating a name global, or annotating a local twice with
// different types, is an error, as in CPython.
void FunctionChecker::CollectLocals(const std::vector<StmtPtr>& body) {
  // `global` applies to the whole function, so collect those names first.
  std::function<void(const std::vector<StmtPtr>&)> globals = [&](const std::vector<StmtPtr>& stmts) {
    for (const StmtPtr& stmt : stmts) {
      if (stmt->kind == StmtKind::kGlobal) {
        for (const auto& [name, unused] : stmt->names) fn_.declared_global.insert(name);
      }
      globals(stmt->body);
      globals(stmt->orelse);
    }
  };
  globals(body);
  std::function<void(const std::vector<StmtPtr>&)> walk = [&](const std::vector<StmtPtr>& stmts) {
    for (const StmtPtr& stmt : stmts) {
      switch (stmt->kind) {
        case StmtKind::kAssign:
          for (const ExprPtr& target : stmt->targets) CollectTarget(*target, stmt->loc);
          break;
        case StmtKind::kAnnAssign: {
          const Expr& target = *stmt->targets[0];
          if (target.kind != ExprKind::kName) break;
          if (fn_.declared_global.count(target.text)) {
            Error(stmt->loc, absl::StrCat("annotated name '", target.text, "' can't be global"));
            break;
          }
          DeclareLocal(target.text, stmt->loc);
          std::string error;
          Type type = TypeOfAnnotation(*stmt->annotation, info_, &error);
          const Expr& annotation = *stmt->annotation;
          if (type.is_buffer() && fn_.generic_param < 0 &&
              (annotation.kind == ExprKind::kName || annotation.kind == ExprKind::kAttribute)) {
            error = "Buffer alone is the element type of an element-generic function's Buffer parameter, "
                    "and this function has none: write Buffer[float], Buffer[f32], ...";
          }
          if (!error.empty()) {
            Error(stmt->annotation->loc, error);
            break;
          }
          if (type.kind == TypeKind::kNone) type = Type::Object();
          LocalVariable& local = fn_.locals[fn_.local_index[target.text]];
          if (local.type.is_known() && local.type != type) {
            Error(stmt->annotation->loc, absl::StrCat("'", target.text, "' is annotated ", local.type.name(),
                                                      " already; cannot annotate it ", type.name()));
          } else {
            local.type = type;
            local.annotated = true;
            local.first_assignment = stmt->loc;
          }
          break;
        }
        case StmtKind::kAugAssign:
        case StmtKind::kFor: CollectTarget(*stmt->targets[0], stmt->loc); break;
        case StmtKind::kImport:
          for (const auto& [name, as_name] : stmt->names) {
            DeclareLocal(as_name.empty() ? name.substr(0, name.find('.')) : as_name, stmt->loc);
          }
          break;
        default: break;
      }
      walk(stmt->body);
      walk(stmt->orelse);
    }
  };
  walk(body);
}

// The type of an unannotated local that holds values of types `a` and `b`:
// the one type if they agree, else a dynamic value (an object register), which
// holds whatever Python would: `s = 0` then `s += 0.5` makes `s` an int and
// then a float, as in CPython, where a typed register could hold neither both
// kinds nor a bool where an int was (they print differently).
static bool SameLocalType(Type a, Type b) {
  if (a != b) return false;
  if (a.kind != TypeKind::kObject || a.known_class == b.known_class) return true;
  return a.known_class != nullptr && b.known_class != nullptr && std::strcmp(a.known_class, b.known_class) == 0;
}

// The joined type of two assignments to an unannotated local: unknown joins
// to the other, equal types stay, anything else is dynamic (see above).
static Type JoinLocalTypes(Type a, Type b) {
  if (!a.is_known()) return b;
  if (!b.is_known() || SameLocalType(a, b)) return a;
  return Type::Object();
}

// Joins the type of one assignment (`type`, at `loc`) into the local `target`
// names. Annotated locals and parameters keep their annotation: assigning
// them something else is CheckAssignTarget's error.
void FunctionChecker::InferTarget(Expr& target, Type type, const Loc& loc) {
  if (target.kind == ExprKind::kName) {
    int slot = LocalSlot(target.text);
    if (slot < 0 || !type.is_known()) return;
    LocalVariable& local = fn_.locals[slot];
    if (local.is_param || local.annotated) return;
    // `x = None` starts an optional value: the local holds any object.
    if (type.kind == TypeKind::kNone) type = Type::Object();
    if (!local.type.is_known()) {
      local.type = type;
      local.first_type = type;
      local.first_assignment = loc;
      return;
    }
    Type joined = JoinLocalTypes(local.type, type);
    if (!SameLocalType(joined, local.type) && !local.conflict_type.is_known()) {
      local.conflict = loc;
      local.conflict_type = type;
    }
    local.type = joined;
  } else if (target.kind == ExprKind::kTuple || target.kind == ExprKind::kList) {
    for (ExprPtr& child : target.children) InferTarget(*child, type.is_known() ? Type::Object() : type, loc);
  }
}

// One round of inference over `body`: each assignment joins the type of its
// value into the locals it binds (`a, b = x, y` item by item), a for target
// the element type of what it iterates (int for range, the element for a
// buffer, an object for anything else), `s op= x` the operator's result type,
// and an import a module object.
void FunctionChecker::InferBlock(std::vector<StmtPtr>& body) {
  for (StmtPtr& stmt : body) {
    switch (stmt->kind) {
      case StmtKind::kAssign: {
        Expr& value = *stmt->value;
        if (stmt->targets.size() == 1 && (stmt->targets[0]->kind == ExprKind::kTuple || stmt->targets[0]->kind == ExprKind::kList) &&
            (value.kind == ExprKind::kTuple || value.kind == ExprKind::kList) &&
            value.children.size() == stmt->targets[0]->children.size()) {
          for (size_t i = 0; i < value.children.size(); ++i) {
            InferTarget(*stmt->targets[0]->children[i], Check(*value.children[i]), stmt->loc);
          }
        } else {
          Type type = Check(value);
          for (ExprPtr& target : stmt->targets) InferTarget(*target, type, stmt->loc);
        }
        break;
      }
      case StmtKind::kFor: {
        Expr& iter = *stmt->value;
        const bool is_range = IsRangeCall(iter);
        std::vector<Type> elements;
        if (CountedForm(*stmt, &elements) != IterForm::kGeneral) {
          Expr& target = *stmt->targets[0];
          if (stmt->iter_form == IterForm::kReversed) {
            InferTarget(target, elements[0], stmt->loc);
          } else {
            std::vector<Expr*> targets = CountedTargets(*stmt);
            for (size_t i = 0; i < targets.size(); ++i) InferTarget(*targets[i], elements[i], stmt->loc);
          }
        } else if (is_range) {
          InferTarget(*stmt->targets[0], Type::Int(), stmt->loc);
        } else {
          Type type = Check(iter);
          if (type.is_buffer() && type.ndim == 1) InferTarget(*stmt->targets[0], type.element(), stmt->loc);
          else if (type.is_known()) InferTarget(*stmt->targets[0], Type::Object(), stmt->loc);
        }
        break;
      }
      case StmtKind::kAugAssign: {
        // `s += x` assigns s the operator's result: an int local that meets
        // a float (or an object) becomes dynamic.
        Expr& target = *stmt->targets[0];
        int slot = target.kind == ExprKind::kName ? LocalSlot(target.text) : -1;
        if (slot < 0 || !fn_.locals[slot].type.is_known()) break;
        Type value = Check(*stmt->value);
        if (!value.is_known()) break;
        InferTarget(target, BinaryType(stmt->bin_op, fn_.locals[slot].type, value, stmt->value.get(), stmt->loc),
                    stmt->loc);
        break;
      }
      case StmtKind::kImport:
        for (const auto& [name, as_name] : stmt->names) {
          int slot = LocalSlot(as_name.empty() ? name.substr(0, name.find('.')) : as_name);
          if (slot >= 0 && !fn_.locals[slot].type.is_known()) fn_.locals[slot].type = Type::Object("module");
        }
        break;
      default: break;
    }
    InferBlock(stmt->body);
    InferBlock(stmt->orelse);
  }
}

// Infers every unannotated local's type (see the comment inside).
void FunctionChecker::InferLocalTypes() {
  quiet_ = true;
  // An unannotated local's type joins the types of all its assignments
  // (JoinLocalTypes). An assignment can depend on a local typed later in the
  // text (inside a loop), so repeat until nothing changes. A type only moves
  // up, from unknown to one type to dynamic, so the rounds are bounded.
  const size_t rounds = 2 * fn_.locals.size() + 2;
  for (size_t round = 0; round < rounds; ++round) {
    std::vector<Type> before;
    for (const LocalVariable& local : fn_.locals) before.push_back(local.type);
    InferBlock(fn_.def->body);
    bool changed = false;
    for (size_t i = 0; i < fn_.locals.size(); ++i) changed = changed || !SameLocalType(fn_.locals[i].type, before[i]);
    if (!changed) break;
  }
  quiet_ = false;
  for (LocalVariable& local : fn_.locals) {
    if (!local.type.is_known()) {
      Error(local.first_assignment,
            absl::StrCat("cannot infer the type of '", local.name, "' from its first assignment; annotate it"));
      local.type = Type::Object();
    }
  }
}

// Definite assignment: local `slot` is assigned on the current path.
void FunctionChecker::AssignLocal(int slot) {
  if (slot >= 0 && slot < static_cast<int>(flow_.assigned.size())) flow_.assigned[slot] = true;
}

// Types the body with definite assignment: parameters are assigned on entry,
// every other local only once a path assigns it (a read before that gets an
// UnboundLocalError check, as Python raises one).
void FunctionChecker::CheckBody() {
  flow_.assigned.assign(fn_.locals.size(), false);
  for (size_t i = 0; i < fn_.locals.size(); ++i) {
    if (fn_.locals[i].is_param) flow_.assigned[i] = true;
  }
  CheckBlock(fn_.def->body);
}

// The result type. An annotated numeric result must be returned on every
// path: a typed register has no None to fall off with. An unannotated
// function returns the one type all its returns agree on, else a dynamic
// object (as Python returns whichever value it got), None if it never
// returns a value.
void FunctionChecker::DecideResult() {
  bool falls_off = flow_.reachable;
  if (fn_.result_annotated) {
    Type result = fn_.result;
    if (result.kind != TypeKind::kNone && !result.is_object() && (falls_off || bare_return_)) {
      Error(fn_.def->name_loc, absl::StrCat("'", fn_.name, "' is annotated to return ", result.name(),
                                            " but can end without returning a value"));
    }
    return;
  }
  // Inferred: the one type every return agrees on; None paths or a mixture
  // make it a dynamic object, as Python would return whichever it got.
  Type result = Type::None();
  bool first = true;
  for (const auto& [type, loc] : returns_) {
    if (first) {
      result = type;
      first = false;
    } else if (result != type) {
      result = Type::Object();
    }
  }
  if (!returns_.empty() && (falls_off || bare_return_) && result.kind != TypeKind::kNone) result = Type::Object();
  if (result.is_buffer()) result = Type::Object();
  fn_.result = result;
}

// ---- Statements ----------------------------------------------------------------------------------

// Types each statement of a block in order, carrying the flow state.
void FunctionChecker::CheckBlock(std::vector<StmtPtr>& body) {
  for (StmtPtr& stmt : body) CheckStatement(*stmt);
}

// Types one statement and moves the flow state: a return, raise, break or
// continue makes the rest of the block unreachable; `if` merges what each
// branch assigned; a return's value must be assignable to an annotated result
// (the message suggests float(...) or int(...) where Python's value would
// print differently); raising a number is an error, as CPython's TypeError
// "exceptions must derive from BaseException".
void FunctionChecker::CheckStatement(Stmt& stmt) {
  switch (stmt.kind) {
    case StmtKind::kExpr: Check(*stmt.value); break;
    case StmtKind::kAssign: {
      Expr& value = *stmt.value;
      Expr& first = *stmt.targets[0];
      if (stmt.targets.size() == 1 && (first.kind == ExprKind::kTuple || first.kind == ExprKind::kList) &&
          (value.kind == ExprKind::kTuple || value.kind == ExprKind::kList) &&
          value.children.size() == first.children.size()) {
        // Parallel assignment: every value is evaluated before any target.
        std::vector<Type> types;
        for (ExprPtr& child : value.children) types.push_back(Check(*child));
        value.type = Type::Object("tuple");
        for (size_t i = 0; i < types.size(); ++i) CheckAssignTarget(*first.children[i], types[i], value.children[i]->loc);
      } else {
        Type type = Check(value);
        for (ExprPtr& target : stmt.targets) CheckAssignTarget(*target, type, value.loc);
      }
      break;
    }
    case StmtKind::kAnnAssign:
      if (stmt.value) {
        Type type = Check(*stmt.value);
        CheckAssignTarget(*stmt.targets[0], type, stmt.value->loc);
      }
      break;
    case StmtKind::kAugAssign: CheckAugAssign(stmt); break;
    case StmtKind::kReturn: {
      if (stmt.value) {
        Type type = Check(*stmt.value);
        if (fn_.result_annotated && !Assignable(fn_.result, type)) {
          std::string hint = fn_.result.is_float() && type.is_integral() ? " (write float(...) or a float literal)"
                             : fn_.result.is_int() && type.is_bool()   ? " (write int(...))"
                                                                       : "";
          Error(stmt.value->loc, absl::StrCat("'", fn_.name, "' is annotated to return ", fn_.result.name(),
                                              " but this returns ", type.name(), hint));
        }
        returns_.emplace_back(type, stmt.loc);
      } else {
        bare_return_ = true;
      }
      flow_.reachable = false;
      break;
    }
    case StmtKind::kPass: break;
    case StmtKind::kBreak:
      if (!break_flows_.empty()) break_flows_.back()->push_back(flow_);
      flow_.reachable = false;
      break;
    case StmtKind::kContinue: flow_.reachable = false; break;
    case StmtKind::kIf: {
      Check(*stmt.test);
      Flow before = flow_;
      CheckBlock(stmt.body);
      Flow after_body = flow_;
      flow_ = before;
      CheckBlock(stmt.orelse);
      flow_ = Merge(after_body, flow_);
      break;
    }
    case StmtKind::kWhile: {
      Check(*stmt.test);
      bool infinite = (stmt.test->kind == ExprKind::kBool && stmt.test->int_value == 1) ||
                      (stmt.test->kind == ExprKind::kInt && stmt.test->int_value != 0);
      CheckLoopBody(stmt, infinite);
      break;
    }
    case StmtKind::kFor: CheckFor(stmt); break;
    case StmtKind::kAssert:
      Check(*stmt.test);
      if (stmt.value) Check(*stmt.value);
      break;
    case StmtKind::kRaise: {
      Type type = Check(*stmt.value);
      if (!type.is_object()) Error(stmt.value->loc, "exceptions must derive from BaseException");
      flow_.reachable = false;
      break;
    }
    case StmtKind::kGlobal: break;
    case StmtKind::kImport:
      for (const auto& [name, as_name] : stmt.names) {
        AssignLocal(LocalSlot(as_name.empty() ? name.substr(0, name.find('.')) : as_name));
      }
      break;
    case StmtKind::kFunctionDef:
    case StmtKind::kUnsupported: break;  // excluded by FindUnsupported
  }
}

// Types a loop's body and else block for definite assignment: the body may
// run no times, so after the loop a local is assigned only if it was before
// (or, after the else block, on that path), and each break carries what its
// path had assigned. `while True` is left only by break.
void FunctionChecker::CheckLoopBody(Stmt& stmt, bool infinite) {
  Flow before = flow_;
  std::vector<Flow> breaks;
  break_flows_.push_back(&breaks);
  ++loop_depth_;
  CheckBlock(stmt.body);
  --loop_depth_;
  break_flows_.pop_back();
  // The body may run no times (unless the loop is `while True`), and every
  // break leaves with what it had assigned.
  flow_ = infinite ? Flow{before.assigned, false} : before;
  if (!infinite) {
    CheckBlock(stmt.orelse);
  }
  for (const Flow& exit : breaks) flow_ = Merge(flow_, exit);
}

// Types a for loop: the counted forms (enumerate, zip, reversed over buffers
// and ranges), range() with one to three int arguments (a float argument is
// CPython's TypeError), a buffer (its elements), or any object; assigning
// the element to the target must type-check like an assignment.
void FunctionChecker::CheckFor(Stmt& stmt) {
  Expr& iter = *stmt.value;
  Expr& target = *stmt.targets[0];
  const bool is_prange = iter.kind == ExprKind::kCall && PpyNameOf(*iter.children[0], info_) == "prange";
  const bool is_range = IsRangeCall(iter);
  Type element;
  std::vector<Type> elements;  // for a counted form: what each target gets
  if (!is_prange && CountedForm(stmt, &elements) != IterForm::kGeneral) {
    // Checked by CountedForm.
  } else if (is_range) {
    if (is_prange) {
      stmt.iter_form = IterForm::kPrange;
      CheckPrange(stmt);
    }
    size_t count = iter.children.size() - 1;
    if (count < 1 || count > 3 || !iter.keywords.empty()) {
      Error(iter.loc, "range() takes 1 to 3 positional arguments");
    }
    for (size_t i = 1; i < iter.children.size(); ++i) {
      Type type = Check(*iter.children[i]);
      if (!type.is_integral() && !type.is_object()) {
        Error(iter.children[i]->loc, absl::StrCat("'", type.name(), "' object cannot be interpreted as an integer"));
      }
    }
    iter.resolution = Resolution::kBuiltin;
    iter.index = static_cast<int>(Builtin::kRANGE);
    iter.type = Type::Object("range");
    element = Type::Int();
  } else {
    Type type = Check(iter);
    if (type.is_buffer() && type.ndim > 1) {
      Error(iter.loc, absl::StrCat("iterating a ", type.name(), " would give its rows, which are not elements: ",
                                   "loop over range(a.shape[0]) and index a[i, j]"));
      element = Type::Object();
    } else if (type.is_buffer()) {
      element = type.element();
    } else if (type.is_object()) {
      element = Type::Object();
    } else {
      Error(iter.loc, absl::StrCat("'", type.name(), "' object is not iterable"));
      element = Type::Object();
    }
  }
  // The targets of a counted form each get their own typed value; any other
  // target gets the element (unpacked as objects, for a tuple).
  auto assign_targets = [&] {
    if (stmt.iter_form == IterForm::kGeneral || stmt.iter_form == IterForm::kReversed ||
        stmt.iter_form == IterForm::kPrange) {
      CheckAssignTarget(target, stmt.iter_form == IterForm::kReversed ? elements[0] : element, iter.loc);
      return;
    }
    std::vector<Expr*> targets = CountedTargets(stmt);
    for (size_t i = 0; i < targets.size(); ++i) CheckAssignTarget(*targets[i], elements[i], iter.loc);
  };
  if (target.kind == ExprKind::kName || target.kind == ExprKind::kTuple || target.kind == ExprKind::kList) {
    // The target is assigned at the top of every iteration.
    Flow before = flow_;
    assign_targets();
    Flow with_target = flow_;
    flow_ = with_target;
    std::vector<Flow> breaks;
    break_flows_.push_back(&breaks);
    ++loop_depth_;
    CheckBlock(stmt.body);
    --loop_depth_;
    break_flows_.pop_back();
    flow_ = before;
    CheckBlock(stmt.orelse);
    for (const Flow& exit : breaks) flow_ = Merge(flow_, exit);
  } else {
    assign_targets();
    CheckLoopBody(stmt, false);
  }
}

namespace {

// Whether `expr` reads the name `name` anywhere.
bool Reads(const Expr* expr, const std::string& name) {
  if (expr == nullptr) return false;
  if (expr->kind == ExprKind::kName && expr->text == name) return true;
  for (const ExprPtr& child : expr->children) {
    if (Reads(child.get(), name)) return true;
  }
  for (const Keyword& keyword : expr->keywords) {
    if (Reads(keyword.value.get(), name)) return true;
  }
  return false;
}

// An assignment in a prange loop's body, as the loop's reductions see it.
struct PrangeAssignment {
  const Stmt* stmt;
  int op;  // a PrangeOp for a reduction's form, -1 for any other assignment
};

// `x += e`, `x -= e`, `x *= e`, `x = min(x, e)` and `x = max(x, e)` (either
// operand order: CheckPrange refuses min(e, x) and max(e, x) for a float)
// with e not reading x: the reduction forms, as PrangeOp.
int ReductionForm(const Stmt& stmt, const std::string& name,
                  const std::function<bool(const Expr&, const char*)>& is_builtin) {
  if (stmt.kind == StmtKind::kAugAssign) {
    if (Reads(stmt.value.get(), name)) return -1;
    if (stmt.bin_op == BinOp::kAdd || stmt.bin_op == BinOp::kSub) return static_cast<int>(PrangeOp::kAdd);
    if (stmt.bin_op == BinOp::kMul) return static_cast<int>(PrangeOp::kMul);
    return -1;
  }
  if (stmt.kind != StmtKind::kAssign || stmt.targets.size() != 1) return -1;
  const Expr& call = *stmt.value;
  if (call.kind != ExprKind::kCall || call.children.size() != 3 || !call.keywords.empty()) return -1;
  const bool is_min = is_builtin(*call.children[0], "min");
  if (!is_min && !is_builtin(*call.children[0], "max")) return -1;
  const Expr& first = *call.children[1];
  const Expr& second = *call.children[2];
  const bool is_first = first.kind == ExprKind::kName && first.text == name && !Reads(&second, name);
  const bool is_second = second.kind == ExprKind::kName && second.text == name && !Reads(&first, name);
  if (!is_first && !is_second) return -1;
  return static_cast<int>(is_min ? PrangeOp::kMin : PrangeOp::kMax);
}

// Collects the body's assignments to names (by name), and its reads of
// names outside their own statements' reduction forms (by name, the first);
// and reports `return` and a `break` of the prange loop itself.
using IsBuiltin = std::function<bool(const Expr&, const char*)>;
void CollectPrangeBody(const std::vector<StmtPtr>& body, int depth, const IsBuiltin& is_builtin,
                       std::map<std::string, std::vector<PrangeAssignment>>* assigned,
                       std::vector<std::pair<const Expr*, const Stmt*>>* reads, std::vector<const Stmt*>* escapes) {
  auto collect_reads = [&](const Expr* expr, const Stmt* stmt, auto& self) -> void {
    if (expr == nullptr) return;
    if (expr->kind == ExprKind::kName) reads->push_back({expr, stmt});
    for (const ExprPtr& child : expr->children) self(child.get(), stmt, self);
    for (const Keyword& keyword : expr->keywords) self(keyword.value.get(), stmt, self);
  };
  auto assign_targets = [&](const Expr& target, const Stmt& stmt, auto& self) -> void {
    if (target.kind == ExprKind::kName) {
      (*assigned)[target.text].push_back({&stmt, -1});
    } else if (target.kind == ExprKind::kTuple || target.kind == ExprKind::kList) {
      for (const ExprPtr& child : target.children) self(*child, stmt, self);
    } else {
      collect_reads(&target, &stmt, collect_reads);  // a[i] = ..., o.x = ...
    }
  };
  for (const StmtPtr& owned : body) {
    const Stmt& stmt = *owned;
    switch (stmt.kind) {
      case StmtKind::kReturn: escapes->push_back(&stmt); break;
      case StmtKind::kBreak:
        if (depth == 0) escapes->push_back(&stmt);
        break;
      case StmtKind::kAugAssign:
      case StmtKind::kAssign:
      case StmtKind::kAnnAssign: {
        const Expr& target = *stmt.targets[0];
        if (stmt.targets.size() == 1 && target.kind == ExprKind::kName) {
          const int op = ReductionForm(stmt, target.text, is_builtin);
          (*assigned)[target.text].push_back({&stmt, op});
          if (stmt.kind == StmtKind::kAugAssign && op < 0) reads->push_back({&target, &stmt});
        } else {
          for (const ExprPtr& each : stmt.targets) assign_targets(*each, stmt, assign_targets);
        }
        collect_reads(stmt.value.get(), &stmt, collect_reads);
        break;
      }
      case StmtKind::kFor:
        assign_targets(*stmt.targets[0], stmt, assign_targets);
        collect_reads(stmt.value.get(), &stmt, collect_reads);
        break;
      default:
        for (const ExprPtr& target : stmt.targets) collect_reads(target.get(), &stmt, collect_reads);
        collect_reads(stmt.value.get(), &stmt, collect_reads);
        break;
    }
    collect_reads(stmt.test.get(), &stmt, collect_reads);
    const bool loop = stmt.kind == StmtKind::kFor || stmt.kind == StmtKind::kWhile;
    CollectPrangeBody(stmt.body, depth + (loop ? 1 : 0), is_builtin, assigned, reads, escapes);
    CollectPrangeBody(stmt.orelse, depth, is_builtin, assigned, reads, escapes);
  }
}

}  // namespace

// A `for` over ppy.prange: its iterations run in parallel (vm/prange.h), so
// the loop cannot return or break, and each local it assigns is either
// private to an iteration (assigned some other way than below: the last
// iteration's value is what the loop leaves) or a reduction: every
// assignment of it in the loop is `x += e`, `x -= e`, `x *= e`, `x = min(x, e)`
// or `x = max(x, e)`, of one operation (+ and - are both sums), x is an int
// or a float, and the loop reads it nowhere else (inside the loop it holds
// one chunk's partial value). Records the reductions in the statement for
// the lowering. Anything the loop does that needs the GIL is found after
// lowering (compiler/compile.cpp).
void FunctionChecker::CheckPrange(Stmt& stmt) {
  stmt.prange_reductions.clear();
  if (stmt.targets[0]->kind != ExprKind::kName) {
    Error(stmt.targets[0]->loc, "a prange loop's target must be a name");
  }
  std::map<std::string, std::vector<PrangeAssignment>> assigned;
  std::vector<std::pair<const Expr*, const Stmt*>> reads;
  std::vector<const Stmt*> escapes;
  const IsBuiltin is_builtin = [this](const Expr& expr, const char* name) { return IsBuiltinName(expr, name); };
  CollectPrangeBody(stmt.body, 0, is_builtin, &assigned, &reads, &escapes);
  for (const Stmt* escape : escapes) {
    Error(escape->loc, escape->kind == StmtKind::kReturn
                           ? "a prange loop cannot return: its iterations run in parallel"
                           : "a prange loop cannot break: its iterations run in parallel");
  }
  // Reductions first appear where they are first assigned.
  std::vector<std::pair<Loc, std::string>> order;
  for (const auto& [name, assignments] : assigned) order.push_back({assignments[0].stmt->loc, name});
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return x.first.line != y.first.line ? x.first.line < y.first.line : x.first.col < y.first.col;
  });
  for (const auto& [loc, name] : order) {
    const std::vector<PrangeAssignment>& assignments = assigned[name];
    const int op = assignments[0].op;
    bool all_reductions = op >= 0;
    for (const PrangeAssignment& assignment : assignments) all_reductions &= assignment.op >= 0;
    if (!all_reductions) continue;  // private to each iteration
    for (const PrangeAssignment& assignment : assignments) {
      if (assignment.op != op) {
        Error(assignment.stmt->loc, absl::StrCat("'", name, "' is reduced with two different operations in a prange loop"));
        return;
      }
    }
    const int slot = LocalSlot(name);
    const Type type = slot >= 0 ? fn_.locals[slot].type : Type::Object();
    if (!type.is_int() && !type.is_float()) {
      Error(loc, absl::StrCat("the prange loop reduces '", name, "', which must be an int or a float, not ",
                              type.name()));
      continue;
    }
    // A float min or max must name the reduction first, as `max(x, e)`:
    // Python's max(e, x) keeps the later of equal values (0.0 and -0.0) and
    // restarts after a NaN, which no combination of chunks' partials can
    // reproduce. (For ints, equal values are the same value.)
    if (type.is_float() && (op == static_cast<int>(PrangeOp::kMin) || op == static_cast<int>(PrangeOp::kMax))) {
      const char* function = op == static_cast<int>(PrangeOp::kMin) ? "min" : "max";
      for (const PrangeAssignment& assignment : assignments) {
        const Expr& first = *assignment.stmt->value->children[1];
        if (first.kind != ExprKind::kName || first.text != name) {
          Error(assignment.stmt->value->loc,
                absl::StrCat("the prange loop reduces the float '", name, "' as ", function, "(e, ", name, "): write ",
                             function, "(", name, ", e), whose result chunks can combine to (", function, "(e, ",
                             name, ") keeps the later of equal values, such as 0.0 and -0.0, and restarts after a NaN)"));
          break;
        }
      }
    }
    for (const auto& [read, in] : reads) {
      if (read->text != name) continue;
      // The operand x of its own min/max form is the reduction itself.
      if (in->kind == StmtKind::kAssign && in->targets[0]->text == name && ReductionForm(*in, name, is_builtin) >= 0) {
        continue;
      }
      Error(read->loc, absl::StrCat("the prange loop reads '", name, "', which it reduces: inside the loop it holds ",
                                    "a partial value (read it after the loop)"));
      break;
    }
    stmt.prange_reductions.push_back({name, static_cast<uint8_t>(op)});
  }
}

// Whether a for loop's iterable is a call of the builtin range, or of
// ppy.prange, whose operands are range()'s: the target is an int.
bool FunctionChecker::IsRangeCall(const Expr& iter) const {
  if (iter.kind != ExprKind::kCall) return false;
  return IsBuiltinName(*iter.children[0], "range") || PpyNameOf(*iter.children[0], info_) == "prange";
}

// Whether `expr` names the builtin `name`: no local, no `global` declaration
// and no module-level binding shadows it (as for `range` above), so the call
// is Python's own.
bool FunctionChecker::IsBuiltinName(const Expr& expr, const char* name) const {
  return expr.kind == ExprKind::kName && expr.text == name && !IsLocal(expr.text) &&
         !fn_.declared_global.count(expr.text) && Global(expr.text) == nullptr;
}

namespace {

// The value of an int literal, possibly negated (`2`, `-1`), in *value.
bool LiteralInt(const Expr& expr, int64_t* value) {
  if (expr.kind == ExprKind::kInt) {
    *value = expr.int_value;
    return true;
  }
  if (expr.kind == ExprKind::kUnary && expr.un_op == UnOp::kNeg && expr.children[0]->kind == ExprKind::kInt &&
      expr.children[0]->int_value > INT64_MIN) {
    *value = -expr.children[0]->int_value;
    return true;
  }
  return false;
}

}  // namespace

// Whether an operand of enumerate, zip or reversed can be counted, and what
// iterating it yields in *element (Unknown while a local's type is still being
// inferred). It can be a Buffer, or a call of the builtin range with int
// arguments whose step, if any, is a nonzero literal: the loop then knows the
// step's sign and can advance without ever overflowing (see ForCounted).
bool FunctionChecker::CountableOperand(Expr& operand, Type* element) {
  if (operand.kind == ExprKind::kCall && IsBuiltinName(*operand.children[0], "range")) {
    size_t count = operand.children.size() - 1;
    int64_t step = 1;
    if (count < 1 || count > 3 || !operand.keywords.empty()) return false;
    if (count == 3 && (!LiteralInt(*operand.children[3], &step) || step == 0)) return false;
    *element = Type::Int();
    for (size_t i = 1; i < operand.children.size(); ++i) {
      Type type = Check(*operand.children[i]);
      if (!type.is_known() && quiet_) *element = Type::Unknown();
      else if (!type.is_integral()) return false;
    }
    operand.resolution = Resolution::kBuiltin;
    operand.index = static_cast<int>(Builtin::kRANGE);
    operand.type = Type::Object("range");
    return true;
  }
  Type type = Check(operand);
  const bool elements = type.is_buffer() && type.ndim == 1;
  *element = elements ? type.element() : Type::Unknown();
  return elements || (!type.is_known() && quiet_);
}

// Decides whether `for targets in iter` is one of the counted forms (see
// IterForm) and records it in stmt.iter_form: iter calls the builtin
// enumerate, zip or reversed (or enumerate of a call of zip) with no keyword
// but enumerate's start, every operand is countable, and the targets unpack exactly what each step
// yields (a tuple of plain targets, one per value), so that no step can fail
// the way a mismatched unpacking would in Python. *elements gets the type of
// each target's value. Anything else stays kGeneral and iterates as Python
// objects, which is always right.
IterForm FunctionChecker::CountedForm(Stmt& stmt, std::vector<Type>* elements) {
  stmt.iter_form = IterForm::kGeneral;
  elements->clear();
  Expr& iter = *stmt.value;
  Expr& target = *stmt.targets[0];
  if (iter.kind != ExprKind::kCall) return IterForm::kGeneral;
  auto plain = [](const Expr& expr) {
    return expr.kind == ExprKind::kName || expr.kind == ExprKind::kSubscript || expr.kind == ExprKind::kAttribute;
  };
  auto unpacks_into = [&](const Expr& tuple, size_t count) {
    if (tuple.kind != ExprKind::kTuple && tuple.kind != ExprKind::kList) return false;
    if (tuple.children.size() != count) return false;
    return std::all_of(tuple.children.begin(), tuple.children.end(), [&](const ExprPtr& child) { return plain(*child); });
  };
  auto unpacks = [&](size_t count) { return unpacks_into(target, count); };
  const Expr& callee = *iter.children[0];
  size_t count = iter.children.size() - 1;
  IterForm form = IterForm::kGeneral;
  if (IsBuiltinName(callee, "enumerate")) {
    // enumerate(X), enumerate(X, start) or enumerate(X, start=start).
    bool keyword_start = iter.keywords.size() == 1 && iter.keywords[0].name == "start";
    if (!(count == 2 && iter.keywords.empty()) && !(count == 1 && (iter.keywords.empty() || keyword_start))) {
      return IterForm::kGeneral;
    }
    Expr& operand = *iter.children[1];
    bool nested_zip = operand.kind == ExprKind::kCall && IsBuiltinName(*operand.children[0], "zip") &&
                      operand.children.size() >= 3 && operand.keywords.empty();
    std::vector<Type> operand_elements;
    if (nested_zip) {
      // enumerate(zip(X, Y, ...)): the targets are `i, (a, b, ...)`.
      bool shaped = (target.kind == ExprKind::kTuple || target.kind == ExprKind::kList) &&
                    target.children.size() == 2 && plain(*target.children[0]) &&
                    unpacks_into(*target.children[1], operand.children.size() - 1);
      if (!shaped) return IterForm::kGeneral;
      for (size_t i = 1; i < operand.children.size(); ++i) {
        Type element;
        if (!CountableOperand(*operand.children[i], &element)) return IterForm::kGeneral;
        operand_elements.push_back(element);
      }
      operand.type = Type::Object();
    } else {
      if (!unpacks(2)) return IterForm::kGeneral;
      Type element;
      if (!CountableOperand(operand, &element)) return IterForm::kGeneral;
      operand_elements.push_back(element);
    }
    if (count == 2 || keyword_start) {
      // Only an int start: a bool or an object start would need Python's own
      // rules for the first value it yields.
      Type start = Check(count == 2 ? *iter.children[2] : *iter.keywords[0].value);
      if (!start.is_int() && (start.is_known() || !quiet_)) return IterForm::kGeneral;
    }
    elements->push_back(Type::Int());
    elements->insert(elements->end(), operand_elements.begin(), operand_elements.end());
    form = nested_zip ? IterForm::kEnumerateZip : IterForm::kEnumerate;
  } else if (IsBuiltinName(callee, "zip")) {
    // zip(X, Y, ...) with no strict= keyword: its length check raises.
    if (count < 2 || !iter.keywords.empty() || !unpacks(count)) return IterForm::kGeneral;
    for (size_t i = 1; i <= count; ++i) {
      Type element;
      if (!CountableOperand(*iter.children[i], &element)) return IterForm::kGeneral;
      elements->push_back(element);
    }
    form = IterForm::kZip;
  } else if (IsBuiltinName(callee, "reversed")) {
    if (count != 1 || !iter.keywords.empty() || !plain(target)) return IterForm::kGeneral;
    Type element;
    if (!CountableOperand(*iter.children[1], &element)) return IterForm::kGeneral;
    elements->push_back(element);
    form = IterForm::kReversed;
  } else {
    return IterForm::kGeneral;
  }
  iter.type = Type::Object();
  stmt.iter_form = form;
  return form;
}

// Checks storing a value of type `value` into `target` and resolves it: a
// local must accept the type (its annotation, or its first assignment's type
// for an inferred one); a `global` name stores an object (a Buffer cannot
// escape the call that borrowed it); a buffer element takes a number its
// element can hold (a slice of a buffer, only an object); items and
// attributes of objects take anything; tuple and list targets unpack.
void FunctionChecker::CheckAssignTarget(Expr& target, Type value, const Loc& value_loc) {
  switch (target.kind) {
    case ExprKind::kName: {
      int slot = LocalSlot(target.text);
      if (slot < 0) {
        // A `global` name: stored as an object.
        target.resolution = Resolution::kGlobal;
        target.type = value;
        if (value.is_buffer()) Error(value_loc, "a Buffer cannot be stored in a global: buffers are borrowed");
        return;
      }
      LocalVariable& local = fn_.locals[slot];
      target.resolution = Resolution::kLocal;
      target.index = slot;
      target.type = local.type;
      if (!Assignable(local.type, value)) {
        Error(value_loc, absl::StrCat(CannotAssign(local.type, value), " '", local.name, "' (", local.type.name(),
                                      local.is_param ? ", its annotation" :
                                      absl::StrCat(", from its first assignment at line ", local.first_assignment.line),
                                      ")"));
      }
      AssignLocal(slot);
      return;
    }
    case ExprKind::kSubscript: {
      Type base = Check(*target.children[0]);
      Expr& index = *target.children[1];
      if (base.is_buffer()) {
        if (!CheckBufferIndex(base, index)) {  // a slice or a row: the exporter's item assignment
          target.type = Type::Object();
          return;
        }
        if (!StorableIn(base.element(), value)) {
          Error(value_loc, CannotStore(value, base));
        }
        target.type = base.element();
      } else if (base.is_object()) {
        Check(index);
        target.type = Type::Object();
      } else {
        Error(target.children[0]->loc, absl::StrCat("'", base.name(), "' object does not support item assignment"));
      }
      return;
    }
    case ExprKind::kAttribute: {
      Type base = Check(*target.children[0]);
      if (!base.is_object()) {
        Error(target.children[0]->loc, absl::StrCat("cannot set attribute '", target.text, "' of ", base.name()));
      }
      return;
    }
    case ExprKind::kTuple:
    case ExprKind::kList:
      if (!value.is_object()) {
        Error(value_loc, absl::StrCat("cannot unpack non-iterable ", value.name(), " object"));
      }
      for (ExprPtr& child : target.children) CheckAssignTarget(*child, Type::Object(), value_loc);
      return;
    default: Error(target.loc, "cannot assign to this expression"); return;
  }
}

// Checks `target op= value`: the operator's result type must be assignable
// back to the target (an int local cannot take `+= 0.5`, since it would become
// a float, which its register cannot hold); buffer elements and object items
// and attributes are read, combined and stored as the plain forms are.
void FunctionChecker::CheckAugAssign(Stmt& stmt) {
  Expr& target = *stmt.targets[0];
  Type value = Check(*stmt.value);
  switch (target.kind) {
    case ExprKind::kName: {
      int slot = LocalSlot(target.text);
      if (slot < 0) {
        // A global: read, combine and store as objects.
        Check(target);
        target.resolution = Resolution::kGlobal;
        return;
      }
      Type current = CheckName(target);
      target.type = current;
      Type result = BinaryType(stmt.bin_op, current, value, stmt.value.get(), stmt.loc);
      stmt.result_type = result;
      if (result.is_known() && !Assignable(current, result)) {
        LocalVariable& local = fn_.locals[slot];
        Error(stmt.loc, absl::StrCat("'", local.name, "' is ", local.type.name(),
                                     local.is_param ? " (its annotation)" : absl::StrCat(" (from its first assignment at line ",
                                                                                        local.first_assignment.line, ")"),
                                     "; ", SymbolOf(stmt.bin_op), "= makes it ", result.name()));
      }
      AssignLocal(slot);
      return;
    }
    case ExprKind::kSubscript: {
      Type base = Check(*target.children[0]);
      Expr& index = *target.children[1];
      if (base.is_buffer()) {
        if (!CheckBufferIndex(base, index)) {
          Error(index.loc, "buffer indices must be integers, one per dimension");
          return;
        }
        Type element = base.element();
        target.type = element;
        Type result = BinaryType(stmt.bin_op, element, value, stmt.value.get(), stmt.loc);
        stmt.result_type = result;
        if (result.is_known() && !StorableIn(element, result)) {
          Error(stmt.loc, CannotStore(result, base));
        }
      } else if (base.is_object()) {
        Check(index);
        target.type = Type::Object();
      } else {
        Check(index);
        Error(target.children[0]->loc, absl::StrCat("'", base.name(), "' object is not subscriptable"));
      }
      return;
    }
    case ExprKind::kAttribute: {
      Type base = Check(*target.children[0]);
      if (!base.is_object()) Error(target.loc, absl::StrCat("cannot set attribute '", target.text, "' of ", base.name()));
      target.type = Type::Object();
      return;
    }
    default: Error(target.loc, "illegal expression for augmented assignment"); return;
  }
}

// ---- Expressions ----------------------------------------------------------------------------------

// The local slot of `name`, or -1 for a name that is not a local.
int FunctionChecker::LocalSlot(const std::string& name) const {
  auto it = fn_.local_index.find(name);
  return it == fn_.local_index.end() ? -1 : it->second;
}

// What the module binds `name` to, or nullptr when the module does not bind it
// (then it is a builtin, or a NameError at run time, as in Python).
const GlobalSymbol* FunctionChecker::Global(const std::string& name) const {
  auto it = info_.globals.find(name);
  return it == info_.globals.end() ? nullptr : &it->second;
}

// Whether a value of type `value` may be stored in a slot (a local, a result)
// of type `target`. Typed values keep their exact Python type: an int is never
// silently a float, nor a bool an int, because CPython would keep the int (and
// print it as one). A dynamic value is unboxed, with a check, when its class
// could be the target's.
bool FunctionChecker::Assignable(Type target, Type value) const {
  if (!target.is_known() || !value.is_known()) return true;
  if (target.is_object()) return true;  // typed values box; a buffer is its exporting object
  auto dynamic_could_be = [&](const char* name) {
    return value.kind == TypeKind::kObject && (!value.known_class || std::strcmp(value.known_class, name) == 0);
  };
  switch (target.kind) {
    case TypeKind::kInt: return value.is_int() || dynamic_could_be("int");
    case TypeKind::kFloat: return value.is_float() || dynamic_could_be("float");
    case TypeKind::kBool: return value.is_bool() || dynamic_could_be("bool");
    case TypeKind::kComplex: return value.is_complex() || dynamic_could_be("complex");
    // A dynamic value is borrowed at run time, checked as a parameter is.
    case TypeKind::kBuffer: return (value.is_buffer() && value == target) || value.is_object();
    default: return false;
  }
}

// The start of the message for assigning `value` where `target` is needed,
// with the conversion that would make it type-check (int(...) truncates a
// float as Python's int() does; float(...) of an int).
std::string FunctionChecker::CannotAssign(Type target, Type value) const {
  if (target.is_integral() && value.is_float()) return "cannot assign float (write int(...) to truncate it) to";
  if (target.is_float() && value.is_integral()) {
    return absl::StrCat("cannot assign ", value.name(), " (write float(...) or a float literal) to");
  }
  if (target.is_int() && value.is_bool()) return "cannot assign bool (write int(...) to convert it) to";
  if (target.is_complex() && value.is_numeric()) {
    return absl::StrCat("cannot assign ", value.name(), " (write complex(...) or a complex literal such as 0j) to");
  }
  if (target.is_numeric() && value.known_class != nullptr && std::strstr(value.known_class, " or ") != nullptr) {
    return absl::StrCat("cannot assign ", value.name(), " (convert it with ", target.name(), "(...)) to");
  }
  return absl::StrCat("cannot assign ", value.name(), " to");
}

// Types `expr` and its subexpressions, recording the type on the node for the
// lowering; returns it.
Type FunctionChecker::Check(Expr& expr) {
  Type type = CheckInner(expr);
  expr.type = type;
  return type;
}

// The type of one expression by its kind. Literals have their own types (an
// int literal beyond 64 bits is an object int); `a or b` and `a if c else b`
// are one of their operands, as in Python, so they have a type only if the
// operands agree (a mixture of numbers is a dynamic number); displays and
// f-strings are objects of their class.
Type FunctionChecker::CheckInner(Expr& expr) {
  switch (expr.kind) {
    case ExprKind::kInt: return Type::Int();
    case ExprKind::kBigInt: return Type::Object("int");
    case ExprKind::kFloat: return Type::Float();
    case ExprKind::kBool: return Type::Bool();
    case ExprKind::kNone: return Type::None();
    case ExprKind::kConstant: return expr.type.is_known() ? expr.type : Type::Object();
    case ExprKind::kName: return CheckName(expr);
    case ExprKind::kAttribute: return CheckAttribute(expr);
    case ExprKind::kSubscript: return CheckSubscript(expr);
    case ExprKind::kSlice:
      for (ExprPtr& child : expr.children) {
        if (child) Check(*child);
      }
      return Type::Object("slice");
    case ExprKind::kCall: return CheckCall(expr);
    case ExprKind::kBinary: return CheckBinary(expr);
    case ExprKind::kUnary: return CheckUnary(expr);
    case ExprKind::kBoolOp: {
      // `a or b` is a or b itself, not a bool: one type if they agree.
      std::vector<Type> types;
      for (ExprPtr& child : expr.children) types.push_back(Check(*child));
      for (const Type& type : types) {
        if (!type.is_known()) return Type::Unknown();
      }
      bool same = std::all_of(types.begin(), types.end(), [&](const Type& t) { return t == types[0]; });
      if (same && (types[0].is_numeric() || types[0].kind == TypeKind::kObject)) return types[0];
      bool numeric = std::all_of(types.begin(), types.end(), [](const Type& t) { return t.is_numeric(); });
      return numeric ? MixedNumber(types) : Type::Object();
    }
    case ExprKind::kCompare: return CheckCompare(expr);
    case ExprKind::kIfExp: {
      Check(*expr.children[0]);
      Type body = Check(*expr.children[1]);
      Type orelse = Check(*expr.children[2]);
      if (!body.is_known() || !orelse.is_known()) return Type::Unknown();
      if (body == orelse && body.kind != TypeKind::kNone) return body;
      if (body.is_numeric() && orelse.is_numeric()) return MixedNumber({body, orelse});
      return Type::Object();
    }
    case ExprKind::kTuple:
    case ExprKind::kList:
    case ExprKind::kSet:
    case ExprKind::kDict:
      for (ExprPtr& child : expr.children) Check(*child);
      return Type::Object(expr.kind == ExprKind::kTuple  ? "tuple"
                          : expr.kind == ExprKind::kList ? "list"
                          : expr.kind == ExprKind::kSet  ? "set"
                                                         : "dict");
    case ExprKind::kJoinedStr:
      for (ExprPtr& child : expr.children) Check(*child);
      return Type::Object("str");
    case ExprKind::kFormatted:
      Check(*expr.children[0]);
      if (expr.children[1]) Check(*expr.children[1]);
      return Type::Object("str");
    case ExprKind::kUnsupported: return Type::Unknown();
  }
  return Type::Unknown();
}

// Resolves a name by Python's scoping: a local (with an UnboundLocalError
// check where a path may read it before any assignment), a typed module
// constant (read once per call), a folded math constant, else a global or
// builtin looked up at run time.
Type FunctionChecker::CheckName(Expr& expr) {
  int slot = LocalSlot(expr.text);
  if (slot >= 0) {
    expr.resolution = Resolution::kLocal;
    expr.index = slot;
    LocalVariable& local = fn_.locals[slot];
    if (!quiet_ && flow_.reachable && !flow_.assigned[slot]) {
      expr.check_bound = true;
      local.needs_bound_check = true;
    } else {
      expr.check_bound = false;
    }
    return local.type;
  }
  const GlobalSymbol* symbol = Global(expr.text);
  if (symbol != nullptr && !fn_.declared_global.count(expr.text)) {
    switch (symbol->kind) {
      case GlobalSymbol::Kind::kTypedConstant: {
        expr.resolution = Resolution::kTypedGlobal;
        if (!quiet_) {
          auto& used = fn_.typed_globals;
          if (std::none_of(used.begin(), used.end(), [&](const auto& entry) { return entry.first == expr.text; })) {
            used.emplace_back(expr.text, symbol->type);
          }
          for (size_t i = 0; i < used.size(); ++i) {
            if (used[i].first == expr.text) expr.index = static_cast<int>(i);
          }
        }
        return symbol->type;
      }
      case GlobalSymbol::Kind::kMathConstant:
        expr.resolution = Resolution::kMathConstant;
        expr.float_value = symbol->value;
        return Type::Float();
      default: break;
    }
  }
  expr.resolution = Resolution::kGlobal;
  return Type::Object();
}

// `math.pi` and the other math constants fold to floats when `math` is the
// module; any other attribute is an object, read through the C API.
Type FunctionChecker::CheckAttribute(Expr& expr) {
  Expr& base = *expr.children[0];
  if (base.kind == ExprKind::kName && !IsLocal(base.text)) {
    const GlobalSymbol* symbol = Global(base.text);
    if (symbol && symbol->kind == GlobalSymbol::Kind::kModule && symbol->module_name == "math") {
      if (const double* value = MathConstant(expr.text)) {
        expr.resolution = Resolution::kMathConstant;
        expr.float_value = *value;
        return Type::Float();
      }
    }
  }
  Type type = Check(base);
  if (!type.is_known()) return Type::Unknown();
  if (type.is_complex() && (expr.text == "real" || expr.text == "imag")) {
    expr.resolution = Resolution::kComplexPart;
    expr.index = expr.text == "real" ? 0 : 1;
    return Type::Float();
  }
  return Type::Object();
}

// A bool indexing a buffer means different things to different exporters:
// array.array, bytearray and memoryview read it as 0 or 1, numpy and torch as a
// mask (all elements or none). Compiled code cannot know the exporter, so a
// bool-typed index is an error (the function runs as Python, which does what
// the exporter does) with the spelling that says which one was meant.
void FunctionChecker::CheckNotBoolIndex(const Expr& index, const Type& index_type) {
  if (!index_type.is_bool()) return;
  Error(index.loc,
        "a bool as a buffer index (numpy and torch read it as a mask, array.array as 0 or 1): "
        "write int(...) for an element");
}

// The index of a buffer subscript: for an element, one integer per dimension
// (a[i] for Buffer[T], a[i, j] for Buffer[T, 2]). Anything else (a slice, a
// row a[i] of a 2-D buffer, a[i, :]) is the exporter's business: the
// subscript runs on the object, so it means what it means in Python. Returns
// whether the subscript is an element (and types the indices).
bool FunctionChecker::CheckBufferIndex(const Type& base, Expr& index) {
  auto check_one = [&](Expr& one) {
    Type type = Check(one);
    if (!type.is_integral() && !type.is_object() && type.is_known()) {
      Error(one.loc, absl::StrCat("buffer indices must be integers, not ", type.name()));
    }
    CheckNotBoolIndex(one, type);
  };
  if (base.ndim == 1) {
    if (index.kind == ExprKind::kSlice) {
      Check(index);
      return false;
    }
    check_one(index);
    return true;
  }
  bool element = index.kind == ExprKind::kTuple && index.children.size() == base.ndim;
  for (size_t i = 0; element && i < index.children.size(); ++i) {
    element = index.children[i]->kind != ExprKind::kSlice;
  }
  if (!element) {
    Check(index);
    return false;
  }
  for (ExprPtr& one : index.children) check_one(*one);
  index.type = Type::Object();  // the tuple itself is never built
  return true;
}

// `base[index]`: a buffer indexed by one integer per dimension has the
// element's type (a float index is CPython's TypeError, a bool index an
// error, see above); a slice or a row is the exporter's object; a.shape[k]
// of a buffer, k a constant, is an int; an object's item is an object; a
// number is not subscriptable, as CPython says.
Type FunctionChecker::CheckSubscript(Expr& expr) {
  // a.shape[k] of an N-d buffer, k a constant: an int.
  Expr& shape = *expr.children[0];
  int64_t k = 0;
  if (shape.kind == ExprKind::kAttribute && shape.text == "shape" && shape.children[0]->kind == ExprKind::kName &&
      LiteralInt(*expr.children[1], &k)) {
    Type owner = Check(*shape.children[0]);
    if (owner.is_buffer() && k >= -owner.ndim && k < owner.ndim) {
      expr.resolution = Resolution::kBufferShape;
      expr.index = static_cast<int>(k < 0 ? k + owner.ndim : k);
      shape.type = Type::Object();
      return Type::Int();
    }
  }
  Type base = Check(*expr.children[0]);
  Expr& index = *expr.children[1];
  if (base.is_buffer()) return CheckBufferIndex(base, index) ? base.element() : Type::Object();
  Check(index);
  if (!base.is_known()) return Type::Unknown();
  if (base.is_object()) return Type::Object();
  Error(expr.children[0]->loc, absl::StrCat("'", base.name(), "' object is not subscriptable"));
  return Type::Object();
}

// Resolves a call: a module function that is directly callable becomes a
// typed call (checking the callee first, so its result type is known, except
// within recursion, where an annotated result suffices); math functions and
// the typed builtins have their own rules; anything else is a dynamic call.
// A local or a `global` name shadows all of these, as in Python.
Type FunctionChecker::CheckCall(Expr& expr) {
  Expr& callee = *expr.children[0];
  expr.resolution = Resolution::kUnresolved;
  if (callee.kind == ExprKind::kName && !IsLocal(callee.text) && !fn_.declared_global.count(callee.text)) {
    const GlobalSymbol* symbol = Global(callee.text);
    if (symbol != nullptr) {
      if (symbol->kind == GlobalSymbol::Kind::kFunction) {
        bool ready = module_.EnsureChecked(symbol->function);
        const FunctionInfo& callee_info = info_.functions[symbol->function];
        if (module_.DirectlyCallable(symbol->function) && (ready || callee_info.result_annotated)) {
          fn_.direct_callees.insert(symbol->function);
          return CheckTypedCall(expr, symbol->function);
        }
      } else if (symbol->kind == GlobalSymbol::Kind::kMathFunction) {
        return CheckMathCall(expr, symbol->ppy_name);
      }
    } else {
      int builtin = BuiltinId(callee.text);
      if (builtin >= 0) return CheckBuiltinCall(expr, static_cast<Builtin>(builtin));
    }
  }
  if (callee.kind == ExprKind::kAttribute && callee.children[0]->kind == ExprKind::kName &&
      !IsLocal(callee.children[0]->text)) {
    const GlobalSymbol* symbol = Global(callee.children[0]->text);
    if (symbol && symbol->kind == GlobalSymbol::Kind::kModule && symbol->module_name == "math") {
      return CheckMathCall(expr, callee.text);
    }
    if (symbol && symbol->kind == GlobalSymbol::Kind::kModule && symbol->module_name == "cmath") {
      return CheckCmathCall(expr, callee.text);
    }
  }
  Type result = CheckDynamicCall(expr);
  if (callee.kind == ExprKind::kAttribute && callee.text == "conjugate" && expr.children.size() == 1 &&
      expr.keywords.empty() && callee.children[0]->type.is_complex()) {
    expr.resolution = Resolution::kConjugate;
    return Type::Complex();
  }
  return result;
}

// A function of the cmath module, called through CPython (its special values
// and errors are its own), with the complex arguments boxed; the result is
// unboxed to the type the function always returns: complex, a float (phase),
// a bool (isnan, isinf, isfinite, isclose), or an object (polar's tuple).
Type FunctionChecker::CheckCmathCall(Expr& expr, const std::string& name) {
  Type result = CheckDynamicCall(expr);
  static const char* const kComplexResults[] = {"sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin",
                                                "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                                                "rect"};
  for (const char* function : kComplexResults) {
    if (name == function) result = Type::Complex();
  }
  if (name == "phase") result = Type::Float();
  if (name == "isnan" || name == "isinf" || name == "isfinite" || name == "isclose") result = Type::Bool();
  if (!result.is_object()) expr.resolution = Resolution::kUnboxedCall;
  return result;
}

// A call through the C API: the callee and the arguments are typed for their
// own sake and the result is an object. Calling a number is CPython's
// TypeError "'int' object is not callable".
Type FunctionChecker::CheckDynamicCall(Expr& expr) {
  Expr& callee = *expr.children[0];
  if (callee.kind == ExprKind::kAttribute) {
    // A method call: the object is evaluated (and boxed) once.
    Check(*callee.children[0]);
    callee.type = Type::Object();
  } else {
    Type type = Check(callee);
    if (type.is_known() && !type.is_object()) {
      Error(callee.loc, absl::StrCat("'", type.name(), "' object is not callable"));
    }
  }
  for (size_t i = 1; i < expr.children.size(); ++i) Check(*expr.children[i]);
  for (Keyword& keyword : expr.keywords) Check(*keyword.value);
  return Type::Object();
}

// A call of a compiled module function by name, bound at compile time by
// Python's rules: positional arguments first, then keywords by name (never a
// positional-only parameter, never one bound twice), then defaults, which must
// be literals (a default expression is evaluated once when the def runs and
// lives in the function object). The call is typed only if every argument has
// exactly the parameter's type; anything else (too many arguments, an int for
// a float, an object for a buffer) is a dynamic call, so that the callee's
// Python-facing entry converts or falls back exactly as CPython would.
Type FunctionChecker::CheckTypedCall(Expr& expr, int function) {
  const FunctionInfo& callee = info_.functions[function];
  const FunctionDef& def = *callee.def;
  const size_t num_params = def.params.size();
  std::vector<int> binding(num_params, INT32_MIN);
  size_t num_positional = 0;
  for (const ParamSyntax& param : def.params) {
    if (param.kind != ParamKind::kKeywordOnly) ++num_positional;
  }
  bool bindable = expr.children.size() - 1 <= num_positional;
  for (size_t i = 1; bindable && i < expr.children.size(); ++i) binding[i - 1] = static_cast<int>(i);
  for (size_t k = 0; bindable && k < expr.keywords.size(); ++k) {
    bool found = false;
    for (size_t p = 0; p < num_params; ++p) {
      if (def.params[p].name == expr.keywords[k].name && def.params[p].kind != ParamKind::kPositionalOnly &&
          binding[p] == INT32_MIN) {
        binding[p] = -static_cast<int>(k) - 1;
        found = true;
      }
    }
    bindable = found;
  }
  for (size_t p = 0; bindable && p < num_params; ++p) {
    if (binding[p] != INT32_MIN) continue;
    // Only a literal default can be compiled into the call; anything else is
    // evaluated once, when the def runs, and lives in the function object.
    const Expr* default_value = def.params[p].default_value.get();
    bool literal = default_value != nullptr &&
                   (default_value->kind == ExprKind::kInt || default_value->kind == ExprKind::kFloat ||
                    default_value->kind == ExprKind::kBool || default_value->kind == ExprKind::kNone ||
                    (default_value->kind == ExprKind::kConstant && default_value->type.is_object()));
    if (!literal) {
      bindable = false;
    } else {
      binding[p] = 0;
      Check(*def.params[p].default_value);  // a literal: this only gives it its type
    }
  }
  if (!bindable) return CheckDynamicCall(expr);

  for (size_t i = 1; i < expr.children.size(); ++i) Check(*expr.children[i]);
  for (Keyword& keyword : expr.keywords) Check(*keyword.value);
  // A direct call passes typed values as they are. An argument whose type is
  // not exactly the parameter's (an int for a float, an object for a buffer)
  // goes through the callee's Python-facing entry, which borrows buffers and
  // runs the Python code for arguments that do not fit, as CPython would.
  for (size_t p = 0; p < num_params; ++p) {
    Type param_type = callee.param_types[p];
    Type arg_type;
    if (binding[p] == 0) {
      const Expr& literal = *def.params[p].default_value;
      arg_type = literal.type;
    } else {
      const Expr& arg = binding[p] > 0 ? *expr.children[binding[p]] : *expr.keywords[-binding[p] - 1].value;
      arg_type = arg.type;
    }
    if (!arg_type.is_known()) return Type::Unknown();
    bool exact = param_type.is_object() ? !arg_type.is_buffer() : arg_type == param_type;
    if (!exact) return CheckDynamicCall(expr);
  }
  expr.resolution = Resolution::kFunction;
  expr.index = function;
  expr.binding = std::move(binding);
  return callee.result.is_known() ? callee.result : Type::Object();
}

// A math function with a typed form and the right number of numeric
// arguments: float, int (floor, ceil, trunc) or bool (isnan, isinf,
// isfinite) result. Keywords or an object argument leave the call to CPython's
// math module; a buffer argument is its TypeError.
Type FunctionChecker::CheckMathCall(Expr& expr, const std::string& name) {
  size_t arity = expr.children.size() - 1;
  int id = expr.keywords.empty() ? MathId(name, arity) : -1;
  if (id < 0) return CheckDynamicCall(expr);
  std::vector<Type> args;
  for (size_t i = 1; i < expr.children.size(); ++i) args.push_back(Check(*expr.children[i]));
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_known()) return Type::Unknown();
    if (args[i].is_buffer()) Error(expr.children[i + 1]->loc, absl::StrCat("must be real number, not ", args[i].name()));
    // An object argument: CPython's math module decides.
    if (!args[i].is_numeric()) return CheckDynamicCall(expr);
  }
  expr.resolution = Resolution::kMath;
  expr.index = id;
  switch (kMathInfo[id].shape) {
    case MathShape::F:
    case MathShape::FF: return Type::Float();
    case MathShape::FI: return Type::Int();
    case MathShape::FB: return Type::Bool();
  }
  return Type::Float();
}

// The builtins with typed forms: len of a buffer, int/float/bool of a number,
// abs of a number, min and max of numbers of one type. Any other use calls the
// builtin object itself (a typed result type is unboxed after), so that
// CPython raises or answers; len of a number is its TypeError.
Type FunctionChecker::CheckBuiltinCall(Expr& expr, Builtin builtin) {
  size_t arity = expr.children.size() - 1;
  std::vector<Type> args;
  for (size_t i = 1; i < expr.children.size(); ++i) args.push_back(Check(*expr.children[i]));
  for (Keyword& keyword : expr.keywords) Check(*keyword.value);
  for (const Type& type : args) {
    if (!type.is_known()) return Type::Unknown();
  }
  auto dynamic = [&](Type result) {
    // Called as the builtin object; a typed result is unboxed after the call.
    expr.children[0]->resolution = Resolution::kGlobal;
    expr.children[0]->type = Type::Object();
    expr.resolution = Resolution::kBuiltin;
    expr.index = -1;
    return result;
  };
  expr.resolution = Resolution::kBuiltin;
  expr.index = static_cast<int>(builtin);
  bool plain = expr.keywords.empty();
  switch (builtin) {
    case Builtin::kLEN:
      if (plain && arity == 1 && args[0].is_buffer()) return Type::Int();
      if (plain && arity == 1 && !args[0].is_object()) {
        Error(expr.children[1]->loc, absl::StrCat("object of type '", args[0].name(), "' has no len()"));
        return Type::Int();
      }
      return dynamic(Type::Int());
    case Builtin::kINT:
      if (plain && arity == 1 && args[0].is_numeric()) return Type::Int();
      return dynamic(Type::Int());
    case Builtin::kFLOAT:
      if (plain && arity == 1 && args[0].is_numeric()) return Type::Float();
      return dynamic(Type::Float());
    case Builtin::kBOOL:
      if (plain && arity == 1) return Type::Bool();
      return dynamic(Type::Bool());
    case Builtin::kABS:
      if (plain && arity == 1 && args[0].is_integral()) return Type::Int();
      if (plain && arity == 1 && (args[0].is_float() || args[0].is_complex())) return Type::Float();
      return dynamic(Type::Object());
    case Builtin::kCOMPLEX:
      // complex(), complex(x) of a number or a complex, complex(x, y) of two
      // real numbers: the parts themselves (anything else, a str, complex
      // parts, keywords, is CPython's own constructor).
      if (plain && arity == 0) return Type::Complex();
      if (plain && arity == 1 && (args[0].is_numeric() || args[0].is_complex())) return Type::Complex();
      if (plain && arity == 2 && args[0].is_numeric() && args[1].is_numeric()) return Type::Complex();
      return dynamic(Type::Complex());
    case Builtin::kMIN:
    case Builtin::kMAX: {
      if (plain && arity >= 2 && std::all_of(args.begin(), args.end(), [&](const Type& t) { return t == args[0]; }) &&
          args[0].is_numeric()) {
        return args[0];
      }
      bool numeric = std::all_of(args.begin(), args.end(), [](const Type& t) { return t.is_numeric(); });
      return dynamic(numeric ? MixedNumber(args) : Type::Object());
    }
    case Builtin::kROUND:
      // round(x) of a number is an int (the nearest, ties to even, for a
      // float); round(x, n) is CPython's own.
      if (plain && arity == 1 && args[0].is_numeric()) return Type::Int();
      return dynamic(Type::Object());
    case Builtin::kRANGE: return dynamic(Type::Object("range"));
  }
  return dynamic(Type::Object());
}

// The result type of `left op right` by Python's numeric rules: any object
// operand makes an object (the C API decides); ints and bools give an int
// (bitwise operators on two bools a bool, `/` a float, `**` a float for a
// negative literal exponent, as Python's does); a float operand gives a float,
// and bitwise operators or shifts on a float, @ on numbers, and arithmetic on
// a buffer are CPython's "unsupported operand type(s)".
Type FunctionChecker::BinaryType(BinOp op, Type left, Type right, const Expr* right_expr, const Loc& loc) {
  if (!left.is_known() || !right.is_known()) return Type::Unknown();
  if (left.is_object() || right.is_object()) {
    if (left.is_buffer() || right.is_buffer()) return Type::Object();
    return Type::Object();
  }
  auto unsupported = [&]() {
    Error(loc, absl::StrCat("unsupported operand type(s) for ", SymbolOf(op), ": '", left.name(), "' and '",
                            right.name(), "'"));
    return Type::Unknown();
  };
  if (left.is_buffer() || right.is_buffer()) return unsupported();
  if (left.is_complex() || right.is_complex()) {
    // + - * / are complex arithmetic and ** CPython's power of complex
    // values; any other operator goes to CPython, which raises its TypeError.
    switch (op) {
      case BinOp::kAdd:
      case BinOp::kSub:
      case BinOp::kMul:
      case BinOp::kDiv:
      case BinOp::kPow: return Type::Complex();
      default: return Type::Object();
    }
  }
  if (op == BinOp::kMatMul) return unsupported();
  if (left.is_integral() && right.is_integral()) {
    switch (op) {
      case BinOp::kBitAnd:
      case BinOp::kBitOr:
      case BinOp::kBitXor: return left.is_bool() && right.is_bool() ? Type::Bool() : Type::Int();
      case BinOp::kDiv: return Type::Float();
      case BinOp::kPow: {
        // A negative literal exponent makes the power a float, as in Python.
        bool negative_literal =
            right_expr != nullptr &&
            ((right_expr->kind == ExprKind::kInt && right_expr->int_value < 0) ||
             (right_expr->kind == ExprKind::kUnary && right_expr->un_op == UnOp::kNeg &&
              right_expr->children[0]->kind == ExprKind::kInt && right_expr->children[0]->int_value > 0));
        return negative_literal ? Type::Float() : Type::Int();
      }
      default: return Type::Int();
    }
  }
  switch (op) {
    case BinOp::kBitAnd:
    case BinOp::kBitOr:
    case BinOp::kBitXor:
    case BinOp::kLShift:
    case BinOp::kRShift: return unsupported();
    default: return Type::Float();
  }
}

// `left op right`: both operands, then BinaryType.
Type FunctionChecker::CheckBinary(Expr& expr) {
  Type left = Check(*expr.children[0]);
  Type right = Check(*expr.children[1]);
  return BinaryType(expr.bin_op, left, right, expr.children[1].get(), expr.loc);
}

// `not x` is a bool for any operand; `-x` and `+x` keep an int or a float (a
// bool becomes an int, as -True is -1); `~x` needs an integer. Anything else
// on a number is CPython's "bad operand type for unary".
Type FunctionChecker::CheckUnary(Expr& expr) {
  Type operand = Check(*expr.children[0]);
  if (!operand.is_known()) return Type::Unknown();
  switch (expr.un_op) {
    case UnOp::kNot: return Type::Bool();
    case UnOp::kNeg:
    case UnOp::kPos:
      if (operand.is_integral()) return Type::Int();
      if (operand.is_float()) return Type::Float();
      if (operand.is_complex()) return Type::Complex();
      if (operand.is_object()) return Type::Object();
      break;
    case UnOp::kInvert:
      if (operand.is_integral()) return Type::Int();
      if (operand.is_object()) return Type::Object();
      break;
  }
  static const char* kSymbols[] = {"-", "+", "~", "not"};
  Error(expr.loc, absl::StrCat("bad operand type for unary ", kSymbols[static_cast<int>(expr.un_op)], ": '",
                               operand.name(), "'"));
  return Type::Unknown();
}

// A comparison chain is a bool when every link compares numbers (or is an
// `is`/`in` test); a rich comparison involving an object may return any
// object, so the chain is then an object. `x in 3` is CPython's "argument of
// type 'int' is not iterable".
Type FunctionChecker::CheckCompare(Expr& expr) {
  std::vector<Type> types;
  for (ExprPtr& child : expr.children) types.push_back(Check(*child));
  for (const Type& type : types) {
    if (!type.is_known()) return Type::Unknown();
  }
  bool all_bool = true;
  for (size_t i = 0; i < expr.cmp_ops.size(); ++i) {
    CmpOp op = expr.cmp_ops[i];
    const Type& left = types[i];
    const Type& right = types[i + 1];
    switch (op) {
      case CmpOp::kIs:
      case CmpOp::kIsNot: break;
      case CmpOp::kIn:
      case CmpOp::kNotIn:
        if (right.is_numeric()) {
          Error(expr.children[i + 1]->loc, absl::StrCat("argument of type '", right.name(), "' is not iterable"));
        }
        break;
      case CmpOp::kEq:
      case CmpOp::kNe:
        // Complex equality is typed too; ordering a complex is CPython's TypeError.
        if ((left.is_numeric() || left.is_complex()) && (right.is_numeric() || right.is_complex())) break;
        all_bool = false;
        break;
      default:
        if (left.is_numeric() && right.is_numeric()) break;
        all_bool = false;
        break;
    }
  }
  return all_bool ? Type::Bool() : Type::Object();
}

}  // namespace

// See compiler/typecheck.h.
std::unique_ptr<ModuleInfo> CheckModule(ModuleSyntax& module, const std::map<int, std::string>& forced_fallbacks,
                                        ElemType generic_elem) {
  return ModuleChecker(module, forced_fallbacks, generic_elem).Run();
}

}  // namespace ppy
