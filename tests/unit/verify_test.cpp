// The verifier stands between untrusted bytes and the interpreter: each test
// hands it one defect and expects a rejection that names the function and pc.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/test_util.h"
#include "vm/serialize.h"
#include "vm/bytes.h"
#include "vm/interpreter.h"
#include "vm/loader.h"
#include "vm/verify.h"

namespace ppy {
namespace {

// f(x: int) -> int with registers [x, const 1, temp], returning x + 1.
std::unique_ptr<ModuleCode> Sample() {
  auto module = std::make_unique<ModuleCode>();
  module->filename = "sample.ppy";
  auto fn = std::make_unique<FunctionCode>();
  fn->name = fn->qualname = "f";
  fn->params.push_back({"x", ValueType::kInt, ElemType::kNone, false});
  fn->result = ValueType::kInt;
  fn->registers = {{Kind::kInt}, {Kind::kInt}, {Kind::kInt}, {Kind::kObject}};
  fn->constants = {{Kind::kInt, 1}};
  fn->code = {{Op::ADD_I, 2, 0, 1, 0}, {Op::RET_I, 2, 0, 0, 0}};
  fn->lines = {1, 1};
  module->functions.push_back(std::move(fn));
  return module;
}

std::string Verify(const ModuleCode& module) {
  Status status = VerifyModule(module);
  return status.ok() ? "ok" : std::string(status.message());
}

TEST(Verifier, AcceptsWellFormedCode) { EXPECT_EQ(Verify(*Sample()), "ok"); }

TEST(Verifier, RejectsRegisterOutOfRange) {
  auto module = Sample();
  module->functions[0]->code[0].c = 9;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (ADD_I): register 9 is out of range");
}

TEST(Verifier, RejectsRegisterOfTheWrongKind) {
  auto module = Sample();
  module->functions[0]->code[0].b = 3;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (ADD_I): register 3 has the wrong kind");
}

TEST(Verifier, RejectsWritesToConstants) {
  auto module = Sample();
  module->functions[0]->code[0].a = 1;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (ADD_I): writes constant register 1");
}

TEST(Verifier, RejectsJumpTargetsOutsideTheCode) {
  auto module = Sample();
  module->functions[0]->code.insert(module->functions[0]->code.begin(), {Op::JMP, 0, 0, 0, 7});
  module->functions[0]->lines.push_back(1);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (JMP): jump target out of range");
}

TEST(Verifier, RejectsCodeThatRunsOffTheEnd) {
  auto module = Sample();
  module->functions[0]->code.pop_back();
  module->functions[0]->lines.pop_back();
  EXPECT_EQ(Verify(*module), "verify f: control runs off the end of the code");
}

TEST(Verifier, RejectsUnknownOpcodes) {
  auto module = Sample();
  module->functions[0]->code[0].op = static_cast<Op>(kOpCount);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (" + std::string("?") + "): unknown opcode");
}

TEST(Verifier, RejectsAnUnknownLastOpcode) {
  auto module = Sample();
  module->functions[0]->code[1].op = static_cast<Op>(255);
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (?): unknown opcode");
}

TEST(Verifier, RejectsSetUnusedOperands) {
  auto module = Sample();
  module->functions[0]->code[1].b = 1;
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (RET_I): unused operand B is set");
}

TEST(Verifier, RejectsReadingAnObjectRegisterBeforeItIsAssigned) {
  auto module = Sample();
  FunctionCode& fn = *module->functions[0];
  fn.result = ValueType::kObject;
  fn.code = {{Op::RET_O, 3, 0, 0, 0}};
  fn.lines = {1};
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (RET_O): reads register 3 before it is assigned on every path");
}

TEST(Verifier, RejectsAReturnOfTheWrongKind) {
  auto module = Sample();
  module->functions[0]->code[1] = {Op::RET_NONE, 0, 0, 0, 0};
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (RET_NONE): returns an object from a typed function");
}

TEST(Verifier, RejectsATypedCallWithTheWrongArity) {
  auto module = Sample();
  FunctionCode& fn = *module->functions[0];
  fn.code.insert(fn.code.begin(), {Op::CALL_FN, 2, 0, 2, 0});
  fn.lines.push_back(1);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (CALL_FN): argument count does not match the callee");
}

TEST(Verifier, RejectsAMismatchedLineTable) {
  auto module = Sample();
  module->functions[0]->lines.pop_back();
  EXPECT_EQ(Verify(*module), "verify f: the line table does not match the code");
}

// ---- Hand-built functions ------------------------------------------------------------------

const RegisterType kI{Kind::kInt}, kF{Kind::kFloat}, kO{Kind::kObject};
RegisterType Buf(ElemType elem) { return {Kind::kBuffer, elem}; }
Param IntParam(const char* name) { return {name, ValueType::kInt, ElemType::kNone, false}; }
Param ObjectParam(const char* name) { return {name, ValueType::kObject, ElemType::kNone, false}; }
Param BufferParam(const char* name, ElemType elem) { return {name, ValueType::kBuffer, elem, false}; }

// A module of one function f: its parameters (the first registers), registers,
// constant registers (after the parameters), code (all on line 1) and result.
std::unique_ptr<ModuleCode> Function(std::vector<Param> params, std::vector<RegisterType> registers,
                                     std::vector<ConstantValue> constants, std::vector<Instr> code,
                                     ValueType result) {
  auto module = std::make_unique<ModuleCode>();
  module->filename = "sample.ppy";
  auto fn = std::make_unique<FunctionCode>();
  fn->name = fn->qualname = "f";
  fn->params = std::move(params);
  fn->registers = std::move(registers);
  fn->constants = std::move(constants);
  fn->code = std::move(code);
  fn->lines.assign(fn->code.size(), 1);
  fn->result = result;
  module->functions.push_back(std::move(fn));
  return module;
}

// ---- Operand ranges in both directions ------------------------------------------------------

// A valid operand for `mode` in field A, B or C of a function whose registers
// are 0, 1, 9 int; 2, 3 float; 4, 5, 6 object; 7 Buffer[f64]; 8 Buffer[i64].
uint8_t ValidOperand(Mode mode, char field) {
  switch (mode) {
    case Mode::krI:
    case Mode::kwI:
    case Mode::kuI: return field == 'A' ? 0 : field == 'B' ? 1 : 9;
    case Mode::krF:
    case Mode::kwF: return field == 'B' ? 3 : 2;
    case Mode::krC:
    case Mode::kwC: return 2;  // the pair 2, 3
    case Mode::krO:
    case Mode::kwO: return field == 'A' ? 4 : field == 'B' ? 5 : 6;
    case Mode::ksO:
    case Mode::ktO:
    case Mode::kcO: return 4;
    case Mode::krU:
    case Mode::kwU:
    case Mode::krUd:
    case Mode::krUf: return 7;
    case Mode::krUq:
    case Mode::krUi: return 8;
    case Mode::kN: return 1;
    default: return 0;
  }
}

// What the verifier says of operand D = d outside its range, by D's mode.
std::string OutOfRange(Mode mode, int64_t d) {
  switch (mode) {
    case Mode::k__: return "unused operand D is set";
    case Mode::kJ: return "jump target out of range";
    case Mode::kK: return "constant index out of range";
    case Mode::kP: return "function index out of range";
    case Mode::kN: return "count out of range";
    case Mode::kM: return "math function out of range";
    case Mode::kY: return "binary operator out of range";
    case Mode::kE: return "unary operator out of range";
    case Mode::kQ: return "comparison out of range";
    case Mode::kV: return "conversion out of range";
    case Mode::krX:
    case Mode::ksO:
    case Mode::ktO:
    case Mode::kcO: return Cat("register span at ", d, " is out of range");
    default: return Cat("register ", d, " is out of range");
  }
}

// D is a signed field: a negative register there (LOADX_*, STOREX_*,
// FORMAT_SPEC) passed a check of the upper bound only and indexed below the
// frame. Every instruction of the table, with valid A, B and C, is rejected for
// each D below zero, and for a register D just past the frame.
TEST(Verifier, ChecksOperandDOfEveryInstructionInBothDirections) {
  int register_d = 0;
  for (int op = 0; op < kOpCount; ++op) {
    const OpInfo& info = kOpInfo[op];
    Instr in{static_cast<Op>(op), ValidOperand(info.a, 'A'), ValidOperand(info.b, 'B'), ValidOperand(info.c, 'C'), 0};
    const bool names_register = OutOfRange(info.d, 0).rfind("register", 0) == 0;
    register_d += names_register;
    std::vector<int32_t> values = {-1, -7, INT32_MIN};
    if (names_register) values.push_back(10);
    for (int32_t d : values) {
      in.d = d;
      auto module = Function({}, {kI, kI, kF, kF, kO, kO, kO, Buf(ElemType::kF64), Buf(ElemType::kI64), kI}, {},
                             {in, {Op::RET_NONE}}, ValueType::kObject);
      module->functions[0]->objects.push_back(PyUnicode_FromString("name"));
      EXPECT_EQ(Verify(*module), Cat("verify f: pc 0 (", info.name, "): ", OutOfRange(info.d, d)));
    }
  }
  EXPECT_GE(register_d, 5);  // LOADX_F64, LOADX_I64, STOREX_F64, STOREX_I64, FORMAT_SPEC
}

TEST(Verifier, RejectsANegativeIndexRegisterInAFusedLoad) {
  // f(xs: Buffer[f64], i: int) -> float: return xs[i + i]
  auto module = Function({BufferParam("xs", ElemType::kF64), IntParam("i")}, {Buf(ElemType::kF64), kI, kF}, {},
                         {{Op::LOADX_F64, 2, 0, 1, 1}, {Op::RET_F, 2}}, ValueType::kFloat);
  EXPECT_EQ(Verify(*module), "ok");
  module->functions[0]->code[0].d = -1;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (LOADX_F64): register -1 is out of range");
}

TEST(Verifier, RejectsANegativeFormatSpecRegister) {
  // f(x: object, spec: object) -> object: return format(x, spec)
  auto module = Function({ObjectParam("x"), ObjectParam("spec")}, {kO, kO, kO}, {},
                         {{Op::FORMAT_SPEC, 2, 0, 0, 1}, {Op::RET_O, 2}}, ValueType::kObject);
  EXPECT_EQ(Verify(*module), "ok");
  module->functions[0]->code[0].d = -2;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (FORMAT_SPEC): register -2 is out of range");
}

TEST(Verifier, ChecksTheSpanOfASliceReadOrAssigned) {
  // f(a: object, lo: object, hi: object) -> object:
  //     b = a[lo:hi]; a[lo:hi] = b; return b
  auto module = Function({ObjectParam("a"), ObjectParam("lo"), ObjectParam("hi")}, {kO, kO, kO, kO, kO}, {},
                         {{Op::GETSLICE, 3, 0, 3}, {Op::SETSLICE, 3, 0, 3}, {Op::RET_O, 3}}, ValueType::kObject);
  EXPECT_EQ(Verify(*module), "ok");
  FunctionCode& fn = *module->functions[0];
  fn.code[0].c = 2;  // a container and one part: no slice
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (GETSLICE): bad slice span");
  fn.code[0].c = 5;
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (GETSLICE): bad slice span");
  fn.code[0].c = 4;  // a step in register 3, which nothing has assigned
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (GETSLICE): reads register 3 before it is assigned on every path");
  fn.code[0].c = 3;
  fn.code[1].b = 2;  // the span 2, 3, 4: past the last register
  EXPECT_NE(Verify(*module), "ok");
  fn.code[1].b = 0;
  fn.code[1].c = 1;
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (SETSLICE): bad slice span");
}

// ---- Register kinds the interpreter and the machine code assume -----------------------------

TEST(Verifier, RejectsABufferMoveBetweenElementTypes) {
  // f(data: Buffer[u8]) -> int: view = data; return len(view), with view a Buffer[f64].
  auto module = Function({BufferParam("data", ElemType::kU8)}, {Buf(ElemType::kU8), Buf(ElemType::kU8), kI}, {},
                         {{Op::MOVE_U, 1, 0}, {Op::LEN_U, 2, 1}, {Op::RET_I, 2}}, ValueType::kInt);
  EXPECT_EQ(Verify(*module), "ok");
  module->functions[0]->registers[1] = Buf(ElemType::kF64);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (MOVE_U): copies buffer register 0 into register 1 of another element type or dimensions");
}

RegisterType Buf2(ElemType elem) {
  RegisterType type{Kind::kBuffer, elem};
  type.ndim = 2;
  return type;
}
Param BufferParam2(const char* name, ElemType elem) {
  Param param = BufferParam(name, elem);
  param.ndim = 2;
  return param;
}

TEST(Verifier, ChecksAxesAndDimensionsOfNdBufferInstructions) {
  // f(a: Buffer[f64, 2], i: int) -> float: return a[i, i]
  auto module = Function({BufferParam2("a", ElemType::kF64), IntParam("i")}, {Buf2(ElemType::kF64), kI, kI, kI, kF},
                         {},
                         {{Op::INDEX_U, 2, 0, 0, 1},
                          {Op::INDEX_U, 3, 0, 1, 1},
                          {Op::ADD_I, 2, 2, 3},
                          {Op::LOADN_F, 4, 0, 2},
                          {Op::RET_F, 4}},
                         ValueType::kFloat);
  EXPECT_EQ(Verify(*module), "ok");
  FunctionCode& fn = *module->functions[0];
  fn.code[1].c = 2;  // a third axis of a 2-D buffer
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (INDEX_U): axis out of range for the buffer");
  fn.code[1] = {Op::SHAPE_U, 3, 0, 2};
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (SHAPE_U): axis out of range for the buffer");
  fn.code[1] = {Op::INDEX_U, 3, 0, 1, 1};
  fn.code[3] = {Op::LOAD_F64, 4, 0, 2};  // one index into a 2-D buffer
  EXPECT_EQ(Verify(*module), "verify f: pc 3 (LOAD_F64): indexes a multi-dimensional buffer with one index");
  fn.code[3] = {Op::LOADN_F, 4, 0, 2};
  fn.params[0].ndim = 1;  // the parameter says 1-D, its register 2-D
  EXPECT_EQ(Verify(*module), "verify f: parameter a has the wrong register");
  fn.params[0].ndim = kMaxDims + 1;
  fn.registers[0].ndim = kMaxDims + 1;
  EXPECT_EQ(Verify(*module), "verify f: parameter a has a bad number of dimensions");
}

TEST(Verifier, ChecksBothRegistersOfAComplexPair) {
  // f(z: complex) -> complex: return z / z, with z unboxed into the pair 1, 2
  auto module = Function({{"z", ValueType::kComplex, ElemType::kNone, false}}, {kO, kF, kF, kF, kF, kO}, {},
                         {{Op::UNBOX_C, 1, 0},
                          {Op::DIV_C, 3, 1, 1},
                          {Op::BOX_C, 5, 3},
                          {Op::RET_O, 5}},
                         ValueType::kComplex);
  EXPECT_EQ(Verify(*module), "ok");
  FunctionCode& fn = *module->functions[0];
  fn.code[1].c = 2;  // the pair 2, 3: floats, so well-formed (if not what f means)
  EXPECT_EQ(Verify(*module), "ok");
  fn.code[1].c = 4;  // the pair 4, 5: an object register for the imaginary part
  EXPECT_EQ(Verify(*module), "verify f: pc 1 (DIV_C): register 5 has the wrong kind");
  fn.code[1].c = 1;
  fn.code[2].b = 4;  // the pair 4, 5: its second register an object
  EXPECT_EQ(Verify(*module), "verify f: pc 2 (BOX_C): register 5 has the wrong kind");
  fn.code[2].b = 5;  // the pair 5, 6: past the last register
  EXPECT_NE(Verify(*module), "ok");
  fn.code[2].b = 3;
  fn.code[0].a = 0;  // writing the boxed parameter's register as a float
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (UNBOX_C): register 0 has the wrong kind");
}

TEST(Verifier, RejectsATypedCallPassingABufferOfAnotherElementType) {
  // g(xs: Buffer[f64]) -> int: return len(xs); f(data: Buffer[u8]) -> int: return g(data)
  auto module = Function({BufferParam("data", ElemType::kU8)}, {Buf(ElemType::kU8), kI}, {},
                         {{Op::CALL_FN, 1, 0, 1, 1}, {Op::RET_I, 1}}, ValueType::kInt);
  auto callee = Function({BufferParam("xs", ElemType::kF64)}, {Buf(ElemType::kF64), kI}, {},
                         {{Op::LEN_U, 1, 0}, {Op::RET_I, 1}}, ValueType::kInt);
  module->functions.push_back(std::move(callee->functions[0]));
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (CALL_FN): argument 0 has the wrong kind");
}

// ---- FOR_ITER reads an iterator ----------------------------------------------------------------

// f(xs: object) -> None: for item in <register 2>: pass
std::vector<Instr> IterationLoop(Op make_iterator) {
  return {{make_iterator, 2, 0}, {Op::FOR_ITER, 1, 2, 0, 3}, {Op::LOOP, 0, 0, 0, 1}, {Op::RET_NONE}};
}

TEST(Verifier, AcceptsFOR_ITEROverAnIteratorFromGET_ITER) {
  auto module = Function({ObjectParam("xs")}, {kO, kO, kO}, {}, IterationLoop(Op::GET_ITER), ValueType::kNone);
  EXPECT_EQ(Verify(*module), "ok");
}

TEST(Verifier, RejectsFOR_ITEROverAnObjectThatIsNotAnIterator) {
  // PyIter_Next on a list is a SIGSEGV: a list has no tp_iternext.
  auto module = Function({ObjectParam("xs")}, {kO, kO, kO}, {}, IterationLoop(Op::MOVE_O), ValueType::kNone);
  EXPECT_EQ(Verify(*module),
            "verify f: pc 1 (FOR_ITER): reads register 2, which does not hold an iterator from GET_ITER on every path");
  // The parameter itself.
  module->functions[0]->code[1].b = 0;
  EXPECT_EQ(Verify(*module),
            "verify f: pc 1 (FOR_ITER): reads register 0, which does not hold an iterator from GET_ITER on every path");
}

TEST(Verifier, RejectsFOR_ITERAfterTheIteratorIsOverwrittenOnAPath) {
  // The loop's body overwrites the iterator with the item it got.
  auto module = Function({ObjectParam("xs")}, {kO, kO, kO}, {},
                         {{Op::GET_ITER, 2, 0},
                          {Op::FOR_ITER, 1, 2, 0, 4},
                          {Op::MOVE_O, 2, 1},
                          {Op::LOOP, 0, 0, 0, 1},
                          {Op::RET_NONE}},
                         ValueType::kNone);
  EXPECT_EQ(Verify(*module),
            "verify f: pc 1 (FOR_ITER): reads register 2, which does not hold an iterator from GET_ITER on every path");
  // FOR_ITER writing its item over its own iterator.
  module = Function({ObjectParam("xs")}, {kO, kO}, {},
                    {{Op::GET_ITER, 1, 0}, {Op::FOR_ITER, 1, 1, 0, 3}, {Op::LOOP, 0, 0, 0, 1}, {Op::RET_NONE}},
                    ValueType::kNone);
  EXPECT_EQ(Verify(*module),
            "verify f: pc 1 (FOR_ITER): reads register 1, which does not hold an iterator from GET_ITER on every path");
}

// ---- The shape of FORLOOP_INC loops ----------------------------------------------------------

// f(n: int) -> int: total = 0; for i in range(n): total += i; return total
//   registers: n, the constant 0, i, total
std::unique_ptr<ModuleCode> RangeLoop() {
  return Function({IntParam("n")}, {kI, kI, kI, kI}, {{Kind::kInt, 0}},
                  {{Op::MOVE_I, 2, 1},
                   {Op::JLE_I, 0, 2, 0, 4},  // the entry test: n <= i skips the loop
                   {Op::ADD_I, 3, 3, 2},     // the loop's head
                   {Op::FORLOOP_INC, 2, 0, 0, 2},
                   {Op::RET_I, 3}},
                  ValueType::kInt);
}

TEST(Verifier, AcceptsARangeLoopOfTheCompilersShape) { EXPECT_EQ(Verify(*RangeLoop()), "ok"); }

TEST(Verifier, RejectsARangeLoopWhoseLimitIsNotItsTests) {
  auto module = RangeLoop();
  module->functions[0]->code[3].b = 3;  // i + 1 < total, entered by n <= i
  EXPECT_EQ(Verify(*module),
            "verify f: pc 3 (FORLOOP_INC): the loop at pc 2 is not entered through its test (JLE_I of its limit 3 "
            "and counter 2 just before it, jumping past the loop)");
  module = RangeLoop();
  module->functions[0]->code[1].d = 3;  // the test jumps into the loop
  EXPECT_EQ(Verify(*module),
            "verify f: pc 3 (FORLOOP_INC): the loop at pc 2 is not entered through its test (JLE_I of its limit 0 "
            "and counter 2 just before it, jumping past the loop)");
  module = RangeLoop();
  module->functions[0]->code[1] = {Op::JLT_I, 0, 2, 0, 4};  // another test
  EXPECT_NE(Verify(*module), "ok");
}

TEST(Verifier, RejectsARangeLoopThatWritesItsCounterOrLimit) {
  auto module = RangeLoop();
  module->functions[0]->code[2] = {Op::ADD_I, 0, 0, 2};  // n += i
  EXPECT_EQ(Verify(*module), "verify f: pc 3 (FORLOOP_INC): the loop writes its limit, register 0, at pc 2");
  module = RangeLoop();
  module->functions[0]->code[2] = {Op::ADD_I, 2, 2, 2};  // i += i
  EXPECT_EQ(Verify(*module), "verify f: pc 3 (FORLOOP_INC): the loop writes its counter, register 2, at pc 2");
}

TEST(Verifier, RejectsAJumpIntoARangeLoopPastItsTest) {
  auto module = RangeLoop();
  FunctionCode& fn = *module->functions[0];
  // if n: goto the loop's FORLOOP_INC, with i unchecked against n
  fn.code = {{Op::MOVE_I, 2, 1},         {Op::JT, 0, 0, 0, 4}, {Op::JLE_I, 0, 2, 0, 5},
             {Op::ADD_I, 3, 3, 2},       {Op::FORLOOP_INC, 2, 0, 0, 3}, {Op::RET_I, 3}};
  fn.lines.assign(fn.code.size(), 1);
  EXPECT_EQ(Verify(*module),
            "verify f: pc 1 (JT): jumps into the loop at pcs 3..4 from outside it, bypassing its entry test");
}

// The attacker's case, on compiled code: the loop's FORLOOP_INC compares with
// another register than its entry test. Machine code hoists the bounds check of
// xs[i] to the loop's entry, from i to the FORLOOP_INC's limit, and counts the
// trip as limit - i: entered with i past that limit (the test checked another),
// it stored out of bounds (and on), where the interpreter raises IndexError.
TEST(Verifier, RejectsACompiledRangeLoopGivenAnotherLimit) {
  auto compiled = testing::Compile(R"(
from ppy import Buffer

def fill(xs: Buffer[float], n: int, m: int) -> None:
    for i in range(n):
        xs[i] = 1.0
)");
  ModuleCode& module = *compiled->result.code;
  FunctionCode& fill = *module.functions[0];
  auto close = std::find_if(fill.code.begin(), fill.code.end(), [](const Instr& in) { return in.op == Op::FORLOOP_INC; });
  ASSERT_NE(close, fill.code.end());
  EXPECT_EQ(Verify(module), "ok");
  close->b = 2;  // m
  std::string message = Verify(module);
  EXPECT_NE(message.find("(FORLOOP_INC): the loop at pc "), std::string::npos) << message;
  EXPECT_NE(message.find(" is not entered through its test"), std::string::npos) << message;
}

// ---- Backward jumps poll -----------------------------------------------------------------------

TEST(Verifier, RejectsABackwardJumpThatIsNotALoopInstruction) {
  // while n: pass, with JT as its back edge: a loop Ctrl-C cannot stop.
  auto module = Function({IntParam("n")}, {kI}, {}, {{Op::JF, 0, 0, 0, 2}, {Op::JT, 0, 0, 0, 0}, {Op::RET_I, 0}},
                         ValueType::kInt);
  EXPECT_EQ(Verify(*module),
            "verify f: pc 1 (JT): jumps backward, which only a loop instruction (one that checks for Ctrl-C) may");
  // A jump to itself.
  module->functions[0]->code[0] = {Op::JMP, 0, 0, 0, 0};
  EXPECT_EQ(Verify(*module),
            "verify f: pc 0 (JMP): jumps backward, which only a loop instruction (one that checks for Ctrl-C) may");
  // The loop instruction is accepted, to itself too.
  module->functions[0]->code[1] = {Op::LOOP, 0, 0, 0, 0};
  module->functions[0]->code[0] = {Op::JF, 0, 0, 0, 2};
  EXPECT_EQ(Verify(*module), "ok");
  module->functions[0]->code[1].d = 1;
  EXPECT_EQ(Verify(*module), "ok");
}

TEST(Verifier, RejectsALoopInstructionThatJumpsForward) {
  auto module = Function({IntParam("n")}, {kI}, {}, {{Op::LOOP, 0, 0, 0, 1}, {Op::RET_I, 0}}, ValueType::kInt);
  EXPECT_EQ(Verify(*module), "verify f: pc 0 (LOOP): a loop's back edge jumps forward");
}

// ---- Everything the compiler produces passes ---------------------------------------------------

TEST(Verifier, AcceptsEveryProgramOfTheTestsAndExamples) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(PPY_GOLDEN_DIR) / ".." / "..";
  int programs = 0;
  for (const fs::path& folder : {root / "programs", root / ".." / "examples"}) {
    for (const auto& file : fs::recursive_directory_iterator(folder)) {
      if (file.path().extension() != ".ppy") continue;
      std::ifstream in(file.path());
      std::stringstream source;
      source << in.rdbuf();
      SCOPED_TRACE(file.path().string());
      auto compiled = testing::Compile(source.str());  // fails the test unless every function verifies
      ASSERT_NE(compiled->result.code, nullptr);
      EXPECT_EQ(Verify(*compiled->result.code), "ok");
      ++programs;
    }
  }
  EXPECT_GE(programs, 50);
}

// ---- Strings read from a cache entry -----------------------------------------------------------

TEST(Verifier, IsValidTextTakesStrictUtf8WithoutNul) {
  EXPECT_TRUE(IsValidText(""));
  EXPECT_TRUE(IsValidText("features.bucketize"));
  EXPECT_TRUE(IsValidText("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));  // é € 😀 U+10FFFF
  EXPECT_FALSE(IsValidText(std::string_view("a\0b", 3)));
  EXPECT_FALSE(IsValidText("\xff"));                  // no such byte
  EXPECT_FALSE(IsValidText("\x80"));                  // a lone continuation
  EXPECT_FALSE(IsValidText("\xc3"));                  // truncated
  EXPECT_FALSE(IsValidText("\xe2\x82"));              // truncated
  EXPECT_FALSE(IsValidText("\xc3\x28"));              // not a continuation
  EXPECT_FALSE(IsValidText("\xc0\xaf"));              // overlong '/'
  EXPECT_FALSE(IsValidText("\xe0\x80\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidText("\xf0\x80\x80\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidText("\xed\xa0\x80"));          // the surrogate U+D800
  EXPECT_FALSE(IsValidText("\xf4\x90\x80\x80"));      // U+110000
  EXPECT_FALSE(IsValidText("\xf8\x88\x80\x80\x80"));  // a five-byte form
}

// A cache entry whose names or header strings are not UTF-8 text is corrupt:
// read as it was, Python's strict decoding of a name raised UnicodeDecodeError
// (in the hook, in messages, in tracebacks) instead of the import rebuilding it.
TEST(Verifier, RejectsAnEntryWhoseStringsAreNotUtf8) {
  auto compiled = testing::Compile("def f(x: int) -> int:\n    return x + 1\n");
  ModuleCode& module = *compiled->result.code;
  const EntryHeader good{kBytecodeVersion, "test-version", "cpython-311", "key123"};
  auto parse = [&](const EntryHeader& header) {
    EntryProblem problem = EntryProblem::kNone;
    StatusOr<Entry> entry = ParseEntry(SerializeEntry(header, module, {}), "test-version", &problem);
    if (entry.ok()) return std::string("ok");
    EXPECT_EQ(problem, EntryProblem::kCorrupt);
    EXPECT_TRUE(IsValidText(entry.status().message())) << entry.status().message();
    return entry.status().message();
  };
  ASSERT_EQ(parse(good), "ok");
  FunctionCode& fn = *module.functions[0];
  for (std::string* name : {&module.module_name, &module.filename, &fn.name, &fn.qualname, &fn.params[0].name}) {
    const std::string original = *name;
    for (const char* bad : {"\xff", "\xed\xa0\x80", "x\xc3", "a\0b"}) {
      *name = original + std::string(bad, bad[0] == 'a' ? 3 : std::strlen(bad));
      EXPECT_EQ(parse(good), "bad function table") << *name;
    }
    *name = original;
  }
  for (std::string EntryHeader::*field : {&EntryHeader::abi, &EntryHeader::key}) {
    EntryHeader header = good;
    header.*field += "\xc3\x28";
    EXPECT_EQ(parse(header), "bad header (a string is not UTF-8 text)");
    EXPECT_FALSE(ParseEntryHeader(SerializeEntry(header, module, {})).ok());
  }
}

// ---- Parallel loops (vm/prange.h) ------------------------------------------------------------

// f(n: int) -> int: the sum of range(n) by a prange loop, as the compiler
// lowers it: registers [n, const 0, const 1, s, counter, limit, i, object].
std::unique_ptr<ModuleCode> PrangeSample() {
  auto module = std::make_unique<ModuleCode>();
  module->filename = "sample.ppy";
  auto fn = std::make_unique<FunctionCode>();
  fn->name = fn->qualname = "f";
  fn->params.push_back({"n", ValueType::kInt, ElemType::kNone, false});
  fn->result = ValueType::kInt;
  fn->registers = {{Kind::kInt}, {Kind::kInt}, {Kind::kInt}, {Kind::kInt},
                   {Kind::kInt}, {Kind::kInt}, {Kind::kInt}, {Kind::kObject}};
  fn->constants = {{Kind::kInt, 0}, {Kind::kInt, 1}};
  fn->code = {
      {Op::MOVE_I, 3, 1, 0, 0},          // 0  s = 0
      {Op::MOVE_I, 4, 1, 0, 0},          // 1  counter = 0
      {Op::MOVE_I, 5, 0, 0, 0},          // 2  limit = n
      {Op::PRANGE, 4, 5, 2, 10},         // 3
      {Op::PRANGE_REDUCE_I, 3, 0, 0, 0}, // 4  s: +
      {Op::JLE_I, 5, 4, 0, 9},           // 5  the loop's test, to the PRANGE_END
      {Op::MOVE_I, 6, 4, 0, 0},          // 6  i = counter
      {Op::ADD_I, 3, 3, 6, 0},           // 7  s += i
      {Op::FORLOOP_INC, 4, 5, 0, 6},     // 8
      {Op::PRANGE_END, 0, 0, 0, 0},      // 9
      {Op::RET_I, 3, 0, 0, 0},           // 10
  };
  fn->lines.assign(fn->code.size(), 1);
  module->functions.push_back(std::move(fn));
  return module;
}

TEST(Verifier, AcceptsAPrangeLoop) { EXPECT_EQ(Verify(*PrangeSample()), "ok"); }

TEST(Verifier, RejectsAPrangeLoopThatTouchesObjects) {
  // A chunk's frame holds its caller's references without owning them:
  // object-mode instructions are not flagged JIT, and MOVE_O, which machine
  // code runs, moves references (without the GIL, in a chunk).
  auto module = PrangeSample();
  module->functions[0]->code[7] = {Op::BUILD_LIST, 7, 0, 0, 0};
  EXPECT_EQ(Verify(*module),
            "verify f: pc 3 (PRANGE): its parallel loop's instruction at pc 7 (BUILD_LIST) is not flagged JIT");
  module->functions[0]->code[0] = {Op::BUILD_LIST, 7, 0, 0, 0};  // (r7 assigned before the loop)
  module->functions[0]->code[7] = {Op::MOVE_O, 7, 7, 0, 0};
  EXPECT_EQ(Verify(*module),
            "verify f: pc 3 (PRANGE): its parallel loop's instruction at pc 7 (MOVE_O) names an object register");
}

TEST(Verifier, RejectsAPrangeLoopThatJumpsOut) {
  auto module = PrangeSample();
  module->functions[0]->code[5].d = 10;
  EXPECT_EQ(Verify(*module),
            "verify f: pc 3 (PRANGE): its parallel loop's instruction at pc 5 (JLE_I) jumps out of the loop");
}

TEST(Verifier, RejectsAPrangeLoopThatReturns) {
  auto module = PrangeSample();
  module->functions[0]->code[7] = {Op::RET_I, 3, 0, 0, 0};
  EXPECT_EQ(Verify(*module), "verify f: pc 3 (PRANGE): its parallel loop's instruction at pc 7 (RET_I) returns");
}

TEST(Verifier, RejectsAPrangeLimitThatIsAConstant) {
  // Each chunk sets its own limit, which machine code may take for an immediate.
  auto module = PrangeSample();
  module->functions[0]->code[3].b = 2;
  EXPECT_EQ(Verify(*module),
            "verify f: pc 3 (PRANGE): its counter and limit must be two registers that are not constants");
}

TEST(Verifier, RejectsAPrangeLoopWithoutItsEnd) {
  auto module = PrangeSample();
  module->functions[0]->code[3].d = 9;
  EXPECT_EQ(Verify(*module), "verify f: pc 3 (PRANGE): its loop does not end in a PRANGE_END");
}

TEST(Verifier, RejectsReductionDataOutOfPlaceOrRange) {
  auto module = PrangeSample();
  module->functions[0]->code[4].c = kPrangeOpCount;
  EXPECT_EQ(Verify(*module), "verify f: pc 4 (PRANGE_REDUCE_I): reduction operation out of range");
  module = PrangeSample();
  module->functions[0]->code[3] = {Op::MOVE_I, 4, 1, 0, 0};
  EXPECT_EQ(Verify(*module), "verify f: pc 4 (PRANGE_REDUCE_I): reduction data that follows no PRANGE");
}

TEST(Verifier, APrangeEndReachedOutsideAChunkRaisesSystemError) {
  // A jump from before the PRANGE to its loop's test passes the verifier (it
  // enters no loop), and brings the caller's own frame to the PRANGE_END.
  auto module = PrangeSample();
  module->functions[0]->code[2] = {Op::JMP, 0, 0, 0, 5};
  ASSERT_EQ(Verify(*module), "ok");
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  ASSERT_TRUE(PrepareModule(*module, globals).ok());
  Value args[1];
  args[0].i = 5;
  Value result;
  EXPECT_FALSE(CallTyped(*module->functions[0], args, &result));
  ASSERT_TRUE(PyErr_ExceptionMatches(PyExc_SystemError));
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* text = PyObject_Str(value);
  EXPECT_STREQ(PyUnicode_AsUTF8(text), "PRANGE_END reached outside a prange chunk");
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  ReleaseModule(*module);
  Py_DECREF(globals);
}

TEST(Verifier, RejectsAPrangeEndThatClosesNoLoop) {
  auto module = PrangeSample();
  module->functions[0]->code[3] = {Op::MOVE_I, 4, 1, 0, 0};
  module->functions[0]->code[4] = {Op::MOVE_I, 3, 1, 0, 0};
  EXPECT_EQ(Verify(*module), "verify f: pc 9 (PRANGE_END): closes no PRANGE");
}

}  // namespace
}  // namespace ppy
