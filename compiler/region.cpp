#include "compiler/region.h"

#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace ppy {
namespace {

using regions::Instruction;
using regions::Literal;
using regions::AtenOp;
using regions::AtenOpInfo;
using regions::Operand;
using regions::ParamKind;
using regions::RegionCode;
using regions::ScalarType;
using regions::SignatureParam;

// Thrown inside the extractor to give up with a reason; caught at the top.
struct NotARegion {
  std::string reason;
  Loc loc;
};

[[noreturn]] void Fail(const Loc& loc, std::string reason) { throw NotARegion{std::move(reason), loc}; }

// What an expression of a region evaluates to.
struct RegionValue {
  enum class Kind { kTensor, kOutputs, kScalar, kInt, kFloat, kBool, kNone, kString, kList };
  Kind kind = Kind::kNone;
  int32_t slot = -1;                // kTensor, kScalar
  ScalarType scalar = ScalarType::kInt;  // kScalar
  std::vector<int32_t> slots;       // kOutputs: an op's tensors, e.g. torch.max's (values, indices)
  int64_t int_value = 0;            // kInt, kBool
  double float_value = 0.0;         // kFloat
  std::string text;                 // kString
  std::vector<RegionValue> items;   // kList: a tuple or list literal
  Loc loc;

  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool || kind == Kind::kScalar;
  }
};

const char* KindName(const RegionValue& value) {
  switch (value.kind) {
    case RegionValue::Kind::kTensor: return "a tensor";
    case RegionValue::Kind::kOutputs: return "a tuple of tensors";
    case RegionValue::Kind::kScalar:
    case RegionValue::Kind::kInt:
    case RegionValue::Kind::kFloat:
    case RegionValue::Kind::kBool: return "a number";
    case RegionValue::Kind::kNone: return "None";
    case RegionValue::Kind::kString: return "a string";
    case RegionValue::Kind::kList: return "a sequence";
  }
  return "a value";
}

class Extractor {
 public:
  Extractor(const FunctionDef& def, const ModuleInfo& module, const std::string& filename)
      : def_(def), module_(module) {
    code_.name = def.name;
    code_.filename = filename;
    code_.line = def.loc.line;
  }

  // The dotted name `expr` stands for when it is a torch module or function
  // ("torch.nn.functional", "torch.relu"), or "".
  std::string TorchName(const Expr& expr) const {
    if (expr.kind == ExprKind::kName) {
      if (names_.count(expr.text) || IsParam(expr.text)) return "";
      auto it = module_.globals.find(expr.text);
      if (it == module_.globals.end()) return "";
      const GlobalSymbol& symbol = it->second;
      std::string name = symbol.kind == GlobalSymbol::Kind::kModule ? symbol.module_name : symbol.origin;
      return name == "torch" || name.rfind("torch.", 0) == 0 ? name : "";
    }
    if (expr.kind == ExprKind::kAttribute) {
      std::string base = TorchName(*expr.children[0]);
      return base.empty() ? "" : base + "." + expr.text;
    }
    return "";
  }

  bool IsTensorAnnotation(const Expr* annotation) const {
    return annotation != nullptr && TorchName(*annotation) == "torch.Tensor";
  }

  bool IsCandidate() const {
    if (IsTensorAnnotation(def_.returns.get())) return true;
    for (const ParamSyntax& param : def_.params) {
      if (IsTensorAnnotation(param.annotation.get())) return true;
    }
    return false;
  }

  RegionCode Run() {
    if (def_.is_async) Fail(def_.name_loc, "an async function");
    if (def_.has_type_params) Fail(def_.type_params_loc, "type parameters");
    if (!def_.decorators.empty()) Fail(def_.decorators[0]->loc, "a decorated function");
    if (!def_.star_params.empty()) Fail(def_.star_loc, absl::StrCat("a ", def_.star_params, " parameter"));
    BindParams();
    const std::vector<StmtPtr>& body = def_.body;
    bool returned = false;
    for (size_t i = 0; i < body.size(); ++i) {
      const Stmt& stmt = *body[i];
      if (returned) Fail(stmt.loc, "code after the return");
      returned = Statement(stmt);
    }
    if (!returned) Fail(def_.name_loc, "no return of a tensor at the end");
    Finish();
    return std::move(code_);
  }

 private:
  bool IsParam(const std::string& name) const { return param_values_.count(name) != 0; }

  void BindParams() {
    int tensors = 0, scalars = 0;
    for (const ParamSyntax& param : def_.params) {
      regions::RegionParam region_param;
      region_param.name = param.name;
      RegionValue value;
      value.loc = param.loc;
      const Expr* annotation = param.annotation.get();
      if (IsTensorAnnotation(annotation)) {
        region_param.is_tensor = true;
        region_param.slot = tensors++;
        value.kind = RegionValue::Kind::kTensor;
        value.slot = region_param.slot;
        code_.slot_names.push_back(param.name);
      } else if (annotation != nullptr && annotation->kind == ExprKind::kName &&
                 (annotation->text == "int" || annotation->text == "float" || annotation->text == "bool") &&
                 !module_.globals.count(annotation->text)) {
        region_param.is_tensor = false;
        region_param.scalar = annotation->text == "int"     ? ScalarType::kInt
                              : annotation->text == "float" ? ScalarType::kFloat
                                                            : ScalarType::kBool;
        region_param.slot = scalars++;
        value.kind = RegionValue::Kind::kScalar;
        value.slot = region_param.slot;
        value.scalar = region_param.scalar;
      } else {
        Fail(param.loc, absl::StrCat("parameter '", param.name, "' is not annotated torch.Tensor, int, float or bool"));
      }
      if (param.kind == ppy::ParamKind::kPositionalOnly) ++code_.num_posonly;
      if (param.kind == ppy::ParamKind::kKeywordOnly) ++code_.num_kwonly;
      param_values_[param.name] = value;
      code_.params.push_back(region_param);
    }
    code_.num_tensor_slots = tensors;
    code_.num_scalar_slots = scalars;
  }

  // Returns whether `stmt` was the return.
  bool Statement(const Stmt& stmt) {
    switch (stmt.kind) {
      case StmtKind::kPass: return false;
      case StmtKind::kAnnAssign: {
        const Expr& target = *stmt.targets[0];
        if (target.kind != ExprKind::kName) Fail(target.loc, "an annotated assignment to something other than a name");
        if (!IsTensorAnnotation(stmt.annotation.get())) {
          Fail(stmt.annotation->loc, "a local annotated with something other than torch.Tensor");
        }
        if (stmt.value == nullptr) Fail(stmt.loc, "an annotation without a value");
        RegionValue value = Evaluate(*stmt.value);
        if (value.kind != RegionValue::Kind::kTensor) {
          Fail(stmt.value->loc, absl::StrCat("'", target.text, "' is annotated torch.Tensor but assigned ",
                                             KindName(value)));
        }
        Assign(target, value);
        return false;
      }
      case StmtKind::kAssign: {
        if (stmt.targets.size() != 1) Fail(stmt.loc, "a chained assignment");
        const Expr& target = *stmt.targets[0];
        if (target.kind == ExprKind::kTuple || target.kind == ExprKind::kList) {
          RegionValue value = Evaluate(*stmt.value);
          std::vector<RegionValue> parts = Unpack(value, target.children.size(), stmt.value->loc);
          for (size_t i = 0; i < parts.size(); ++i) {
            if (target.children[i]->kind != ExprKind::kName) Fail(target.children[i]->loc, "unpacking into a non-name");
            Assign(*target.children[i], parts[i]);
          }
          return false;
        }
        if (target.kind != ExprKind::kName) Fail(target.loc, "an assignment to something other than a name");
        Assign(target, Evaluate(*stmt.value));
        return false;
      }
      case StmtKind::kReturn: {
        if (stmt.value == nullptr) Fail(stmt.loc, "a return without a tensor");
        const Expr& value = *stmt.value;
        if (value.kind == ExprKind::kTuple) {
          code_.returns_tuple = true;
          for (const ExprPtr& item : value.children) code_.results.push_back(TensorSlotOf(*item, "a returned value"));
          if (code_.results.empty()) Fail(value.loc, "a return of an empty tuple");
        } else {
          code_.results.push_back(TensorSlotOf(value, "the returned value"));
        }
        return true;
      }
      case StmtKind::kExpr: Fail(stmt.loc, "an expression statement (regions have no side effects)");
      case StmtKind::kUnsupported: Fail(stmt.loc, stmt.what);
      default: Fail(stmt.loc, "a statement other than an assignment or a return");
    }
  }

  std::vector<RegionValue> Unpack(const RegionValue& value, size_t count, const Loc& loc) {
    std::vector<RegionValue> parts;
    if (value.kind == RegionValue::Kind::kOutputs) {
      for (int32_t slot : value.slots) parts.push_back(Tensor(slot, loc));
    } else if (value.kind == RegionValue::Kind::kList) {
      parts = value.items;
    } else {
      Fail(loc, absl::StrCat("unpacking ", KindName(value)));
    }
    if (parts.size() != count) Fail(loc, absl::StrCat("unpacking ", parts.size(), " values into ", count, " names"));
    return parts;
  }

  void Assign(const Expr& target, const RegionValue& value) {
    if (IsParam(target.text)) Fail(target.loc, absl::StrCat("an assignment to the parameter '", target.text, "'"));
    if (value.kind == RegionValue::Kind::kTensor && code_.slot_names[value.slot].front() == '%') {
      code_.slot_names[value.slot] = target.text;
    }
    names_[target.text] = value;
  }

  int32_t TensorSlotOf(const Expr& expr, const char* what) {
    RegionValue value = Evaluate(expr);
    if (value.kind != RegionValue::Kind::kTensor) Fail(expr.loc, absl::StrCat(what, " is ", KindName(value), ", not a tensor"));
    return value.slot;
  }

  RegionValue Tensor(int32_t slot, const Loc& loc) {
    RegionValue value;
    value.kind = RegionValue::Kind::kTensor;
    value.slot = slot;
    value.loc = loc;
    return value;
  }

  RegionValue Evaluate(const Expr& expr) {
    RegionValue value;
    value.loc = expr.loc;
    switch (expr.kind) {
      case ExprKind::kInt:
        value.kind = RegionValue::Kind::kInt;
        value.int_value = expr.int_value;
        return value;
      case ExprKind::kBool:
        value.kind = RegionValue::Kind::kBool;
        value.int_value = expr.int_value;
        return value;
      case ExprKind::kFloat:
        value.kind = RegionValue::Kind::kFloat;
        value.float_value = expr.float_value;
        return value;
      case ExprKind::kNone: value.kind = RegionValue::Kind::kNone; return value;
      case ExprKind::kConstant:
        if (expr.object != nullptr && PyUnicode_Check(expr.object)) {
          const char* text = PyUnicode_AsUTF8(expr.object);
          if (text == nullptr) {
            PyErr_Clear();
            Fail(expr.loc, "a string that is not valid UTF-8");
          }
          value.kind = RegionValue::Kind::kString;
          value.text = text;
          return value;
        }
        Fail(expr.loc, "a constant other than a number, a string or None");
      case ExprKind::kName: {
        auto local = names_.find(expr.text);
        if (local != names_.end()) return WithLoc(local->second, expr.loc);
        auto param = param_values_.find(expr.text);
        if (param != param_values_.end()) return WithLoc(param->second, expr.loc);
        Fail(expr.loc, absl::StrCat("the name '", expr.text, "' (a region reads only its parameters and locals)"));
      }
      case ExprKind::kTuple:
      case ExprKind::kList:
        value.kind = RegionValue::Kind::kList;
        for (const ExprPtr& child : expr.children) {
          RegionValue item = Evaluate(*child);
          if (item.kind == RegionValue::Kind::kList || item.kind == RegionValue::Kind::kOutputs) {
            Fail(child->loc, "a nested sequence");
          }
          value.items.push_back(std::move(item));
        }
        return value;
      case ExprKind::kUnary: {
        if (expr.un_op != UnOp::kNeg) Fail(expr.loc, "a unary operator other than -");
        RegionValue operand = Evaluate(*expr.children[0]);
        if (operand.kind == RegionValue::Kind::kInt && operand.int_value != INT64_MIN) {
          operand.int_value = -operand.int_value;
          return WithLoc(operand, expr.loc);
        }
        if (operand.kind == RegionValue::Kind::kFloat) {
          operand.float_value = -operand.float_value;
          return WithLoc(operand, expr.loc);
        }
        if (operand.kind != RegionValue::Kind::kTensor) Fail(expr.loc, "arithmetic on numbers inside a region");
        return Call("unary-", {operand}, {}, expr.loc, "-");
      }
      case ExprKind::kBinary: {
        RegionValue left = Evaluate(*expr.children[0]);
        RegionValue right = Evaluate(*expr.children[1]);
        std::string symbol = SymbolOf(expr.bin_op);
        if (left.kind == RegionValue::Kind::kTensor) return Call(symbol, {left, right}, {}, expr.loc, symbol);
        if (right.kind == RegionValue::Kind::kTensor && left.is_number()) {
          return Call("r" + symbol, {right, left}, {}, expr.loc, symbol);
        }
        Fail(expr.loc, absl::StrCat("the operator ", symbol, " on ", KindName(left), " and ", KindName(right)));
      }
      case ExprKind::kCompare: {
        if (expr.cmp_ops.size() != 1) Fail(expr.loc, "a chained comparison");
        RegionValue left = Evaluate(*expr.children[0]);
        RegionValue right = Evaluate(*expr.children[1]);
        std::string symbol = SymbolOf(expr.cmp_ops[0]);
        if (left.kind == RegionValue::Kind::kTensor) return Call(symbol, {left, right}, {}, expr.loc, symbol);
        if (right.kind == RegionValue::Kind::kTensor && left.is_number()) {
          // Python asks the tensor for the reflected comparison.
          static const std::map<std::string, std::string> kReflected = {
              {"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}, {"==", "=="}, {"!=", "!="}};
          auto reflected = kReflected.find(symbol);
          if (reflected != kReflected.end()) return Call(reflected->second, {right, left}, {}, expr.loc, symbol);
        }
        Fail(expr.loc, absl::StrCat("the comparison ", symbol, " on ", KindName(left), " and ", KindName(right)));
      }
      case ExprKind::kSubscript: {
        RegionValue base = Evaluate(*expr.children[0]);
        const Expr& index = *expr.children[1];
        if (base.kind == RegionValue::Kind::kOutputs && index.kind == ExprKind::kInt && index.int_value >= 0 &&
            index.int_value < static_cast<int64_t>(base.slots.size())) {
          return Tensor(base.slots[index.int_value], expr.loc);
        }
        Fail(expr.loc, base.kind == RegionValue::Kind::kTensor ? "indexing or slicing a tensor" : "a subscript");
      }
      case ExprKind::kAttribute: {
        if (!TorchName(expr).empty()) Fail(expr.loc, absl::StrCat(TorchName(expr), " used as a value"));
        RegionValue base = Evaluate(*expr.children[0]);
        if (base.kind == RegionValue::Kind::kOutputs && base.slots.size() == 2 &&
            (expr.text == "values" || expr.text == "indices")) {
          return Tensor(base.slots[expr.text == "values" ? 0 : 1], expr.loc);
        }
        Fail(expr.loc, absl::StrCat("the attribute .", expr.text, " of ", KindName(base)));
      }
      case ExprKind::kCall: return EvaluateCall(expr);
      case ExprKind::kUnsupported: Fail(expr.loc, expr.text);
      default: Fail(expr.loc, "an expression other than a torch operation, a name or a constant");
    }
  }

  static RegionValue WithLoc(RegionValue value, const Loc& loc) {
    value.loc = loc;
    return value;
  }

  RegionValue EvaluateCall(const Expr& expr) {
    const Expr& callee = *expr.children[0];
    std::string name = TorchName(callee);
    std::string spelling;
    std::string shown;
    std::vector<RegionValue> positional;
    if (!name.empty()) {
      static const std::string kFunctional = "torch.nn.functional.";
      if (name.rfind(kFunctional, 0) == 0 && name.find('.', kFunctional.size()) == std::string::npos) {
        spelling = "F." + name.substr(kFunctional.size());
      } else if (name.find('.', 6) == std::string::npos) {
        spelling = name;
      }
      shown = name;
      if (spelling.empty()) Fail(callee.loc, absl::StrCat(name, " is not a curated torch operation"));
    } else if (callee.kind == ExprKind::kAttribute) {
      RegionValue receiver = Evaluate(*callee.children[0]);
      if (receiver.kind != RegionValue::Kind::kTensor) {
        Fail(callee.loc, absl::StrCat("a call of .", callee.text, " on ", KindName(receiver)));
      }
      spelling = "." + callee.text;
      shown = "Tensor." + callee.text;
      positional.push_back(receiver);
    } else {
      Fail(callee.loc, "a call of something other than a torch operation or a tensor method");
    }
    for (size_t i = 1; i < expr.children.size(); ++i) positional.push_back(Evaluate(*expr.children[i]));
    std::vector<std::pair<std::string, RegionValue>> keywords;
    for (const Keyword& keyword : expr.keywords) {
      if (keyword.name.empty()) Fail(keyword.loc, "**keyword arguments");
      keywords.emplace_back(keyword.name, Evaluate(*keyword.value));
    }
    return Call(spelling, positional, keywords, expr.loc, shown);
  }

  // Emits the first op whose spelling and signature fit the call.
  RegionValue Call(const std::string& spelling, const std::vector<RegionValue>& positional,
             const std::vector<std::pair<std::string, RegionValue>>& keywords, const Loc& loc, const std::string& shown) {
    bool spelled = false;
    const std::vector<AtenOpInfo>& ops = regions::AtenOps();
    for (size_t op = 0; op < ops.size(); ++op) {
      if (!HasSpelling(ops[op].spellings, spelling)) continue;
      spelled = true;
      std::optional<std::vector<Operand>> operands = Bind(ops[op], positional, keywords);
      if (!operands) continue;
      Instruction instruction;
      instruction.op = static_cast<AtenOp>(op);
      instruction.line = loc.line;
      instruction.col = loc.col;
      instruction.operands = std::move(*operands);
      RegionValue result;
      result.loc = loc;
      for (int k = 0; k < ops[op].outputs; ++k) {
        int32_t slot = code_.num_tensor_slots++;
        code_.slot_names.push_back(absl::StrCat("%", slot));
        instruction.outputs.push_back(slot);
        result.slots.push_back(slot);
      }
      code_.instructions.push_back(std::move(instruction));
      if (ops[op].outputs == 1) return Tensor(result.slots[0], loc);
      result.kind = RegionValue::Kind::kOutputs;
      return result;
    }
    if (!spelled) Fail(loc, absl::StrCat(shown, " is not a curated torch operation"));
    std::string kinds;
    for (const RegionValue& value : positional) kinds += absl::StrCat(kinds.empty() ? "" : ", ", KindName(value));
    for (const auto& [name, value] : keywords) kinds += absl::StrCat(kinds.empty() ? "" : ", ", name, "=", KindName(value));
    Fail(loc, absl::StrCat(shown, "(", kinds, ") is not a form of it the region tier runs"));
  }

  static bool HasSpelling(const char* spellings, const std::string& spelling) {
    std::istringstream words(spellings);
    std::string word;
    while (words >> word) {
      if (word == spelling) return true;
    }
    return false;
  }

  std::optional<std::vector<Operand>> Bind(const AtenOpInfo& op, const std::vector<RegionValue>& positional,
                                           const std::vector<std::pair<std::string, RegionValue>>& keywords) {
    const std::vector<SignatureParam>& params = op.params;
    std::vector<std::optional<Operand>> bound(params.size());
    size_t next = 0;
    for (size_t i = 0; i < params.size() && !params[i].keyword_only; ++i) {
      if (params[i].collects_positional) {
        std::vector<RegionValue> rest(positional.begin() + std::min(next, positional.size()), positional.end());
        next = positional.size();
        if (rest.empty()) break;
        RegionValue list;
        if (rest.size() == 1 && rest[0].kind == RegionValue::Kind::kList) {
          list = rest[0];
        } else {
          list.kind = RegionValue::Kind::kList;
          list.items = rest;
        }
        bound[i] = Convert(params[i], list);
        if (!bound[i]) return std::nullopt;
        continue;
      }
      if (next >= positional.size()) break;
      bound[i] = Convert(params[i], positional[next++]);
      if (!bound[i]) return std::nullopt;
    }
    if (next < positional.size()) return std::nullopt;
    for (const auto& [name, value] : keywords) {
      size_t i = 0;
      while (i < params.size() && params[i].name != name) ++i;
      if (i == params.size() || bound[i]) return std::nullopt;
      bound[i] = Convert(params[i], value);
      if (!bound[i]) return std::nullopt;
    }
    std::vector<Operand> operands;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!bound[i]) {
        if (!params[i].has_default) return std::nullopt;
        bound[i] = FromLiteral(params[i].default_value);
      }
      operands.push_back(std::move(*bound[i]));
    }
    return operands;
  }

  static Operand FromLiteral(const Literal& literal) {
    Operand operand;
    switch (literal.kind) {
      case Literal::Kind::kNone: operand.kind = Operand::Kind::kNone; break;
      case Literal::Kind::kInt:
        operand.kind = Operand::Kind::kInt;
        operand.int_value = literal.int_value;
        break;
      case Literal::Kind::kFloat:
        operand.kind = Operand::Kind::kFloat;
        operand.float_value = literal.float_value;
        break;
      case Literal::Kind::kBool:
        operand.kind = Operand::Kind::kBool;
        operand.int_value = literal.int_value;
        break;
      case Literal::Kind::kString:
        operand.kind = Operand::Kind::kString;
        operand.text = literal.text;
        break;
    }
    return operand;
  }

  static std::optional<Operand> Number(const RegionValue& value, bool allow_float, bool allow_bool) {
    Operand operand;
    switch (value.kind) {
      case RegionValue::Kind::kInt:
        operand.kind = Operand::Kind::kInt;
        operand.int_value = value.int_value;
        return operand;
      case RegionValue::Kind::kFloat:
        if (!allow_float) return std::nullopt;
        operand.kind = Operand::Kind::kFloat;
        operand.float_value = value.float_value;
        return operand;
      case RegionValue::Kind::kBool:
        if (!allow_bool) return std::nullopt;
        operand.kind = Operand::Kind::kBool;
        operand.int_value = value.int_value;
        return operand;
      case RegionValue::Kind::kScalar:
        if ((value.scalar == ScalarType::kFloat && !allow_float) || (value.scalar == ScalarType::kBool && !allow_bool)) {
          return std::nullopt;
        }
        operand.kind = Operand::Kind::kScalar;
        operand.slot = value.slot;
        return operand;
      default: return std::nullopt;
    }
  }

  static Operand TensorOperand(const RegionValue& value) {
    Operand operand;
    operand.kind = Operand::Kind::kTensor;
    operand.slot = value.slot;
    return operand;
  }

  static std::optional<Operand> Convert(const SignatureParam& param, const RegionValue& value) {
    bool tensor = value.kind == RegionValue::Kind::kTensor;
    bool none = value.kind == RegionValue::Kind::kNone;
    Operand operand;
    switch (param.kind) {
      case ParamKind::kTensor:
        if (tensor) return TensorOperand(value);
        return std::nullopt;
      case ParamKind::kOptionalTensor:
        if (tensor) return TensorOperand(value);
        if (none) return operand;
        return std::nullopt;
      case ParamKind::kTensorList:
        if (value.kind != RegionValue::Kind::kList || value.items.empty()) return std::nullopt;
        operand.kind = Operand::Kind::kList;
        for (const RegionValue& item : value.items) {
          if (item.kind != RegionValue::Kind::kTensor) return std::nullopt;
          operand.items.push_back(TensorOperand(item));
        }
        return operand;
      case ParamKind::kTensorOrNumber:
        if (tensor) return TensorOperand(value);
        return Number(value, true, true);
      case ParamKind::kNumber: return Number(value, true, true);
      case ParamKind::kOptionalNumber:
        if (none) return operand;
        return Number(value, true, true);
      case ParamKind::kInt: return Number(value, false, false);
      case ParamKind::kIntList:
        operand.kind = Operand::Kind::kList;
        if (value.kind == RegionValue::Kind::kList) {
          for (const RegionValue& item : value.items) {
            std::optional<Operand> element = Number(item, false, false);
            if (!element) return std::nullopt;
            operand.items.push_back(*element);
          }
          return operand;
        } else if (std::optional<Operand> single = Number(value, false, false)) {
          operand.items.push_back(*single);
          return operand;
        }
        return std::nullopt;
      case ParamKind::kFloat: return Number(value, true, false);
      case ParamKind::kBool:
        if (value.kind == RegionValue::Kind::kBool || (value.kind == RegionValue::Kind::kScalar && value.scalar == ScalarType::kBool)) {
          return Number(value, false, true);
        }
        return std::nullopt;
      case ParamKind::kReduction:
      case ParamKind::kGeluApproximation: {
        if (value.kind != RegionValue::Kind::kString) return std::nullopt;
        bool valid = param.kind == ParamKind::kReduction
                         ? (value.text == "none" || value.text == "mean" || value.text == "sum")
                         : (value.text == "none" || value.text == "tanh");
        if (!valid) return std::nullopt;
        operand.kind = Operand::Kind::kString;
        operand.text = value.text;
        return operand;
      }
      case ParamKind::kFixed: {
        const Literal& fixed = param.default_value;
        if (fixed.kind == Literal::Kind::kNone && none) return operand;
        if (fixed.kind == Literal::Kind::kBool && value.kind == RegionValue::Kind::kBool && value.int_value == fixed.int_value) {
          return FromLiteral(fixed);
        }
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // Frees each intermediate tensor after the last instruction that reads it.
  void Finish() {
    std::vector<int> last_use(code_.num_tensor_slots, -1);
    std::vector<bool> result(code_.num_tensor_slots, false);
    for (int32_t slot : code_.results) result[slot] = true;
    auto mark = [&](const Operand& operand, int k, auto& self) -> void {
      if (operand.kind == Operand::Kind::kTensor) last_use[operand.slot] = k;
      for (const Operand& item : operand.items) self(item, k, self);
    };
    for (size_t k = 0; k < code_.instructions.size(); ++k) {
      Instruction& instruction = code_.instructions[k];
      for (int32_t slot : instruction.outputs) last_use[slot] = static_cast<int>(k);
      for (const Operand& operand : instruction.operands) mark(operand, static_cast<int>(k), mark);
    }
    for (int32_t slot = 0; slot < code_.num_tensor_slots; ++slot) {
      if (!result[slot] && last_use[slot] >= 0) code_.instructions[last_use[slot]].release.push_back(slot);
    }
  }

  const FunctionDef& def_;
  const ModuleInfo& module_;
  RegionCode code_;
  std::map<std::string, RegionValue> param_values_;
  std::map<std::string, RegionValue> names_;
};

}  // namespace

RegionAttempt ExtractRegion(const FunctionDef& def, const ModuleInfo& module, const std::string& filename) {
  RegionAttempt attempt;
  Extractor extractor(def, module, filename);
  attempt.candidate = extractor.IsCandidate();
  if (!attempt.candidate) return attempt;
  try {
    attempt.code = extractor.Run();
  } catch (const NotARegion& failure) {
    attempt.reason = failure.reason;
    attempt.reason_loc = failure.loc;
    return attempt;
  }
  Status verified = regions::VerifyRegion(attempt.code);
  if (!verified.ok()) {
    attempt.reason = absl::StrCat("an internal compiler error (please report it): ", verified.message());
    attempt.reason_loc = def.name_loc;
    return attempt;
  }
  attempt.ok = true;
  return attempt;
}

}  // namespace ppy
