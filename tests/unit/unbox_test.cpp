// Floats unboxed by speculation (vm/unbox.h): the rewrite of an object
// function's code, the frames that run it, the guards that send them back to
// the object code, and the verifier's refusal of what only the run time makes.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "asmjit-backend/jit.h"
#include "tests/unit/test_util.h"
#include "vm/tiering.h"
#include "vm/unbox.h"
#include "vm/verify.h"

namespace ppy {
namespace {

using testing::Call;
using testing::Compile;
using testing::IntValue;
using testing::PythonEval;

// Builds a list of n floats (i * 0.5, with an int 7 at `bad` unless it is
// negative), then sums 2.0 * each item over a loop that subscripts it by a
// typed int: object code whose floats the rewrite unboxes.
constexpr const char* kSource = R"(
def total(n: int, bad: int):
    xs = []
    for i in range(n):
        xs.append(i * 0.5)
    if bad >= 0:
        xs[bad] = 7
    s = 0.0
    for i in range(n):
        s += xs[i] * 2.0
    return s
)";

int Count(const std::vector<Instr>& code, Op op) {
  return static_cast<int>(std::count_if(code.begin(), code.end(), [&](const Instr& in) { return in.op == op; }));
}

int LastPcOf(const std::vector<Instr>& code, Op op) {
  for (size_t pc = code.size(); pc-- > 0;) {
    if (code[pc].op == op) return static_cast<int>(pc);
  }
  return -1;
}

int FirstPcOf(const std::vector<Instr>& code, Op op) {
  for (size_t pc = 0; pc < code.size(); ++pc) {
    if (code[pc].op == op) return static_cast<int>(pc);
  }
  return -1;
}

class Unbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { jit::Install(); }
  void SetUp() override {
    mode_ = g_tiering.mode;
    g_tiering.mode = JitMode::kEager;  // (unboxed code is built at a function's first loop check)
  }
  void TearDown() override { g_tiering.mode = mode_; }

 private:
  JitMode mode_ = JitMode::kOff;
};

TEST_F(Unbox, RewritesTheFloatWebsPcForPc) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  ASSERT_GT(fn.unbox_slots, 0);
  auto unboxed = BuildUnboxedCode(fn, {});
  ASSERT_NE(unboxed, nullptr);
  ASSERT_EQ(unboxed->code.size(), fn.code.size());
  // xs[i] is read into a slot; `* 2.0` multiplies it by the constant's slot,
  // `s +=` adds two slots, and `return s` boxes.
  EXPECT_EQ(Count(unboxed->code, Op::GETITEM_I_GF), 1);
  EXPECT_EQ(Count(unboxed->code, Op::ADD_F), 1);
  EXPECT_EQ(Count(unboxed->code, Op::RET_UF), 1);
  EXPECT_GE(unboxed->slot_register.size(), 2u);
  // The list's appends and the int store keep their object instructions, and
  // jumps keep their targets.
  for (size_t pc = 0; pc < fn.code.size(); ++pc) {
    const Instr& in = fn.code[pc];
    if (HasFlag(in.op, kFlagJump)) {
      EXPECT_EQ(unboxed->code[pc].d, in.d) << pc;
    }
    if (in.op == Op::CALL_METHOD || in.op == Op::SETITEM) {
      EXPECT_EQ(unboxed->code[pc].op, in.op) << pc;
    }
  }
  // `s` is live around the loop (its back edge unboxes it, on entry there).
  const int add = FirstPcOf(unboxed->code, Op::ADD_F);
  EXPECT_NE(unboxed->live[add], 0u);
}

TEST_F(Unbox, AFailedGuardKeepsItsInstruction) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  const int getitem = FirstPcOf(fn.code, Op::GETITEM_I);
  ASSERT_GE(getitem, 0);
  std::vector<uint8_t> feedback(fn.code.size());
  feedback[getitem] = kUnboxFailed;
  auto unboxed = BuildUnboxedCode(fn, feedback);
  ASSERT_NE(unboxed, nullptr);  // (s is still a float)
  EXPECT_EQ(unboxed->code[getitem].op, Op::GETITEM_I);
  EXPECT_EQ(Count(unboxed->code, Op::GETITEM_I_GF), 0);
  EXPECT_GE(Count(unboxed->code, Op::BINARY_UF), 1);  // (xs[i] * 2.0, from an object)
}

TEST_F(Unbox, FramesRunItAndLeaveItWhereAGuardFails) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  // (Sums of whole numbers: exact in any order.)
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(-1)}), PythonEval("float(sum(range(1000)))"));
  EXPECT_GE(static_cast<uint64_t>(fn.runtime->unboxed_entries), 1u);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 0u);
  // An int item halfway: the guard fails there, the rest of the call runs as
  // object code (7 * 2.0 is 14.0, as CPython makes it), and the pc is kept
  // with what it met (an int: the item meets a float constant, so the next
  // version keeps it an object).
  const std::string with_int = PythonEval("float(sum(range(1000)) - 600 + 14)");
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(600)}), with_int);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 1u);
  const int getitem = FirstPcOf(fn.code, Op::GETITEM_I);
  ASSERT_GT(fn.runtime->unbox_feedback.size(), static_cast<size_t>(getitem));
  EXPECT_EQ(fn.runtime->unbox_feedback[getitem], kUnboxSawInt);
  // The next call runs a version without that guard.
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(600)}), with_int);
  EXPECT_EQ(fn.runtime->unboxed_versions.size(), 2u);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 1u);
}

// The second loop of kSource reads items by a typed index and multiplies by
// a constant: its unboxed version is all machine code runs (GETITEM_I_GF,
// slots, a constant's slot), so machine code runs it, and leaves for the
// interpreter, which deoptimizes, at the item that is an int.
TEST_F(Unbox, MachineCodeRunsAnUnboxedLoop) {
  auto compiled = Compile(kSource);
  const FunctionCode& fn = compiled->function("total");
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(-1)}), PythonEval("float(sum(range(1000)))"));
  ASSERT_EQ(fn.runtime->unboxed_versions.size(), 1u);
  const FunctionCode* machine = fn.runtime->unboxed_versions[0]->machine.get();
  ASSERT_NE(machine, nullptr);
  EXPECT_EQ(machine->runtime->jit_state.load(), JitState::kCompiled);
  EXPECT_EQ(Count(machine->code, Op::GETITEM_I_GF), 1);
  EXPECT_FALSE(fn.runtime->unboxed_versions[0]->constant_slots.empty());
  const uint64_t entries = fn.runtime->jit_entries;
  EXPECT_GE(entries, 1u);
  EXPECT_EQ(Call(*compiled, "total", {IntValue(1000), IntValue(999)}), PythonEval("float(sum(range(999)) + 14)"));
  EXPECT_GT(static_cast<uint64_t>(fn.runtime->jit_entries), entries);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), 1u);
}

// Ints: a sum over a list's items minus one (one item made past 64 bits by
// object arithmetic, where `big` says). The first version guesses
// floats for the items; their guard meets an int, and the version built from
// that feedback keeps the items, the differences and the sum in int slots.
constexpr const char* kIntSource = R"(
def count(n: int, big: int):
    xs = []
    for i in range(n):
        xs.append(i * 3)
    if big >= 0:
        xs[big] = xs[big] * 10 ** 18 * 100
    s = 0
    for i in range(n):
        s += xs[i] - 1
    return s
)";

TEST_F(Unbox, IntsFromTheFeedbackOfAFloatGuard) {
  auto compiled = Compile(kIntSource);
  const FunctionCode& fn = compiled->function("count");
  const int getitem = LastPcOf(fn.code, Op::GETITEM_I);  // (xs[i])
  ASSERT_GE(getitem, 0);
  auto guessed = BuildUnboxedCode(fn, {});
  ASSERT_NE(guessed, nullptr);
  EXPECT_EQ(guessed->code[getitem].op, Op::GETITEM_I_GF);
  std::vector<uint8_t> feedback(fn.code.size());
  feedback[getitem] = kUnboxSawInt;
  auto unboxed = BuildUnboxedCode(fn, feedback);
  ASSERT_NE(unboxed, nullptr);
  EXPECT_EQ(unboxed->code[getitem].op, Op::GETITEM_I_GI);
  // xs[i] - 1 and s += are the typed SUB_I and ADD_I on slots (an overflow
  // there deoptimizes).
  EXPECT_EQ(Count(unboxed->code, Op::SUB_I), Count(fn.code, Op::SUB_I) + 1);
  EXPECT_EQ(Count(unboxed->code, Op::ADD_I), Count(fn.code, Op::ADD_I) + 1);
  EXPECT_EQ(Count(unboxed->code, Op::BINARY_UI), 0);
  EXPECT_EQ(Count(unboxed->code, Op::RET_UI), 1);
  EXPECT_NE(unboxed->int_slots, 0u);
  EXPECT_FALSE(unboxed->int_constant_slots.empty());  // (the 1)
}

TEST_F(Unbox, IntSlotsRunAndDeoptimizePastSixtyFourBits) {
  auto compiled = Compile(kIntSource);
  const FunctionCode& fn = compiled->function("count");
  const int getitem = LastPcOf(fn.code, Op::GETITEM_I);  // (xs[i])
  const std::string sum = PythonEval("sum(i * 3 - 1 for i in range(1000))");
  EXPECT_EQ(Call(*compiled, "count", {IntValue(1000), IntValue(-1)}), sum);
  ASSERT_GT(fn.runtime->unbox_feedback.size(), static_cast<size_t>(getitem));
  EXPECT_EQ(fn.runtime->unbox_feedback[getitem], kUnboxSawInt);
  // The next call runs the version built from that, and no guard fails.
  const uint64_t deopts = fn.runtime->unbox_deopts;
  EXPECT_EQ(Call(*compiled, "count", {IntValue(1000), IntValue(-1)}), sum);
  EXPECT_EQ(static_cast<uint64_t>(fn.runtime->unbox_deopts), deopts);
  const UnboxedCode* now = fn.runtime->unboxed.load();
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->code[getitem].op, Op::GETITEM_I_GI);
  // An item past 64 bits: the int guard fails, and the rest of the call
  // makes CPython's long int.
  EXPECT_EQ(Call(*compiled, "count", {IntValue(20000), IntValue(19990)}),
            PythonEval("sum(i * 3 - 1 for i in range(20000)) - 19990 * 3 + 19990 * 3 * 10 ** 20"));
  // (The branch that made it fails float guesses of its own, before.)
  EXPECT_GT(static_cast<uint64_t>(fn.runtime->unbox_deopts), deopts);
  EXPECT_EQ(fn.runtime->unbox_feedback[getitem], kUnboxFailed);
}

// The int version's loop is all machine code runs (GETITEM_I_GI, typed
// arithmetic on slots): machine code runs it, reading compact ints in place.
// An item past 2**30 is no compact int: machine code leaves for the
// interpreter at it, which reads it (no guard fails), and comes back.
TEST_F(Unbox, MachineCodeRunsAnUnboxedIntLoop) {
  auto compiled = Compile(R"(
def count(n: int, wide: int):
    xs = []
    for i in range(n):
        xs.append(i * 3)
    if wide >= 0:
        xs[wide] = xs[wide] * 2 ** 20 * 2 ** 20
    s = 0
    for i in range(n):
        s += xs[i] - 1
    return s
)");
  const FunctionCode& fn = compiled->function("count");
  const std::string plain = PythonEval("sum(i * 3 - 1 for i in range(20000))");
  EXPECT_EQ(Call(*compiled, "count", {IntValue(20000), IntValue(-1)}), plain);  // (learns the ints)
  EXPECT_EQ(Call(*compiled, "count", {IntValue(20000), IntValue(-1)}), plain);
  const UnboxedCode* now = fn.runtime->unboxed.load();
  ASSERT_NE(now, nullptr);
  ASSERT_NE(now->machine, nullptr);
  EXPECT_EQ(now->machine->runtime->jit_state.load(), JitState::kCompiled);
  EXPECT_EQ(Count(now->machine->code, Op::GETITEM_I_GI), 1);
  const uint64_t entries = fn.runtime->jit_entries;
  EXPECT_EQ(Call(*compiled, "count", {IntValue(20000), IntValue(-1)}), plain);
  EXPECT_GT(static_cast<uint64_t>(fn.runtime->jit_entries), entries);
  EXPECT_EQ(Call(*compiled, "count", {IntValue(20000), IntValue(19000)}),
            PythonEval("sum(i * 3 - 1 for i in range(20000)) - 19000 * 3 + 19000 * 3 * 2 ** 40"));
  // (The branch that made the wide item fails float guesses of its own; the
  // loop's int guard does not fail.)
  EXPECT_EQ(fn.runtime->unbox_feedback[LastPcOf(fn.code, Op::GETITEM_I)], kUnboxSawInt);
}

// `for x in xs` over a list of floats, then of ints: machine code reads each
// item in place and advances the list's iterator (FOR_ITER_GF/GI), and the
// wrong item halfway leaves it for the interpreter without skipping one.
TEST_F(Unbox, MachineCodeRunsAForLoopOverAList) {
  auto compiled = Compile(R"(
def total(n: int, bad: int):
    xs = []
    for i in range(n):
        xs.append(i * 0.5)
    if bad >= 0:
        xs[bad] = 7
    s = 0.0
    for x in xs:
        s += x * 2.0
    return s

def count(n: int, wide: int):
    xs = []
    for i in range(n):
        xs.append(i * 3)
    if wide >= 0:
        xs[wide] = xs[wide] * 2 ** 40
    s = 0
    for x in xs:
        s += x - 1
    return s
)");
  const FunctionCode& total = compiled->function("total");
  const std::string sum = PythonEval("float(sum(range(5000)))");
  EXPECT_EQ(Call(*compiled, "total", {IntValue(5000), IntValue(-1)}), sum);
  EXPECT_EQ(Call(*compiled, "total", {IntValue(5000), IntValue(-1)}), sum);
  const UnboxedCode* floats = total.runtime->unboxed.load();
  ASSERT_NE(floats, nullptr);
  ASSERT_NE(floats->machine, nullptr);
  EXPECT_EQ(floats->machine->runtime->jit_state.load(), JitState::kCompiled);
  EXPECT_EQ(Count(floats->machine->code, Op::FOR_ITER_GF), 1);
  uint64_t entries = total.runtime->jit_entries;
  EXPECT_EQ(Call(*compiled, "total", {IntValue(5000), IntValue(-1)}), sum);
  EXPECT_GT(static_cast<uint64_t>(total.runtime->jit_entries), entries);
  EXPECT_EQ(Call(*compiled, "total", {IntValue(5000), IntValue(4000)}),
            PythonEval("float(sum(range(5000)) - 4000 + 14)"));

  const FunctionCode& count = compiled->function("count");
  const std::string plain = PythonEval("sum(i * 3 - 1 for i in range(5000))");
  for (int call = 0; call < 3; ++call) {  // (the first calls learn the ints)
    EXPECT_EQ(Call(*compiled, "count", {IntValue(5000), IntValue(-1)}), plain);
  }
  const UnboxedCode* ints = count.runtime->unboxed.load();
  ASSERT_NE(ints, nullptr);
  ASSERT_NE(ints->machine, nullptr);
  EXPECT_EQ(Count(ints->machine->code, Op::FOR_ITER_GI), 1);
  entries = count.runtime->jit_entries;
  // A wide item halfway leaves machine code before the iterator moves: every
  // item is counted once.
  EXPECT_EQ(Call(*compiled, "count", {IntValue(5000), IntValue(2500)}),
            PythonEval("sum(i * 3 - 1 for i in range(5000)) - 7500 + 7500 * 2 ** 40"));
  EXPECT_GT(static_cast<uint64_t>(count.runtime->jit_entries), entries);
}

// A tuple's items by a typed index, floats and then ints: machine code reads
// them in place as it reads a list's, so one call enters it a few times, not
// at every back edge (an item it could not read would leave at once, and the
// next back edge would enter again); an item of another type halfway leaves
// it for the interpreter.
TEST_F(Unbox, MachineCodeReadsATuplesItems) {
  auto compiled = Compile(R"(
def total(n: int, bad: int):
    ys = []
    for i in range(n):
        ys.append(i * 0.5)
    if bad >= 0:
        ys[bad] = 7
    xs = tuple(ys)
    s = 0.0
    for i in range(n):
        s += xs[i] * 2.0
    return s

def count(n: int):
    ys = []
    for i in range(n):
        ys.append(i * 3)
    xs = tuple(ys)
    s = 0
    for i in range(n):
        s += xs[i] - 1
    return s
)");
  const FunctionCode& total = compiled->function("total");
  const std::string sum = PythonEval("float(sum(range(5000)))");
  for (int call = 0; call < 2; ++call) EXPECT_EQ(Call(*compiled, "total", {IntValue(5000), IntValue(-1)}), sum);
  const UnboxedCode* floats = total.runtime->unboxed.load();
  ASSERT_NE(floats, nullptr);
  ASSERT_NE(floats->machine, nullptr);
  EXPECT_EQ(floats->machine->runtime->jit_state.load(), JitState::kCompiled);
  EXPECT_EQ(Count(floats->machine->code, Op::GETITEM_I_GF), 1);
  uint64_t entries = total.runtime->jit_entries;
  EXPECT_EQ(Call(*compiled, "total", {IntValue(5000), IntValue(-1)}), sum);
  EXPECT_GT(static_cast<uint64_t>(total.runtime->jit_entries), entries);
  EXPECT_LT(static_cast<uint64_t>(total.runtime->jit_entries), entries + 10);
  EXPECT_EQ(Call(*compiled, "total", {IntValue(5000), IntValue(4000)}),
            PythonEval("float(sum(range(5000)) - 4000 + 14)"));

  const FunctionCode& count = compiled->function("count");
  const std::string plain = PythonEval("sum(i * 3 - 1 for i in range(5000))");
  for (int call = 0; call < 3; ++call) EXPECT_EQ(Call(*compiled, "count", {IntValue(5000)}), plain);
  const UnboxedCode* ints = count.runtime->unboxed.load();
  ASSERT_NE(ints, nullptr);
  ASSERT_NE(ints->machine, nullptr);
  EXPECT_EQ(Count(ints->machine->code, Op::GETITEM_I_GI), 1);
  entries = count.runtime->jit_entries;
  EXPECT_EQ(Call(*compiled, "count", {IntValue(5000)}), plain);
  EXPECT_GT(static_cast<uint64_t>(count.runtime->jit_entries), entries);
  EXPECT_LT(static_cast<uint64_t>(count.runtime->jit_entries), entries + 10);
}

// A store by a typed index (SETITEM_I) of a value that has only been a float
// or an int: the unboxed version stores the slot (SETITEM_I_UF/UI; a float
// only the list holds is written over in place), and a value of another type
// halfway is stored as it is.
TEST_F(Unbox, StoresByATypedIndexTakeTheSlot) {
  auto compiled = Compile(R"(
def doubled(n: int, bad: int):
    src = []
    for i in range(n):
        src.append(i * 0.5)
    if bad >= 0:
        src[bad] = 7
    xs = [0.0] * n
    for i in range(n):
        xs[i] = src[i] * 2.0
    return sum(xs), type(xs[bad]).__name__

def bumped(n: int):
    src = list(range(n))
    xs = [0] * n
    for i in range(n):
        xs[i] = src[i] + 1
    return sum(xs)
)");
  const FunctionCode& doubled = compiled->function("doubled");
  EXPECT_EQ(Count(doubled.code, Op::SETITEM_I), 2);
  const std::string expected = PythonEval("(float(sum(range(3000))), 'float')");
  for (int call = 0; call < 2; ++call) {
    EXPECT_EQ(Call(*compiled, "doubled", {IntValue(3000), IntValue(-1)}), expected);
  }
  const UnboxedCode* floats = doubled.runtime->unboxed.load();
  ASSERT_NE(floats, nullptr);
  EXPECT_EQ(Count(floats->code, Op::SETITEM_I_UF), 1);
  EXPECT_EQ(Call(*compiled, "doubled", {IntValue(3000), IntValue(2000)}),
            PythonEval("(float(sum(range(3000))) - 2000.0 + 14, 'float')"));  // (7 * 2.0)

  const FunctionCode& bumped = compiled->function("bumped");
  const std::string ints = PythonEval("sum(range(1, 3001))");
  for (int call = 0; call < 3; ++call) EXPECT_EQ(Call(*compiled, "bumped", {IntValue(3000)}), ints);
  const UnboxedCode* version = bumped.runtime->unboxed.load();
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(Count(version->code, Op::SETITEM_I_UI), 1);
}

// `for p in points` over a list of objects whose float attribute is
// unboxed: machine code moves the loop's references (FOR_ITER_L, MOVE_O) and
// reads `p.x` in place (LOAD_ATTR_GF: a `__slots__` member inline, an
// instance's value through the attribute cache); an int halfway leaves it
// for the interpreter, and the item's references are as CPython keeps them.
TEST_F(Unbox, MachineCodeRunsALoopOverObjectsAndTheirAttributes) {
  PyObject* scope = PyDict_New();
  PyDict_SetItemString(scope, "__builtins__", PyEval_GetBuiltins());
  PyObject* ran = PyRun_String(R"(
class S:
    __slots__ = ("x",)
    def __init__(self, x):
        self.x = x
class D:
    def __init__(self, x):
        self.x = x
slots = [S((i * 37 % 1001) * 0.5) for i in range(3000)]
plain = [D((i * 41 % 997) * 0.25) for i in range(3000)]
)", Py_file_input, scope, scope);
  ASSERT_NE(ran, nullptr);
  Py_DECREF(ran);
  for (const char* name : {"slots", "plain"}) {
    auto compiled = Compile(R"(
def top(points):
    best = -1e300
    for p in points:
        best = best if best > p.x else p.x
    return best
)");
    const FunctionCode& top = compiled->function("top");
    PyObject* points = PyDict_GetItemString(scope, name);  // borrowed
    Value arg;
    arg.o = points;
    PyObject* first = PyList_GET_ITEM(points, 0);
    const Py_ssize_t count_before = Py_REFCNT(first);
    const std::string expected = std::string(name) == "slots" ? "500.0" : "249.0";
    for (int call = 0; call < 3; ++call) EXPECT_EQ(Call(*compiled, "top", {arg}), expected) << name;
    EXPECT_EQ(Py_REFCNT(first), count_before) << name;
    const UnboxedCode* version = top.runtime->unboxed.load();
    ASSERT_NE(version, nullptr) << name;
    ASSERT_NE(version->machine, nullptr) << name;
    EXPECT_EQ(Count(version->machine->code, Op::FOR_ITER_L), 1);
    EXPECT_EQ(Count(version->machine->code, Op::LOAD_ATTR_GF), 2);
    const uint64_t entries = top.runtime->jit_entries;
    EXPECT_EQ(Call(*compiled, "top", {arg}), expected) << name;
    EXPECT_GT(static_cast<uint64_t>(top.runtime->jit_entries), entries) << name;
    // An int halfway: the interpreter reads it (the version's guard fails).
    PyObject* big = PyLong_FromLong(7000);
    ASSERT_EQ(PyObject_SetAttrString(PyList_GET_ITEM(points, 1500), "x", big), 0);
    Py_DECREF(big);
    EXPECT_EQ(Call(*compiled, "top", {arg}), "7000") << name;
    EXPECT_EQ(Py_REFCNT(first), count_before) << name;
  }
  Py_DECREF(scope);
}

TEST_F(Unbox, TheVerifierRejectsWhatOnlyTheRunTimeMakes) {
  auto compiled = Compile(kSource);
  ModuleCode& module = *compiled->result.code;
  FunctionCode& fn = *module.functions[0];
  auto unboxed = BuildUnboxedCode(fn, {});
  ASSERT_NE(unboxed, nullptr);
  // (A slot is a register past the function's: the verifier sees the frame
  // grown by them, so that only the instruction itself is refused.)
  for (size_t k = 0; k < unboxed->slot_register.size(); ++k) fn.registers.push_back({Kind::kFloat});
  fn.code = unboxed->code;
  Status status = VerifyModule(module);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("an instruction made at run time only"), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace ppy
