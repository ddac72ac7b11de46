#include "compiler/compile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/ast_reader.h"
#include "compiler/lower.h"
#include "compiler/region.h"
#include "vm/verify.h"

namespace ppy {

namespace {

// The statement of `body` (or nested in it) that starts on `line`, for a
// diagnostic about an instruction, which knows only its line.
const Stmt* StatementAt(const std::vector<StmtPtr>& body, int line) {
  for (const StmtPtr& stmt : body) {
    if (stmt->loc.line == line) return stmt.get();
    if (const Stmt* found = StatementAt(stmt->body, line)) return found;
    if (const Stmt* found = StatementAt(stmt->orelse, line)) return found;
  }
  return nullptr;
}

bool IsPrangeOp(Op op) {
  return op == Op::PRANGE || IsPrangeReduce(op) || op == Op::PRANGE_END;
}

// What must run without the GIL, checked on the lowered code, since it is
// the instructions that say what needs the GIL (NeedsGil, vm/instr.h: those
// vm/opcodes.def does not flag JIT, and those that name object registers).
//  * A prange loop's body runs on the prange threads, where the verifier
//    allows only such instructions (vm/verify.cpp): anything else there is
//    an error, at its line.
//  * A @ppy.nogil function takes the GIL back for such an instruction (vm/gil.h);
//    one in a loop would take it on every iteration, which defeats the
//    point: an error, at its line. (Outside loops it is allowed.)
void CheckThreadedCode(const FunctionInfo& info, const FunctionCode& fn, std::vector<Diagnostic>* diagnostics) {
  const int n = static_cast<int>(fn.code.size());
  std::set<int> reported;  // lines
  auto report = [&](int pc, const std::string& message) {
    const int line = fn.lines[pc];
    if (!reported.insert(line).second) return;
    const Stmt* stmt = StatementAt(info.def->body, line);
    Loc loc = stmt != nullptr ? stmt->loc : Loc{line, 0, line, 0};
    diagnostics->push_back({Severity::kError, loc, message});
  };
  auto needs_gil = [](const Instr& in) { return NeedsGil(in.op); };
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = fn.code[pc];
    if (in.op != Op::PRANGE) continue;
    for (int inner = PrangeChunkStart(fn.code, pc, in.d - 1); inner < in.d - 1; ++inner) {
      const Instr& body = fn.code[inner];
      if (needs_gil(body) || (body.op == Op::CALL_FN && body.a < fn.num_registers() &&
                              fn.registers[body.a].kind == Kind::kObject)) {
        report(inner, "this cannot run in a prange loop: it needs Python objects (the iterations run in parallel, "
                      "without the GIL: only typed code runs there: ints, floats, complex numbers, buffers, "
                      "calls of compiled functions that return them)");
      }
    }
  }
  if (!info.nogil) return;
  for (int pc = 0; pc < n; ++pc) {
    const Instr& back_edge = fn.code[pc];
    if (!HasFlag(back_edge.op, kFlagLoop)) continue;
    for (int inner = back_edge.d; inner <= pc; ++inner) {
      const Instr& body = fn.code[inner];
      if (IsPrangeOp(body.op) || !needs_gil(body)) continue;
      report(inner, absl::StrCat("@ppy.nogil function '", info.name, "' needs the GIL in a loop here: ",
                                 "it uses Python objects, so the loop would take the GIL back on every iteration"));
    }
  }
}

// ---- Object code: where CPython is as fast -----------------------------------------------
// An object instruction (vm/opcodes.def's OBJ) does what CPython's own
// instructions do, through the same C API, and machine code leaves it to the
// interpreter. CPython 3.11+ specializes such instructions in place (PEP 659);
// ppy's interpreter has fast paths and inline caches for the commonest ones,
// and comes out about even: on the object-only programs of
// benchmarks/objects.py it executes 0.75x to 1.10x of CPython's instructions
// (docs/benchmarks.md), faster on list loops, slower on dict subscripts and on
// small functions called from Python. Which one a function is cannot be told
// before it runs. A typed operation (int or float arithmetic or comparison, a
// buffer access, a math function, a typed call of a compiled function, a
// prange) is where ppy wins, by an order of magnitude in machine code and
// 5-10x in the interpreter; so is a subscript by a typed int (GETITEM_I: no
// int object per item read), which made object mode 0.62x of CPython's
// instructions on a list loop (examples/05_object_mode) and 0.75x on nbody
// (constant indices). So, never to be slower (issue 13), a function runs
// as Python, as if it had fallen back, when its typed operations are fewer
// than a fifth of its object operations, each counted 16 times per loop
// around it (the inner loops are the work), unless @ppy.native asks for it.
// Glue is neither: moves, truth tests and jumps, boxing and unboxing,
// returns, and the counter of a counted loop (FORPREP's guard included).
//
// A function with no operation at all, only glue, whose parameters and
// result are objects (`def on_step(self): pass`, `return p`), gains nothing
// compiled, and its calls from Python cost more: 798 instructions an
// iteration of a Python loop calling `return p` compiled, 570 as Python,
// the same as CPython's. A compiled loop's call of it costs 800 then (598
// compiled), against CPython's 811 for the same loop (docs/benchmarks.md):
// run as Python, neither caller is slower than under CPython. It runs as
// Python too.
constexpr const char* kObjectCodeReason =
    "mostly object operations, which CPython runs about as fast; @ppy.native compiles it";
constexpr const char* kGlueReason =
    "no operation but moving objects, which costs less as Python when called from Python; @ppy.native compiles it";

// Glue: an instruction that moves, tests, jumps, boxes or returns a value
// its neighbours made, which costs the same wherever the code runs.
bool IsGlue(Op op) {
  switch (op) {
    case Op::MOVE_I: case Op::MOVE_F: case Op::MOVE_O: case Op::MOVE_U:
    case Op::TRUTH_I: case Op::TRUTH_F: case Op::TRUTH_O: case Op::NOT:
    case Op::BOX_I: case Op::BOX_B: case Op::BOX_F: case Op::BOX_C:
    case Op::UNBOX_I: case Op::UNBOX_F: case Op::UNBOX_FE: case Op::UNBOX_C: case Op::UNBOX_B: case Op::UNBOX_INDEX:
    case Op::JMP: case Op::JT: case Op::JF: case Op::LOOP:
    case Op::FORPREP: case Op::FORLOOP: case Op::FORLOOP_INC:
    case Op::RET_I: case Op::RET_F: case Op::RET_O: case Op::RET_NONE:
    case Op::CHECK_BOUND_I: case Op::CHECK_BOUND_O: case Op::CHECK_BOUND_U:
      return true;
    default:
      return false;
  }
}

// Why `fn` runs as Python (kObjectCodeReason or kGlueReason), or null.
const char* ObjectCodeAsPython(const FunctionCode& fn) {
  const int n = static_cast<int>(fn.code.size());
  std::vector<int> depth(n + 1, 0);  // loops around each instruction, as a difference array
  std::vector<bool> counted_guard(n, false);
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = fn.code[pc];
    if (HasFlag(in.op, kFlagLoop) && in.d <= pc) {
      ++depth[in.d];
      --depth[pc + 1];
      // A counted loop's entry guard: the typed jump just before its body
      // that skips to the instruction after the back edge.
      if (in.d >= 1 && HasFlag(fn.code[in.d - 1].op, kFlagJump) && fn.code[in.d - 1].d == pc + 1) {
        counted_guard[in.d - 1] = true;
      }
    }
  }
  double typed = 0, object = 0;
  int level = 0;
  for (int pc = 0; pc < n; ++pc) {
    level += depth[pc];
    const double weight = std::pow(16.0, std::min(level, 8));
    const Op op = fn.code[pc].op;
    if (IsGlue(op) || counted_guard[pc]) continue;
    // A subscript by a typed int counts with the typed work: a list or tuple
    // item is read without the int object CPython makes for it. (A store by
    // one, SETITEM_I, saves the same int object but counts as object work
    // until measured: it is new, and a function it tipped would compile
    // where it ran as Python.)
    (HasFlag(op, kFlagObj) && op != Op::GETITEM_I ? object : typed) += weight;
  }
  if (object > 0) return typed * 5 < object ? kObjectCodeReason : nullptr;
  if (typed > 0 || KindOf(fn.result) != Kind::kObject) return nullptr;
  for (const Param& param : fn.params) {
    if (KindOf(param.type) != Kind::kObject) return nullptr;
  }
  return kGlueReason;
}

// A compiled function whose body is smaller than a call into compiled code
// costs more when Python calls it than CPython's own call of its Python
// function: CPython 3.11 runs a Python-to-Python call in its eval loop,
// without a C call, and passes the argument objects as they are, where a
// call of a Function unboxes them, enters machine code and boxes the result
// (about 25 ns more on the machines measured). What the compiled body saves
// depends on the operation: CPython specializes + - * of two floats or two
// ints and a comparison of two floats or two ints that decides a jump
// (BINARY_OP_ADD_FLOAT, COMPARE_OP_FLOAT_JUMP, ...: a few instructions and
// at most one new object), and runs every other operation through the
// generic protocol or a call (`/`, `//`, `%`, `**`, bit operations, a
// comparison whose bool is a value, an int with a float, abs, min, max, the
// math functions, conversions).
//
// Measured from a Python loop (benchmarks/calls.py --compiled, every def a
// Function; AMD EPYC, CPython 3.11.7, 5 December 2026, several runs),
// speed against CPython's: `return x` 0.75x-0.76x, `x * x` 0.97x-1.01x,
// `x if x > 0.0 else 0.0` 0.89x-0.91x, ints `a + b` 0.88x-0.94x. Two
// specialized operations, or one generic, are a coin toss: `a + b + c`
// 0.98x-1.09x, `a * b + c` of floats 1.06x-1.10x and of ints 0.94x-1.09x,
// `x / y` 1.00x-1.09x, `x > 0.0` as a bool 1.00x-1.09x, `abs(x)` 0.98x-1.16x.
// More wins: `a + (b - a) * t` 1.16x-1.34x, `n * 0.5` of an int 1.27x-1.31x,
// `(a ^ b) & 1023` 1.14x-1.30x, `lo <= x and x <= hi` 1.41x-1.51x,
// `math.sqrt(x)` 1.09x-1.21x.
//
// So a body weighs each operation by what CPython spends on it (SmallCallWeight:
// 1 specialized, 2 generic, 3 a math function), and a function of scalar
// parameters and result (nothing to borrow or own), with no loop and no
// call, whose body weighs 2 at most keeps its Python function for calls
// from Python (python_entry: the module binds the Python function to the
// name). The module's compiled functions still call the compiled code
// directly, or inline it, while the name holds that function.
constexpr const char* kSmallCallReason =
    "at most two operations CPython specializes, or one other: cheaper as Python than a call into compiled code; "
    "@ppy.native keeps it compiled";

// What an operation that is not glue costs CPython, in the units above: 1
// where CPython 3.11 specializes it (+ - * of two floats or two ints, a
// comparison of two floats or two ints that decides a branch), 3 for a math
// function (a global, an attribute and a call), 2 for the rest (the generic
// protocol, or a builtin's call).
int SmallCallWeight(Op op) {
  switch (op) {
    case Op::ADD_I: case Op::SUB_I: case Op::MUL_I: case Op::ADD_F: case Op::SUB_F: case Op::MUL_F:
    case Op::JLT_I: case Op::JLE_I: case Op::JEQ_I: case Op::JNE_I:
    case Op::JLT_F: case Op::JLE_F: case Op::JEQ_F: case Op::JNE_F: case Op::JNLT_F: case Op::JNLE_F:
      return 1;
    case Op::SQRT_F: case Op::MATH_F: case Op::MATH_FF: case Op::MATH_FI: case Op::MATH_FB:
      return 3;
    default:
      return 2;
  }
}

// Why calls from Python of `fn` run its Python function (kSmallCallReason), or null.
const char* SmallCallAsPython(const FunctionCode& fn) {
  auto scalar = [](ValueType type) {
    return type == ValueType::kInt || type == ValueType::kFloat || type == ValueType::kBool;
  };
  if (!(scalar(fn.result) || fn.result == ValueType::kNone)) return nullptr;
  for (const Param& param : fn.params) {
    if (!scalar(param.type)) return nullptr;
  }
  int weight = 0;
  for (const Instr& in : fn.code) {
    if (HasFlag(in.op, kFlagLoop) || HasFlag(in.op, kFlagCall) || HasFlag(in.op, kFlagObj)) return nullptr;
    if (!IsGlue(in.op) && (weight += SmallCallWeight(in.op)) > 2) return nullptr;
  }
  return kSmallCallReason;
}

}  // namespace

CompileResult CompileModule(PyObject* tree, const std::string& filename, const std::string& module_name,
                            bool regions, bool object_code_as_python) {
  CompileResult result;
  result.code = std::make_unique<ModuleCode>();
  result.code->module_name = module_name;
  result.code->filename = filename;
  std::unique_ptr<ModuleSyntax> syntax = ReadModule(tree);
  if (syntax == nullptr) return result;

  // A function can fail to lower only by exceeding the instruction format's
  // limits. It then runs as Python, and its callers are checked again so that
  // they call it as an object.
  std::map<int, std::string> forced_fallbacks;

  // Regions first: a function that becomes one is called as an object by the
  // compiled code around it, like a fallback.
  std::vector<RegionAttempt> attempts;
  {
    std::unique_ptr<ModuleInfo> scanned = CheckModule(*syntax, {});
    attempts.resize(scanned->functions.size());
    for (size_t i = 0; i < scanned->functions.size() && regions; ++i) {
      attempts[i] = ExtractRegion(*scanned->functions[i].def, *scanned, filename);
      if (attempts[i].ok) forced_fallbacks[static_cast<int>(i)] = "an ATen region";
    }
  }
  std::unique_ptr<ModuleInfo> info;
  std::vector<std::unique_ptr<FunctionCode>> lowered;
  std::vector<int> lowered_from;
  std::vector<Diagnostic> threaded_problems;  // CheckThreadedCode's, of every round
  //
  // The verifier runs on every lowered function too: code it rejects is a
  // compiler bug, and the function runs as Python rather than not at all.
  for (bool retry = true; retry;) {
    retry = false;
    bool object_code = false;
    info = CheckModule(*syntax, forced_fallbacks);
    lowered.clear();
    lowered_from.clear();
    for (size_t i = 0; i < info->functions.size() && !retry; ++i) {
      FunctionInfo& fn = info->functions[i];
      if (!fn.compiled) continue;
      absl::StatusOr<std::unique_ptr<FunctionCode>> code = LowerFunction(*info, fn);
      if (!code.ok()) {
        forced_fallbacks[static_cast<int>(i)] = std::string(code.status().message());
        retry = true;
        break;
      }
      // Code that must run without the GIL and cannot: errors at its lines;
      // the function runs as Python (and fails to import if it must compile).
      std::vector<Diagnostic> problems;
      CheckThreadedCode(fn, **code, &problems);
      if (!problems.empty()) {
        forced_fallbacks[static_cast<int>(i)] =
            absl::StrCat("code that needs the GIL where it must run without it (line ", problems[0].loc.line, ")");
        threaded_problems.insert(threaded_problems.end(), problems.begin(), problems.end());
        retry = true;
        break;
      }
      const char* as_python = object_code_as_python && !fn.native_required ? ObjectCodeAsPython(**code) : nullptr;
      if (as_python != nullptr) {
        forced_fallbacks[static_cast<int>(i)] = as_python;
        object_code = true;  // (every such function of this round, then check again)
        continue;
      }
      lowered.push_back(std::move(*code));
      lowered_from.push_back(static_cast<int>(i));
    }
    if (object_code) retry = true;
    if (retry) continue;
    ModuleCode check;
    check.functions = std::move(lowered);
    for (size_t k = 0; k < check.functions.size(); ++k) {
      Status verified = VerifyFunction(check, *check.functions[k]);
      if (!verified.ok()) {
        forced_fallbacks[lowered_from[k]] =
            absl::StrCat("an internal compiler error (please report it): ", std::string(verified.message()));
        retry = true;
      }
    }
    lowered = std::move(check.functions);
  }

  // Element-generic functions: the check above typed a bare `Buffer` as f64;
  // the module is checked again for each other element type, and each generic
  // function that compiled as f64 is lowered for it too (one that does not
  // check for an element type, say an int buffer given float stores, simply
  // has no specialization for it: calls with such buffers run as Python).
  std::map<int, std::vector<std::pair<int, std::unique_ptr<FunctionCode>>>> specialized;
  bool any_generic = false;
  for (const FunctionInfo& fn : info->functions) any_generic |= fn.compiled && fn.generic_param >= 0;
  for (int e = 1; any_generic && e < kElemTypeCount; ++e) {
    const ElemType elem = static_cast<ElemType>(e);
    // (Not bool: numpy's bool_ arithmetic is logic, True + True is True, where
    // Python's bool gives 2; a kernel written for numbers gets bools as Python.)
    if (elem == ElemType::kF64 || elem == ElemType::kBool) continue;
    std::unique_ptr<ModuleInfo> variant = CheckModule(*syntax, forced_fallbacks, elem);
    for (size_t i = 0; i < variant->functions.size(); ++i) {
      FunctionInfo& fn = variant->functions[i];
      if (fn.generic_param < 0 || !fn.compiled || !info->functions[i].compiled) continue;
      absl::StatusOr<std::unique_ptr<FunctionCode>> code = LowerFunction(*variant, fn);
      if (!code.ok()) continue;
      (*code)->qualname = absl::StrCat(fn.name, "[", InfoOf(elem).name, "]");
      specialized[static_cast<int>(i)].emplace_back(e, std::move(*code));
    }
  }
  // The AST now carries the last check's annotations; nothing below reads them.

  result.diagnostics = info->diagnostics;
  result.diagnostics.insert(result.diagnostics.end(), threaded_problems.begin(), threaded_problems.end());
  size_t next = 0;
  for (FunctionInfo& fn : info->functions) {
    FunctionReport report;
    RegionAttempt& attempt = attempts[&fn - info->functions.data()];
    if (attempt.ok) {
      report.region_index = static_cast<int>(result.regions.size());
      report.region_ops = static_cast<int>(attempt.code.instructions.size());
      result.regions.push_back(std::move(attempt.code));
    } else if (attempt.candidate) {
      report.region_reason = attempt.reason;
      report.region_reason_loc = attempt.reason_loc;
    }
    report.name = fn.name;
    report.line = fn.def->loc.line;
    report.statement_index = fn.statement_index;
    report.native_required = fn.native_required;
    report.compiled = fn.compiled;
    for (const LocalVariable& local : fn.locals) {
      if (!local.conflict_type.is_known() || !local.type.is_object()) continue;
      report.dynamic_locals.push_back(absl::StrCat(local.name, " (", local.first_type.name(), " at line ",
                                                   local.first_assignment.line, ", ", local.conflict_type.name(),
                                                   " at line ", local.conflict.line, ")"));
    }
    if (fn.compiled) {
      report.code_index = static_cast<int>(next);
      // (@ppy.native and @ppy.nogil ask for the compiled function itself. A
      // def with defaults keeps its Function, which refuses a change of them
      // that compiled callers, which bind what it was compiled with, would
      // not see; a def without has none to change.)
      const bool defaults = std::any_of(fn.def->params.begin(), fn.def->params.end(),
                                        [](const ParamSyntax& param) { return param.default_value != nullptr; });
      if (object_code_as_python && !fn.native_required && !defaults) {
        if (const char* why = SmallCallAsPython(*lowered[next])) report.python_entry = why;
      }
      result.code->functions.push_back(std::move(lowered[next++]));
      report.generic_param = fn.generic_param;
    } else {
      report.reason = fn.fallback_reason;
      // (No place to point at for object code: it is the whole function.)
      if (fn.fallback_reason != kObjectCodeReason && fn.fallback_reason != kGlueReason) {
        report.reason_loc = fn.fallback_loc;
      }
      if (fn.native_required && forced_fallbacks.count(static_cast<int>(&fn - info->functions.data()))) {
        result.diagnostics.push_back({Severity::kError, fn.def->name_loc,
                                      absl::StrCat(fn.nogil ? "@ppy.nogil" : "@ppy.native", " function '", fn.name,
                                                   "' cannot be compiled: ", fn.fallback_reason)});
      }
    }
    result.functions.push_back(std::move(report));
  }
  // Specializations follow the module's own functions in the code.
  for (auto& [index, variants] : specialized) {
    for (auto& [elem, code] : variants) {
      // Verified like the others, against the module's functions it may call.
      result.code->functions.push_back(std::move(code));
      if (!VerifyFunction(*result.code, *result.code->functions.back()).ok()) {
        result.code->functions.pop_back();
        continue;
      }
      result.functions[index].specializations.emplace_back(elem, static_cast<int>(result.code->functions.size()) - 1);
    }
  }
  return result;
}

}  // namespace ppy
