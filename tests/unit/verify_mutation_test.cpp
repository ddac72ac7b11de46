// A property of the verifier, the boundary between a cache entry's bytes and the
// interpreter: whatever an attacker changes in compiled code, the result is
// either rejected or runs without crashing. The compiled functions of a few small
// programs are mutated one instruction field at a time, thousands of times
// (seeded, so every run tries the same mutants); every mutant the verifier
// accepts runs on the interpreter, and a share of them on machine code as well,
// which must do exactly what the interpreter does. A crash (or a sanitizer's
// report) fails the test binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asmjit-backend/jit.h"
#include "tests/unit/test_util.h"
#include "vm/disasm.h"
#include "vm/interpreter.h"
#include "vm/loader.h"
#include "vm/serialize.h"
#include "vm/tiering.h"
#include "vm/verify.h"

namespace ppy {
namespace {

// Small programs over every kind of register and most instruction families:
// range loops over buffers (plain and fused indexes), loops over buffers and
// objects, while loops, typed calls, object mode. Every value is small, so that
// no mutant's arithmetic on objects grows without bound; names are harmless
// builtins (a mutant may call any of them).
constexpr const char* kPrograms = R"(
from ppy import Buffer, u8

def scale(xs: Buffer[float], n: int, k: float) -> float:
    total = 0.0
    for i in range(n):
        xs[i] = xs[i] * k
        total += xs[i]
    return total

def rows(m: Buffer[float], r: int, c: int) -> float:
    s = 0.0
    for i in range(r):
        base = i * c
        for j in range(c):
            s += m[base + j]
            m[base + j] = s
    return s

def histogram(values: Buffer[float], counts: Buffer[int], bins: int) -> int:
    outside = 0
    for v in values:
        b = int(v)
        if b < 0 or b >= bins:
            outside += 1
        else:
            counts[b] += 1
    return outside

def checksum(data: Buffer[u8], n: int) -> int:
    h = 7
    for i in range(min(n, len(data))):
        h = (h * 31 + data[i]) % 65521
        data[i] = h % 256
    return h

def collatz(n: int) -> int:
    steps = 0
    while n != 1 and steps < 50:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps

def fib(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

def mixed(a: int, b: float, flag: bool) -> float:
    x = a / 3 + b ** 2.0 - abs(b)
    if flag and x > 1.0:
        return x % 7.5
    return max(x, float(a)) // 2.0

def objects(xs: list, n: int) -> str:
    out = []
    for x in xs:
        out.append(x + n)
    d = {"k": n, "v": len(out)}
    a, b = (d["k"], str(d["v"]))
    assert a == n, "unexpected"
    return f"{a}-{b!r}-{out[0]:>4}" + str(sorted(out)[-1])
)";

std::string Repr(PyObject* object) {
  PyObject* repr = PyObject_Repr(object);
  std::string text = repr != nullptr ? PyUnicode_AsUTF8(repr) : "<repr failed>";
  Py_XDECREF(repr);
  PyErr_Clear();
  return text;
}

// One argument for each parameter of `fn`: small ints and floats, a list, and a
// fresh eight-element array of each buffer's element type.
class Arguments {
 public:
  explicit Arguments(const FunctionCode& fn) {
    for (const Param& param : fn.params) {
      Value value;
      value.i = 0;
      switch (param.type) {
        case ValueType::kInt: value.i = 3; break;
        case ValueType::kBool: value.i = 1; break;
        case ValueType::kFloat: value.f = 2.5; break;
        case ValueType::kBuffer: value.u = Buffer(param.elem); break;
        case ValueType::kNone:
        case ValueType::kObject: value.o = Own(Eval("[1, 2, 3]")); break;
        case ValueType::kComplex: value.o = Own(Eval("1.5-2j")); break;
      }
      values_.push_back(value);
    }
  }
  ~Arguments() {
    for (Py_buffer& raw : raws_) PyBuffer_Release(&raw);
    for (PyObject* object : owned_) Py_DECREF(object);
  }
  const Value* data() const { return values_.data(); }
  // The arguments' reprs, to compare what two runs did to them.
  std::string Contents() const {
    std::string out;
    for (PyObject* object : owned_) out += " " + Repr(object);
    return out;
  }

 private:
  static PyObject* Eval(const std::string& code) {
    PyObject* globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject* value = PyRun_String(code.c_str(), Py_eval_input, globals, globals);
    Py_DECREF(globals);
    EXPECT_NE(value, nullptr) << code;
    return value;
  }
  PyObject* Own(PyObject* object) {
    owned_.push_back(object);
    return object;
  }
  BufferView* Buffer(ElemType elem) {
    static const char kFormats[kElemTypeCount] = {'?', 'd', 'f', 'q', 'i', 'h', 'b', 'Q', 'I', 'H', 'B', 'B'};
    const char format = kFormats[static_cast<int>(elem)];
    PyObject* array = Own(Eval(std::string("__import__('array').array('") + format + "', range(8))"));
    raws_.emplace_back();
    Py_buffer& raw = raws_.back();
    EXPECT_EQ(PyObject_GetBuffer(array, &raw, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS), 0);
    EXPECT_EQ(raw.itemsize, InfoOf(elem).size);
    views_.push_back(std::make_unique<BufferView>());
    BufferView& view = *views_.back();
    view.data = static_cast<char*>(raw.buf);
    const int64_t shape[1] = {raw.len / raw.itemsize}, strides[1] = {1};
    SetViewGeometry(&view, 1, shape, strides);
    view.elem = elem;
    view.exporter = Exporter::kArray;
    view.readonly = raw.readonly;
    view.format = format;
    view.owner = array;
    return &view;
  }

  std::vector<Value> values_;
  std::vector<PyObject*> owned_;
  std::deque<Py_buffer> raws_;
  std::vector<std::unique_ptr<BufferView>> views_;
};

// Runs `fn` on the interpreter, or with machine code where it has some, and
// returns what it did: its result or exception, and its arguments afterwards. A
// Ctrl-C is pending from the start, so that a loop a mutant made endless stops
// with KeyboardInterrupt at its first check for one (every 4096 back edges).
std::string Outcome(const FunctionCode& fn, bool jit) {
  Arguments arguments(fn);
  const JitMode mode = g_tiering.mode;
  g_tiering.mode = jit ? JitMode::kHot : JitMode::kOff;
  PyErr_SetInterrupt();
  Value result;
  const bool ok = CallTyped(fn, arguments.data(), &result);
  g_tiering.mode = mode;
  EXPECT_EQ(ok, PyErr_Occurred() == nullptr) << fn.name << ": a result and an exception, or neither";
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  if (PyErr_CheckSignals() != 0) PyErr_Clear();  // the interrupt, if nothing took it
  std::string text;
  if (ok) {
    PyObject* boxed = KindOf(fn.result) == Kind::kObject ? result.o : BoxValue(fn.result, result);
    text = Repr(boxed);
    Py_XDECREF(boxed);
  } else if (type != nullptr) {
    text = std::string(reinterpret_cast<PyTypeObject*>(type)->tp_name) + ": " + (value ? Repr(value) : "");
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return text + arguments.Contents();
}

// Changes one field of the instruction at `pc`, as an attacker editing the
// entry could: a byte of the word to a random value, a flipped bit or a
// neighbouring value; the opcode to another of the same operand modes; A, B or
// C to another of the function's registers; D to another target, register or
// id, or below zero. (The first kinds are mostly rejected; the others keep the
// word well-formed, so that the verifier's deeper checks decide.)
void Mutate(std::mt19937_64& random, FunctionCode& fn, size_t pc) {
  Instr& in = fn.code[pc];
  uint8_t bytes[sizeof(Instr)];
  std::memcpy(bytes, &in, sizeof bytes);
  const size_t at = random() % sizeof bytes;
  switch (random() % 6) {
    case 0: bytes[at] = static_cast<uint8_t>(random()); break;
    case 1: bytes[at] ^= static_cast<uint8_t>(1u << (random() % 8)); break;
    case 2: bytes[at] = static_cast<uint8_t>(bytes[at] + (random() % 2 ? 1 : -1)); break;
    case 3: {
      const OpInfo& info = InfoOf(in.op);
      std::vector<Op> alike;
      for (int op = 0; op < kOpCount; ++op) {
        const OpInfo& other = kOpInfo[op];
        if (other.a == info.a && other.b == info.b && other.c == info.c && other.d == info.d) {
          alike.push_back(static_cast<Op>(op));
        }
      }
      in.op = alike[random() % alike.size()];
      return;
    }
    case 4: {
      const size_t registers = std::max<size_t>(fn.registers.size(), 1);
      switch (random() % 4) {
        case 0: in.a = static_cast<uint8_t>(random() % registers); break;
        case 1: in.b = static_cast<uint8_t>(random() % registers); break;
        case 2: in.c = static_cast<uint8_t>(random() % registers); break;
        default: in.d = static_cast<int32_t>(random() % (registers + fn.code.size())); break;
      }
      return;
    }
    default: in.d = -static_cast<int32_t>(1 + random() % 4); return;
  }
  std::memcpy(&in, bytes, sizeof bytes);
}

// A pending Ctrl-C stops a loop the verifier accepts, so that no mutant runs
// forever (the test depends on it).
TEST(VerifyMutants, APendingInterruptStopsAnEndlessLoop) {
  auto compiled = testing::Compile("def spin(n: int) -> int:\n    while n > 0:\n        n = n + 0\n    return n\n");
  const FunctionCode& spin = compiled->function("spin");
  Arguments arguments(spin);
  PyErr_SetInterrupt();
  Value result;
  ASSERT_FALSE(CallTyped(spin, arguments.data(), &result));
  EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_KeyboardInterrupt));
  PyErr_Clear();
}

// Calls visit(module, function) for each of `count` mutants of `original` (one
// field of one instruction changed, see Mutate) that the verifier accepts, ready
// to run in a namespace of its own. Each starts from a fresh copy of the
// original, read back from the cache format. Returns how many were accepted.
template <typename Visit>
int ForEachAcceptedMutant(const ModuleCode& original, uint64_t seed, int count, Visit visit) {
  const std::string entry =
      SerializeEntry({kBytecodeVersion, "mutants", "abi", "key"}, original, std::map<std::string, std::string>{});
  std::mt19937_64 random(seed);
  int accepted = 0;
  for (int mutant = 0; mutant < count; ++mutant) {
    EntryProblem problem;
    StatusOr<Entry> copy = ParseEntry(entry, "mutants", &problem);
    if (!copy.ok()) {
      ADD_FAILURE() << copy.status();
      return accepted;
    }
    ModuleCode& module = *copy->module;
    FunctionCode& fn = *module.functions[random() % module.functions.size()];
    const size_t pc = random() % fn.code.size();
    const Instr before = fn.code[pc];
    Mutate(random, fn, pc);
    if (!VerifyModule(module).ok()) continue;
    ++accepted;
    PyObject* globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    EXPECT_TRUE(PrepareModule(module, globals).ok());
    SCOPED_TRACE(Cat("mutant ", mutant, ": ", fn.name, " pc ", pc, ", ", InfoOf(before.op).name, " became ",
                     InfoOf(fn.code[pc].op).name));
    visit(static_cast<const ModuleCode&>(module), static_cast<const FunctionCode&>(fn));
    ReleaseModule(module);
    Py_DECREF(globals);
  }
  return accepted;
}

TEST(VerifyMutants, EveryAcceptedMutantRunsOnTheInterpreter) {
  auto compiled = testing::Compile(kPrograms);
  ASSERT_NE(compiled->result.code, nullptr);
  const ModuleCode& original = *compiled->result.code;
  ASSERT_EQ(original.functions.size(), 8u);  // every program compiles
  for (const auto& fn : original.functions) Outcome(*fn, false);
  const int kMutants = 4000;
  const int accepted = ForEachAcceptedMutant(original, 20261130, kMutants,
                                             [](const ModuleCode&, const FunctionCode& fn) { Outcome(fn, false); });
  // Enough of them pass the verifier for the property to say something: the
  // same instruction with other registers of the same kinds, other constants,
  // targets and table ids, or a sibling opcode.
  EXPECT_GT(accepted, kMutants / 10) << accepted << " of " << kMutants << " mutants accepted";
}

// A mutant's outcome with the detail of a RecursionError taken out: which
// bound a runaway recursion meets first, the recursion limit or the C stack
// (CallTyped's check), depends on the size of each frame, which differs
// between the interpreter and machine code, and under sanitizers. It is the
// same RecursionError to the program either way.
std::string WithoutStackDetail(std::string outcome) {
  const std::string detail = " (the C stack is nearly full)";
  for (size_t at = outcome.find(detail); at != std::string::npos; at = outcome.find(detail)) {
    outcome.erase(at, detail.size());
  }
  return outcome;
}

// Machine code is compiled from verified code only and trusts what the verifier
// proved (above all the shape of counted loops, whose bounds checks it hoists):
// every accepted mutant it compiles must do there what it does on the
// interpreter. Not compared: runs the pending Ctrl-C stopped (the two count
// back edges differently).
TEST(VerifyMutants, EveryAcceptedMutantRunsTheSameOnMachineCode) {
  const JitMode mode = g_tiering.mode;
  jit::Install();
  g_tiering.mode = mode;
  auto compiled = testing::Compile(kPrograms);
  ASSERT_NE(compiled->result.code, nullptr);
  int compared = 0;
  const int accepted =
      ForEachAcceptedMutant(*compiled->result.code, 20261201, 2000, [&](const ModuleCode& module, const FunctionCode& fn) {
        const std::string interpreted = Outcome(fn, false);
        if (!jit::CompileAndInstall(fn, "test")) return;
        const std::string machine = Outcome(fn, true);
        const char* kInterrupted = "KeyboardInterrupt";
        if (interpreted.find(kInterrupted) != std::string::npos || machine.find(kInterrupted) != std::string::npos) {
          return;
        }
        ++compared;
        EXPECT_EQ(WithoutStackDetail(interpreted), WithoutStackDetail(machine)) << Disassemble(module, fn);
      });
  EXPECT_GT(compared, accepted / 2) << compared << " of " << accepted << " accepted mutants compared";
}

}  // namespace
}  // namespace ppy
