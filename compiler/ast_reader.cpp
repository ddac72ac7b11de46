// The only part of the compiler that touches CPython's ast objects. Each node
// is read by its class name; anything ppy does not compile becomes an
// Unsupported node naming the construct.

#include "compiler/ast_reader.h"

#include <cstring>
#include <string>

namespace ppy {
namespace {

// A new reference to node.name, or nullptr with an exception.
class Ref {
 public:
  explicit Ref(PyObject* object = nullptr) : object_(object) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  ~Ref() { Py_XDECREF(object_); }
  PyObject* get() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  PyObject* object_;
};

class Reader {
 public:
  bool failed() const { return failed_; }

  // Under `python -O` (sys.flags.optimize >= 1) an assert compiles to
  // nothing, as CPython's compiler drops it (the cache keeps entries of
  // each -O level apart: hook/ppy/_entry.py, check_entry).
  Reader() {
    PyObject* flags = PySys_GetObject("flags");  // borrowed
    Ref optimize(flags != nullptr ? PyObject_GetAttrString(flags, "optimize") : nullptr);
    if (!optimize) {
      PyErr_Clear();  // (no sys.flags.optimize: asserts stay)
      return;
    }
    strip_asserts_ = PyLong_Check(optimize.get()) && PyLong_AsLong(optimize.get()) >= 1;
  }

  std::unique_ptr<ModuleSyntax> Module(PyObject* tree) {
    auto module = std::make_unique<ModuleSyntax>();
    Ref body(Attr(tree, "body"));
    module->body = Statements(body.get());
    if (failed_) return nullptr;
    return module;
  }

 private:
  PyObject* Attr(PyObject* node, const char* name) {
    PyObject* value = PyObject_GetAttrString(node, name);
    if (value == nullptr) failed_ = true;
    return value;
  }

  int IntAttr(PyObject* node, const char* name) {
    Ref value(Attr(node, name));
    if (!value || value.get() == Py_None) return 0;
    return static_cast<int>(PyLong_AsLong(value.get()));
  }

  std::string StrAttr(PyObject* node, const char* name) {
    Ref value(Attr(node, name));
    if (!value || !PyUnicode_Check(value.get())) return "";
    const char* text = PyUnicode_AsUTF8(value.get());
    if (text == nullptr) {
      PyErr_Clear();
      return "";
    }
    return text;
  }

  static const char* KindOf(PyObject* node) { return Py_TYPE(node)->tp_name; }
  static bool Is(PyObject* node, const char* kind) { return std::strcmp(KindOf(node), kind) == 0; }

  Loc LocOf(PyObject* node) {
    Loc loc;
    loc.line = IntAttr(node, "lineno");
    loc.col = IntAttr(node, "col_offset");
    loc.end_line = IntAttr(node, "end_lineno");
    loc.end_col = IntAttr(node, "end_col_offset");
    return loc;
  }

  ExprPtr Unsupported(PyObject* node, const char* what) {
    auto expr = std::make_unique<Expr>();
    expr->kind = ExprKind::kUnsupported;
    expr->loc = LocOf(node);
    expr->text = what;
    return expr;
  }

  std::vector<ExprPtr> Expressions(PyObject* list) {
    std::vector<ExprPtr> out;
    if (list == nullptr || !PyList_Check(list)) return out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) out.push_back(Expression(PyList_GET_ITEM(list, i)));
    return out;
  }

  ExprPtr OptionalExpression(PyObject* node, const char* name) {
    Ref value(Attr(node, name));
    if (!value || value.get() == Py_None) return nullptr;
    return Expression(value.get());
  }

  static BinOp BinOpOf(PyObject* op) {
    static const struct {
      const char* name;
      BinOp op;
    } kOps[] = {{"Add", BinOp::kAdd},       {"Sub", BinOp::kSub},        {"Mult", BinOp::kMul},
                {"Div", BinOp::kDiv},       {"FloorDiv", BinOp::kFloorDiv}, {"Mod", BinOp::kMod},
                {"Pow", BinOp::kPow},       {"LShift", BinOp::kLShift},  {"RShift", BinOp::kRShift},
                {"BitOr", BinOp::kBitOr},   {"BitXor", BinOp::kBitXor},  {"BitAnd", BinOp::kBitAnd},
                {"MatMult", BinOp::kMatMul}};
    for (const auto& entry : kOps) {
      if (Is(op, entry.name)) return entry.op;
    }
    return BinOp::kAdd;
  }

  static CmpOp CmpOpOf(PyObject* op) {
    static const struct {
      const char* name;
      CmpOp op;
    } kOps[] = {{"Lt", CmpOp::kLt}, {"LtE", CmpOp::kLe}, {"Eq", CmpOp::kEq},       {"NotEq", CmpOp::kNe},
                {"Gt", CmpOp::kGt}, {"GtE", CmpOp::kGe}, {"Is", CmpOp::kIs},       {"IsNot", CmpOp::kIsNot},
                {"In", CmpOp::kIn}, {"NotIn", CmpOp::kNotIn}};
    for (const auto& entry : kOps) {
      if (Is(op, entry.name)) return entry.op;
    }
    return CmpOp::kEq;
  }

  ExprPtr Constant(PyObject* node, PyObject* value) {
    auto expr = std::make_unique<Expr>();
    expr->loc = LocOf(node);
    if (value == Py_None) {
      expr->kind = ExprKind::kNone;
    } else if (PyBool_Check(value)) {
      expr->kind = ExprKind::kBool;
      expr->int_value = value == Py_True;
    } else if (PyLong_Check(value)) {
      int overflow = 0;
      long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
      if (overflow == 0) {
        expr->kind = ExprKind::kInt;
        expr->int_value = number;
      } else {
        expr->kind = ExprKind::kBigInt;
        expr->object = Py_NewRef(value);
      }
    } else if (PyFloat_Check(value)) {
      expr->kind = ExprKind::kFloat;
      expr->float_value = PyFloat_AS_DOUBLE(value);
    } else {
      expr->kind = ExprKind::kConstant;
      expr->object = Py_NewRef(value);
      expr->type = PyComplex_CheckExact(value) ? Type::Complex()
                   : Type::Object(PyUnicode_Check(value) ? "str" : PyBytes_Check(value) ? "bytes" : nullptr);
    }
    return expr;
  }

  // Expressions nest as deep as CPython's parser lets them (a generated
  // `x + x + ... + x` is thousands deep), and every later pass recurses over
  // them on the C stack of whichever thread imports. Past this depth the rest
  // of an expression is not read: it becomes a construct ppy does not compile,
  // so its function runs as Python (CPython compiles it), and no pass recurses
  // deeper than this.
  static constexpr int kMaxExpressionDepth = 500;

  ExprPtr Expression(PyObject* node) {
    if (failed_) return nullptr;
    if (depth_ >= kMaxExpressionDepth) return Unsupported(node, "an expression nested too deeply");
    ++depth_;
    ExprPtr expr = ReadExpression(node);
    --depth_;
    return expr;
  }

  ExprPtr ReadExpression(PyObject* node) {
    auto expr = std::make_unique<Expr>();
    expr->loc = LocOf(node);
    if (Is(node, "Constant")) {
      Ref value(Attr(node, "value"));
      if (!value) return nullptr;
      return Constant(node, value.get());
    }
    if (Is(node, "Name")) {
      expr->kind = ExprKind::kName;
      expr->text = StrAttr(node, "id");
    } else if (Is(node, "Attribute")) {
      expr->kind = ExprKind::kAttribute;
      expr->text = StrAttr(node, "attr");
      expr->children.push_back(OptionalExpression(node, "value"));
    } else if (Is(node, "Subscript")) {
      expr->kind = ExprKind::kSubscript;
      expr->children.push_back(OptionalExpression(node, "value"));
      expr->children.push_back(OptionalExpression(node, "slice"));
    } else if (Is(node, "Slice")) {
      expr->kind = ExprKind::kSlice;
      expr->children.push_back(OptionalExpression(node, "lower"));
      expr->children.push_back(OptionalExpression(node, "upper"));
      expr->children.push_back(OptionalExpression(node, "step"));
    } else if (Is(node, "Call")) {
      expr->kind = ExprKind::kCall;
      expr->children.push_back(OptionalExpression(node, "func"));
      Ref args(Attr(node, "args"));
      for (ExprPtr& arg : Expressions(args.get())) expr->children.push_back(std::move(arg));
      Ref keywords(Attr(node, "keywords"));
      if (keywords && PyList_Check(keywords.get())) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keywords.get()); ++i) {
          PyObject* keyword = PyList_GET_ITEM(keywords.get(), i);
          Keyword kw;
          kw.name = StrAttr(keyword, "arg");
          kw.value = OptionalExpression(keyword, "value");
          kw.loc = LocOf(keyword);
          if (kw.name.empty()) return Unsupported(node, "a **mapping argument");
          expr->keywords.push_back(std::move(kw));
        }
      }
    } else if (Is(node, "BinOp")) {
      expr->kind = ExprKind::kBinary;
      Ref op(Attr(node, "op"));
      if (!op) return nullptr;
      expr->bin_op = BinOpOf(op.get());
      expr->children.push_back(OptionalExpression(node, "left"));
      expr->children.push_back(OptionalExpression(node, "right"));
    } else if (Is(node, "UnaryOp")) {
      expr->kind = ExprKind::kUnary;
      Ref op(Attr(node, "op"));
      if (!op) return nullptr;
      expr->un_op = Is(op.get(), "USub") ? UnOp::kNeg
                    : Is(op.get(), "UAdd") ? UnOp::kPos
                    : Is(op.get(), "Invert") ? UnOp::kInvert
                                             : UnOp::kNot;
      expr->children.push_back(OptionalExpression(node, "operand"));
    } else if (Is(node, "BoolOp")) {
      expr->kind = ExprKind::kBoolOp;
      Ref op(Attr(node, "op"));
      if (!op) return nullptr;
      expr->is_and = Is(op.get(), "And");
      Ref values(Attr(node, "values"));
      expr->children = Expressions(values.get());
    } else if (Is(node, "Compare")) {
      expr->kind = ExprKind::kCompare;
      expr->children.push_back(OptionalExpression(node, "left"));
      Ref ops(Attr(node, "ops"));
      Ref comparators(Attr(node, "comparators"));
      if (!ops || !comparators) return nullptr;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ops.get()); ++i) {
        expr->cmp_ops.push_back(CmpOpOf(PyList_GET_ITEM(ops.get(), i)));
      }
      for (ExprPtr& operand : Expressions(comparators.get())) expr->children.push_back(std::move(operand));
    } else if (Is(node, "IfExp")) {
      expr->kind = ExprKind::kIfExp;
      expr->children.push_back(OptionalExpression(node, "test"));
      expr->children.push_back(OptionalExpression(node, "body"));
      expr->children.push_back(OptionalExpression(node, "orelse"));
    } else if (Is(node, "Tuple") || Is(node, "List") || Is(node, "Set")) {
      expr->kind = Is(node, "Tuple") ? ExprKind::kTuple : Is(node, "List") ? ExprKind::kList : ExprKind::kSet;
      Ref elements(Attr(node, "elts"));
      expr->children = Expressions(elements.get());
      for (const ExprPtr& child : expr->children) {
        if (child && child->kind == ExprKind::kUnsupported && child->text == "a starred expression") {
          return Unsupported(node, "a starred element");
        }
      }
    } else if (Is(node, "Dict")) {
      expr->kind = ExprKind::kDict;
      Ref keys(Attr(node, "keys"));
      Ref values(Attr(node, "values"));
      if (!keys || !values) return nullptr;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys.get()); ++i) {
        PyObject* key = PyList_GET_ITEM(keys.get(), i);
        if (key == Py_None) return Unsupported(node, "a **mapping in a dict display");
        expr->children.push_back(Expression(key));
        expr->children.push_back(Expression(PyList_GET_ITEM(values.get(), i)));
      }
    } else if (Is(node, "JoinedStr")) {
      expr->kind = ExprKind::kJoinedStr;
      Ref values(Attr(node, "values"));
      expr->children = Expressions(values.get());
      expr->type = Type::Object("str");
    } else if (Is(node, "FormattedValue")) {
      expr->kind = ExprKind::kFormatted;
      expr->children.push_back(OptionalExpression(node, "value"));
      expr->children.push_back(OptionalExpression(node, "format_spec"));
      int conversion = IntAttr(node, "conversion");
      expr->conversion = conversion == 's' ? 1 : conversion == 'r' ? 2 : conversion == 'a' ? 3 : 0;
    } else if (Is(node, "Lambda")) {
      return Unsupported(node, "a lambda");
    } else if (Is(node, "ListComp") || Is(node, "SetComp") || Is(node, "DictComp")) {
      return Unsupported(node, "a comprehension");
    } else if (Is(node, "GeneratorExp")) {
      return Unsupported(node, "a generator expression");
    } else if (Is(node, "Yield") || Is(node, "YieldFrom")) {
      return Unsupported(node, "yield (a generator)");
    } else if (Is(node, "Await")) {
      return Unsupported(node, "await");
    } else if (Is(node, "NamedExpr")) {
      return Unsupported(node, "an assignment expression (:=)");
    } else if (Is(node, "Starred")) {
      return Unsupported(node, "a starred expression");
    } else {
      return Unsupported(node, "an expression ppy does not compile");
    }
    for (const ExprPtr& child : expr->children) {
      if (child && child->kind == ExprKind::kUnsupported && child->text == "a starred expression" &&
          expr->kind == ExprKind::kCall) {
        return Unsupported(node, "a *iterable argument");
      }
    }
    return expr;
  }

  // ---- Statements ---------------------------------------------------------------------------

  std::vector<StmtPtr> Statements(PyObject* list) {
    std::vector<StmtPtr> out;
    if (list == nullptr || !PyList_Check(list)) return out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) {
      StmtPtr stmt = Statement(PyList_GET_ITEM(list, i));
      if (failed_) return out;
      out.push_back(std::move(stmt));
    }
    return out;
  }

  StmtPtr UnsupportedStmt(PyObject* node, const char* what) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = StmtKind::kUnsupported;
    stmt->loc = LocOf(node);
    stmt->what = what;
    return stmt;
  }

  StmtPtr Statement(PyObject* node) {
    auto stmt = std::make_unique<Stmt>();
    stmt->loc = LocOf(node);
    if (Is(node, "Expr")) {
      stmt->kind = StmtKind::kExpr;
      stmt->value = OptionalExpression(node, "value");
    } else if (Is(node, "Assign")) {
      stmt->kind = StmtKind::kAssign;
      Ref targets(Attr(node, "targets"));
      stmt->targets = Expressions(targets.get());
      stmt->value = OptionalExpression(node, "value");
    } else if (Is(node, "AnnAssign")) {
      stmt->kind = StmtKind::kAnnAssign;
      stmt->targets.push_back(OptionalExpression(node, "target"));
      stmt->annotation = OptionalExpression(node, "annotation");
      stmt->value = OptionalExpression(node, "value");
    } else if (Is(node, "AugAssign")) {
      stmt->kind = StmtKind::kAugAssign;
      stmt->targets.push_back(OptionalExpression(node, "target"));
      Ref op(Attr(node, "op"));
      if (!op) return nullptr;
      stmt->bin_op = BinOpOf(op.get());
      stmt->value = OptionalExpression(node, "value");
    } else if (Is(node, "Return")) {
      stmt->kind = StmtKind::kReturn;
      stmt->value = OptionalExpression(node, "value");
    } else if (Is(node, "Pass")) {
      stmt->kind = StmtKind::kPass;
    } else if (Is(node, "Break")) {
      stmt->kind = StmtKind::kBreak;
    } else if (Is(node, "Continue")) {
      stmt->kind = StmtKind::kContinue;
    } else if (Is(node, "If") || Is(node, "While")) {
      stmt->kind = Is(node, "If") ? StmtKind::kIf : StmtKind::kWhile;
      stmt->test = OptionalExpression(node, "test");
      Ref body(Attr(node, "body"));
      Ref orelse(Attr(node, "orelse"));
      stmt->body = Statements(body.get());
      stmt->orelse = Statements(orelse.get());
    } else if (Is(node, "For")) {
      stmt->kind = StmtKind::kFor;
      stmt->targets.push_back(OptionalExpression(node, "target"));
      stmt->value = OptionalExpression(node, "iter");
      Ref body(Attr(node, "body"));
      Ref orelse(Attr(node, "orelse"));
      stmt->body = Statements(body.get());
      stmt->orelse = Statements(orelse.get());
    } else if (Is(node, "Assert") && strip_asserts_) {
      stmt->kind = StmtKind::kPass;
    } else if (Is(node, "Assert")) {
      stmt->kind = StmtKind::kAssert;
      stmt->test = OptionalExpression(node, "test");
      stmt->value = OptionalExpression(node, "msg");
    } else if (Is(node, "Raise")) {
      Ref cause(Attr(node, "cause"));
      if (cause && cause.get() != Py_None) return UnsupportedStmt(node, "raise ... from");
      Ref exc(Attr(node, "exc"));
      if (!exc || exc.get() == Py_None) return UnsupportedStmt(node, "a bare raise");
      stmt->kind = StmtKind::kRaise;
      stmt->value = Expression(exc.get());
    } else if (Is(node, "Global")) {
      stmt->kind = StmtKind::kGlobal;
      Ref names(Attr(node, "names"));
      for (Py_ssize_t i = 0; names && i < PyList_GET_SIZE(names.get()); ++i) {
        const char* name = PyUnicode_AsUTF8(PyList_GET_ITEM(names.get(), i));
        stmt->names.emplace_back(name ? name : "", "");
      }
    } else if (Is(node, "Import")) {
      stmt->kind = StmtKind::kImport;
      Ref names(Attr(node, "names"));
      for (Py_ssize_t i = 0; names && i < PyList_GET_SIZE(names.get()); ++i) {
        PyObject* alias = PyList_GET_ITEM(names.get(), i);
        stmt->names.emplace_back(StrAttr(alias, "name"), StrAttr(alias, "asname"));
      }
    } else if (Is(node, "ImportFrom")) {
      // Module-level `from x import y` is read for the checker's global scope;
      // inside a function it is a fallback.
      stmt->kind = StmtKind::kUnsupported;
      stmt->what = "from ... import";
      std::string module = StrAttr(node, "module");
      int level = IntAttr(node, "level");
      Ref names(Attr(node, "names"));
      stmt->names.emplace_back(std::string(level, '.') + module, "");
      for (Py_ssize_t i = 0; names && i < PyList_GET_SIZE(names.get()); ++i) {
        PyObject* alias = PyList_GET_ITEM(names.get(), i);
        stmt->names.emplace_back(StrAttr(alias, "name"), StrAttr(alias, "asname"));
      }
    } else if (Is(node, "FunctionDef") || Is(node, "AsyncFunctionDef")) {
      stmt->kind = StmtKind::kFunctionDef;
      stmt->function = Function(node);
    } else if (Is(node, "ClassDef")) {
      stmt = UnsupportedStmt(node, "a class definition");
      stmt->names.emplace_back(StrAttr(node, "name"), "");
    } else if (Is(node, "With") || Is(node, "AsyncWith")) {
      return UnsupportedStmt(node, "a with statement");
    } else if (Is(node, "Try") || Is(node, "TryStar")) {
      return UnsupportedStmt(node, "a try statement");
    } else if (Is(node, "Delete")) {
      return UnsupportedStmt(node, "a del statement");
    } else if (Is(node, "Nonlocal")) {
      return UnsupportedStmt(node, "a nonlocal declaration");
    } else if (Is(node, "TypeAlias")) {
      return UnsupportedStmt(node, "a type alias (type X = ...)");
    } else if (Is(node, "Match")) {
      return UnsupportedStmt(node, "a match statement");
    } else if (Is(node, "AsyncFor")) {
      return UnsupportedStmt(node, "async for");
    } else {
      return UnsupportedStmt(node, "a statement ppy does not compile");
    }
    return stmt;
  }

  std::unique_ptr<FunctionDef> Function(PyObject* node) {
    auto fn = std::make_unique<FunctionDef>();
    fn->name = StrAttr(node, "name");
    fn->loc = LocOf(node);
    fn->is_async = Is(node, "AsyncFunctionDef");
    // The name's position: CPython gives none, so point at `def`.
    fn->name_loc = fn->loc;
    fn->name_loc.end_line = fn->loc.line;
    fn->name_loc.end_col = fn->loc.col + 3;
    Ref decorators(Attr(node, "decorator_list"));
    fn->decorators = Expressions(decorators.get());
    if (!fn->decorators.empty()) {
      // With decorators, CPython's lineno is the def's, which is what we want.
    }
    fn->returns = OptionalExpression(node, "returns");
    // 3.12's type parameters (`def f[T](x: T)`): the function stays Python,
    // which gives T its meaning. Older Pythons have no such field.
    if (PyObject_HasAttrString(node, "type_params")) {
      Ref type_params(Attr(node, "type_params"));
      if (type_params && PyList_Check(type_params.get()) && PyList_GET_SIZE(type_params.get()) > 0) {
        fn->has_type_params = true;
        fn->type_params_loc = LocOf(PyList_GET_ITEM(type_params.get(), 0));
      }
    }
    Ref args(Attr(node, "args"));
    if (!args) return fn;
    Ref posonly(Attr(args.get(), "posonlyargs"));
    Ref positional(Attr(args.get(), "args"));
    Ref kwonly(Attr(args.get(), "kwonlyargs"));
    Ref defaults(Attr(args.get(), "defaults"));
    Ref kw_defaults(Attr(args.get(), "kw_defaults"));
    Ref vararg(Attr(args.get(), "vararg"));
    Ref kwarg(Attr(args.get(), "kwarg"));
    if (failed_) return fn;
    auto add = [&](PyObject* list, ParamKind kind) {
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) {
        PyObject* arg = PyList_GET_ITEM(list, i);
        ParamSyntax param;
        param.name = StrAttr(arg, "arg");
        param.annotation = OptionalExpression(arg, "annotation");
        param.kind = kind;
        param.loc = LocOf(arg);
        fn->params.push_back(std::move(param));
      }
    };
    add(posonly.get(), ParamKind::kPositionalOnly);
    add(positional.get(), ParamKind::kPositional);
    size_t num_positional = fn->params.size();
    add(kwonly.get(), ParamKind::kKeywordOnly);
    Py_ssize_t num_defaults = PyList_GET_SIZE(defaults.get());
    for (Py_ssize_t i = 0; i < num_defaults; ++i) {
      fn->params[num_positional - num_defaults + i].default_value = Expression(PyList_GET_ITEM(defaults.get(), i));
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kw_defaults.get()); ++i) {
      PyObject* value = PyList_GET_ITEM(kw_defaults.get(), i);
      if (value != Py_None) fn->params[num_positional + i].default_value = Expression(value);
    }
    if (vararg.get() != Py_None) {
      fn->star_params = "*" + StrAttr(vararg.get(), "arg");
      fn->star_loc = LocOf(vararg.get());
    } else if (kwarg.get() != Py_None) {
      fn->star_params = "**" + StrAttr(kwarg.get(), "arg");
      fn->star_loc = LocOf(kwarg.get());
    }
    Ref body(Attr(node, "body"));
    fn->body = Statements(body.get());
    // A leading string constant is the docstring, not code.
    if (!fn->body.empty() && fn->body[0]->kind == StmtKind::kExpr && fn->body[0]->value &&
        fn->body[0]->value->kind == ExprKind::kConstant && PyUnicode_Check(fn->body[0]->value->object)) {
      fn->doc = Py_NewRef(fn->body[0]->value->object);
      fn->body.erase(fn->body.begin());
    }
    return fn;
  }

  bool failed_ = false;
  bool strip_asserts_ = false;
  int depth_ = 0;  // of the expression being read
};

}  // namespace

PyObject* ParseSource(std::string_view source, std::string_view filename) {
  PyObject* ast = PyImport_ImportModule("ast");
  if (ast == nullptr) return nullptr;
  PyObject* text = PyUnicode_DecodeUTF8(source.data(), source.size(), "strict");
  PyObject* name = PyUnicode_DecodeFSDefaultAndSize(filename.data(), filename.size());
  PyObject* tree = nullptr;
  if (text != nullptr && name != nullptr) {
    tree = PyObject_CallMethod(ast, "parse", "OO", text, name);
  }
  if (tree != nullptr) {
    // The parser accepts what CPython's compiler then rejects (`break` outside
    // a loop, a duplicate argument, `return` outside a function, a parameter
    // declared nonlocal, ...). Compiling the source as CPython would raises its
    // SyntaxError with its message and location, so ppy refuses exactly what
    // CPython refuses, and the rest of the compiler never sees such a tree.
    // The text is already decoded: a coding cookie must not decode it again.
    PyCompilerFlags flags = _PyCompilerFlags_INIT;
    flags.cf_flags = PyCF_IGNORE_COOKIE;
    const char* utf8 = PyUnicode_AsUTF8(text);
    PyObject* code = utf8 ? Py_CompileStringObject(utf8, name, Py_file_input, &flags, -1) : nullptr;
    if (code == nullptr) Py_CLEAR(tree);
    Py_XDECREF(code);
  }
  Py_XDECREF(text);
  Py_XDECREF(name);
  Py_DECREF(ast);
  return tree;
}

std::unique_ptr<ModuleSyntax> ReadModule(PyObject* tree) {
  Reader reader;
  std::unique_ptr<ModuleSyntax> module = reader.Module(tree);
  if (reader.failed()) return nullptr;
  return module;
}

const char* SymbolOf(BinOp op) {
  static const char* kSymbols[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "|", "^", "&", "@"};
  return kSymbols[static_cast<int>(op)];
}

const char* SymbolOf(CmpOp op) {
  static const char* kSymbols[] = {"<", "<=", "==", "!=", ">", ">=", "is", "is not", "in", "not in"};
  return kSymbols[static_cast<int>(op)];
}

}  // namespace ppy
