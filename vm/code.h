// Compiled code: what the compiler produces, the cache stores and the VM runs.
//
// A ModuleCode holds the functions of one .ppy module that ppy compiles. Each
// FunctionCode is self-describing: the kind of every register, the constant
// registers' values, the object constants instructions refer to, the code and a
// line for every instruction. Registers are laid out as
//
//   [0, num_params)                      the parameters, in declaration order
//   [num_params, num_params + consts)    constants, copied in at every call
//   [.., num_registers)                  locals and temporaries
#pragma once

#include <Python.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vm/instr.h"

// The thread-locals read on every call (this shard, vm/gil.h's t_gil,
// vm/runtime.h's g_effects) use the initial-exec TLS model: in a module
// loaded by dlopen the general-dynamic model calls __tls_get_addr at each
// access, which costs more than the rest of what they are read for. Together
// they take under 100 bytes of the static TLS glibc keeps for such modules.
#define PPY_FAST_TLS __attribute__((tls_model("initial-exec")))

namespace ppy {

// What a register holds. Bools live in int registers as 0 or 1.
enum class Kind : uint8_t { kInt = 0, kFloat = 1, kObject = 2, kBuffer = 3 };
inline constexpr int kKindCount = 4;

union Value;

struct JitCallContext;

// Machine code of the asmjit tier for one function (see vm/tiering.h).
using JitFunction = int64_t (*)(Value* regs, Value* result, const JitCallContext* context, int64_t entry_pc);

// kPending: another process (`ppy build --warm`) is writing this module's
// machine code to the cache; run on the interpreter and map it when it appears.
// A prange loop's reduction (PRANGE_REDUCE_I/_F, operand C; vm/prange.h).
enum class PrangeOp : uint8_t { kAdd, kMul, kMin, kMax };
inline constexpr int kPrangeOpCount = 4;

inline bool IsPrangeReduce(Op op) { return op == Op::PRANGE_REDUCE_I || op == Op::PRANGE_REDUCE_F; }

// Where the chunks of the PRANGE at `pc` start: the first pc after its
// reduction data, but not past `end` (its PRANGE_END).
inline int PrangeChunkStart(const std::vector<Instr>& code, int pc, int end) {
  int first = pc + 1;
  while (first < end && IsPrangeReduce(code[first].op)) ++first;
  return first;
}

// kCompiling: a thread is compiling it (vm/interpreter.cpp, TierUp).
enum class JitState : uint8_t { kNone, kCompiled, kUnavailable, kPending, kCompiling };

// Element types of Buffer[T]. The names are the ones the ppy package exports.
#define PPY_ELEM_TYPES(X)                     \
  X(F64, "f64", 8, true, false)               \
  X(F32, "f32", 4, true, false)               \
  X(I64, "i64", 8, false, true)               \
  X(I32, "i32", 4, false, true)               \
  X(I16, "i16", 2, false, true)               \
  X(I8, "i8", 1, false, true)                 \
  X(U64, "u64", 8, false, false)              \
  X(U32, "u32", 4, false, false)              \
  X(U16, "u16", 2, false, false)              \
  X(U8, "u8", 1, false, false)                \
  X(Bool, "bool", 1, false, false)

enum class ElemType : uint8_t {
  kNone = 0,
#define PPY_ELEM_ENUM(id, name, size, is_float, is_signed) k##id,
  PPY_ELEM_TYPES(PPY_ELEM_ENUM)
#undef PPY_ELEM_ENUM
};

struct ElemInfo {
  const char* name;
  int size;
  bool is_float;
  bool is_signed;
};
const ElemInfo& InfoOf(ElemType elem);
inline constexpr int kElemTypeCount = 12;  // kNone included

// The most dimensions a Buffer annotation may declare (Buffer[float, 3]).
inline constexpr int kMaxDims = 4;

// The type of a value at a function's boundary: a parameter or the result. A
// complex crosses it as an exact Python complex in an object register; inside
// the function it lives in a pair of float registers (UNBOX_C, BOX_C).
enum class ValueType : uint8_t { kInt, kFloat, kBool, kNone, kObject, kBuffer, kComplex };
inline constexpr ValueType kLastValueType = ValueType::kComplex;

// The register a value type lives in.
inline Kind KindOf(ValueType type) {
  switch (type) {
    case ValueType::kInt:
    case ValueType::kBool: return Kind::kInt;
    case ValueType::kFloat: return Kind::kFloat;
    case ValueType::kBuffer: return Kind::kBuffer;
    case ValueType::kNone:
    case ValueType::kObject:
    case ValueType::kComplex: return Kind::kObject;
  }
  return Kind::kObject;
}

struct RegisterType {
  Kind kind = Kind::kInt;
  ElemType elem = ElemType::kNone;  // for buffers only
  // An int register of an annotated local or parameter: a value beyond 64
  // bits raises OverflowError there. Any other int register (an unannotated
  // local, a temporary) holds a speculation: Python's int would just grow, so
  // an overflow deoptimizes the call if it can (see vm/interpreter.cpp).
  // Not part of the register's kind: equality ignores it.
  bool annotated = false;
  // For buffers: the number of dimensions, 1..kMaxDims; 1 for every other kind.
  uint8_t ndim = 1;
  bool operator==(const RegisterType& other) const {
    return kind == other.kind && elem == other.elem && ndim == other.ndim;
  }
};

struct Param {
  std::string name;
  ValueType type = ValueType::kObject;
  ElemType elem = ElemType::kNone;  // for Buffer parameters
  bool writes = false;              // a buffer the function stores into
  // A Buffer-annotated local borrowed by BORROW_U (never serialized): its
  // errors name "local 'out'" instead of "argument 'out'".
  bool is_local = false;
  uint8_t ndim = 1;  // for Buffer parameters: dimensions, 1..kMaxDims
};

// One constant register's initial value. Object constants are indexes into
// FunctionCode::objects.
struct ConstantValue {
  Kind kind = Kind::kInt;
  int64_t bits = 0;  // the int, the float's bit pattern, or the object index
};

// A count that threads bump without a lock: a relaxed load and store, so a
// bump that races another may be lost (tiering needs a rough count, not an
// exact one), but nothing tears and there is no data race.
class RelaxedCounter {
 public:
  operator uint64_t() const { return value_.load(std::memory_order_relaxed); }
  RelaxedCounter& operator+=(uint64_t n) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    return *this;
  }
  RelaxedCounter& operator++() { return *this += 1; }

 private:
  std::atomic<uint64_t> value_{0};
};

// A RelaxedCounter bumped on every call, spread over cache lines: each thread
// bumps the shard of its own (ThreadShard), so that threads calling the same
// function at once do not take one line from each other on every call. A read
// sums the shards (tiering reads it only until the function is compiled).
inline constexpr int kCounterShards = 8;
extern constinit thread_local int t_counter_shard PPY_FAST_TLS;  // -1 until AssignThreadShard
int AssignThreadShard();
// This thread's shard, 0 .. kCounterShards - 1.
inline int ThreadShard() {
  const int shard = t_counter_shard;
  return shard >= 0 ? shard : AssignThreadShard();
}

class ShardedCounter {
 public:
  operator uint64_t() const {
    uint64_t sum = 0;
    for (const Shard& shard : shards_) sum += shard.count;
    return sum;
  }
  // A thread that holds the GIL takes turns with the others: it bumps the
  // first shard, and only a nogil thread reads its own (a TLS access).
  void Bump(bool nogil) { ++shards_[nogil ? ThreadShard() : 0].count; }

 private:
  struct alignas(64) Shard {
    RelaxedCounter count;
  };
  Shard shards_[kCounterShards];
};

// The most int parameters a function's calls are profiled for (value
// specialization, FunctionRuntime::seen).
inline constexpr int kMaxValueParams = 4;

// Int registers machine code may treat as constants, with their values: a
// value specialization's (parameters FunctionCode::value_params lists).
using KnownValues = std::vector<std::pair<int, int64_t>>;

struct UnboxedCode;  // vm/unbox.h

// The def's Python function, where the module binds it to the name in
// place of a Function (python_entry: calls from Python run as Python), and
// the code object it was bound with: the name holding that function with
// that code means the def too (vm/interpreter.cpp, BoundCodeUnchanged;
// machine code that inlines a call of it checks the same through
// ModuleVersions::bound_python). Owned; written under the GIL, once.
struct BoundPython {
  PyObject* function = nullptr;
  PyObject* code = nullptr;
};

// The per-process runtime state of one function (FunctionCode::runtime): never
// serialized, never verified, written while the function runs, by any thread.
struct FunctionRuntime {
  // Counters the runtime keeps (tiering, `ppy run --trace`).
  ShardedCounter calls;
  RelaxedCounter back_edges;
  ShardedCounter jit_entries;  // times the interpreter entered machine code
  ShardedCounter jit_exits;    // of those, the side exits: the interpreter went on at a pc
  std::atomic<int32_t> exit_pc{-1};  // the last side exit's pc
  RelaxedCounter nanoseconds;  // inclusive, only while profiling
  // Deoptimizations (RaiseDeoptimize): how many, and the last one's pc and
  // operator (a static string), for `ppy run --trace`.
  RelaxedCounter deopts;
  std::atomic<int32_t> deopt_pc{-1};
  std::atomic<const char*> deopt_what{nullptr};

  // The asmjit tier's code, once compiled or mapped from the cache. Whoever
  // installs it writes the fields below first and jit_state (kCompiled) last,
  // with release order: a thread that reads kCompiled reads complete code.
  // Installed code is never replaced (asmjit-backend/jit.cpp, InstallBlob).
  JitFunction jit_entry = nullptr;
  std::atomic<JitState> jit_state{JitState::kNone};
  void* jit_memory = nullptr;  // the mapping that holds it, released with the function
  size_t jit_size = 0;
  // Where the interpreter enters it: at the start, and at the heads of loops
  // whose every instruction the machine code runs (a loop that would leave it
  // on every iteration stays on the interpreter). Calls stop entering at the
  // start when those entries keep leaving at once (vm/interpreter.cpp,
  // NoteLeftFromStart): start_leaves counts the entries at the start that
  // left at an instruction machine code never runs, start_returns those that
  // ran to the end.
  std::atomic<bool> jit_enters_at_start{false};
  std::atomic<bool> jit_start_dropped{false};
  std::atomic<uint32_t> start_leaves{0};
  std::atomic<uint32_t> start_returns{0};
  std::vector<int32_t> jit_loop_entries;
  // Value specialization (asmjit-backend/jit.cpp, Specialize): what the calls
  // showed of the int parameters in FunctionCode::value_params (unseen, one
  // value so far, several), and, once the general code exists, machine code
  // that treats those that kept one value as constants. The interpreter
  // enters it only when the frame holds exactly those values (SpecialMatches);
  // other values run the general code. One specialization per function,
  // compiled in this process only: the cache never holds one.
  struct SeenValue {
    std::atomic<int64_t> value{0};
    std::atomic<uint8_t> state{0};  // kUnseen, kOneValue, kSeveral
  };
  static constexpr uint8_t kUnseen = 0, kOneValue = 1, kSeveral = 2;
  SeenValue seen[kMaxValueParams];
  std::atomic<JitState> special_state{JitState::kNone};
  ShardedCounter special_entries;  // the jit_entries that entered it
  JitFunction special_entry = nullptr;  // written before special_state (release)
  void* special_memory = nullptr;
  size_t special_size = 0;
  int special_count = 0;
  uint8_t special_regs[kMaxValueParams] = {};
  int64_t special_values[kMaxValueParams] = {};
  // What the name of a CALL_METHOD, LOAD_ATTR or STORE_ATTR resolved to on a
  // type, one entry per instruction (allocated at the first lookup): the type,
  // its version tag then, and the descriptor found (a method descriptor for
  // CALL_METHOD, a member descriptor, as `__slots__` make, for the others),
  // or, for an attribute the type has none of, where instances keep it
  // (vm/instance_values.h): its position in their values, -1 if the class's
  // shared keys did not hold it when they held `key_count` keys. A type whose
  // dict changes gets a new version tag (tags are never reused), so an entry
  // whose tag still matches holds a descriptor the type still holds.
  struct TypeCacheEntry {
    PyTypeObject* type = nullptr;
    unsigned int version_tag = 0;
    PyObject* found = nullptr;  // borrowed from the type's dict
    // For a load: where `found` is a `__slots__` member holding an object
    // (T_OBJECT_EX, plain), its offset in the instance, so that machine code
    // reads it with no pointer to follow (vm/interpreter.h, CachedSlotMember).
    Py_ssize_t slot_offset = -1;
    Py_ssize_t value_index = -1;
    Py_ssize_t key_count = -1;
  };
  std::unique_ptr<TypeCacheEntry[]> type_cache;
  // What a LOAD_GLOBAL* found, one entry per instruction (allocated at the
  // first lookup): the value (borrowed from the namespace that holds it), and
  // the versions of the module's globals and, for a builtin, of its builtins
  // when it was found (vm/interpreter.cpp, LookupGlobalCached). While the
  // versions hold, the namespaces are unchanged, so the value is still there.
  // On 3.11 a CALL_METHOD on a module keeps the function it found in the
  // module's dict here too, by that dict's version (ModuleFunction).
  struct GlobalCacheEntry {
    uint64_t globals_version = 0;
    uint64_t builtins_version = 0;  // 0: found in the globals
    PyObject* value = nullptr;
  };
  std::unique_ptr<GlobalCacheEntry[]> global_cache;
  // For direct calls (CallModuleFunction): the name as an interned str, and the
  // version of the module's globals when the name last held this function.
  PyObject* name_object = nullptr;        // written under the GIL
  std::atomic<uint64_t> globals_version{0};  // read without it by nogil calls and by machine code
  BoundPython bound_python;
  // Machine code of another function runs this one's code in place of a call
  // (asmjit-backend/codegen.h, InlinableCallee): those calls are not counted.
  std::atomic<bool> jit_inlined{false};
  // Floats and ints unboxed by speculation (vm/unbox.h), built in this
  // process once the function is hot, under the GIL (object code holds it).
  // Frames enter `unboxed` (null: none now); every version built stays alive
  // while the function does, for the frames that may still run it. A failed
  // guard records at its pc what it met (UnboxFeedback: an int where a float
  // was guessed, or a failure) and retires the version, and the next version
  // is built from that feedback, until kMaxUnboxBuilds versions; unbox_final
  // then says the function keeps what it has.
  std::atomic<const UnboxedCode*> unboxed{nullptr};
  std::vector<std::unique_ptr<UnboxedCode>> unboxed_versions;
  std::vector<uint8_t> unbox_feedback;
  bool unbox_final = false;
  ShardedCounter unboxed_entries;  // frames that ran it: calls, and loops entered
  RelaxedCounter unbox_deopts;     // failed guards
  std::atomic<int32_t> unbox_deopt_pc{-1};  // the last one's

  FunctionRuntime() = default;
  FunctionRuntime(const FunctionRuntime&) = delete;
  FunctionRuntime& operator=(const FunctionRuntime&) = delete;
  ~FunctionRuntime();
};

struct FunctionCode {
  std::string name;
  std::string qualname;
  int first_line = 0;

  // Parameters: positional-only ones first, then positional-or-keyword, then
  // keyword-only, as in a Python signature.
  std::vector<Param> params;
  int num_posonly = 0;
  int num_kwonly = 0;
  ValueType result = ValueType::kNone;
  // @ppy.nogil: a call from Python releases the GIL while it runs (vm/gil.h).
  bool nogil = false;

  std::vector<RegisterType> registers;
  std::vector<ConstantValue> constants;  // registers [params, params + constants)
  std::vector<PyObject*> objects;         // owned references
  std::vector<Instr> code;
  std::vector<int32_t> lines;  // the source line of every instruction

  // Derived when the module is loaded (vm/loader.cpp), never serialized.
  const struct ModuleCode* module = nullptr;
  std::vector<uint64_t> initial_constants;  // the constant registers' bits
  std::vector<uint8_t> object_params;       // object parameters, owned by the frame
  std::vector<uint8_t> owned_objects;       // other object registers released at exit
  int num_buffer_params = 0;
  // No object parameter, no other object register and no buffer parameter:
  // a frame with nothing to own, release or check for contiguity at its
  // start, which a call can run as machine code with no interpreter frame
  // around it (vm/interpreter.cpp, RunsMachineCodeDirectly). (A buffer local
  // is borrowed by BORROW_U, which only the interpreter runs.)
  bool scalar_frame = false;
  // A scalar frame that calls nothing (no instruction flagged CALL or OBJ):
  // it cannot recurse, so its call checks the recursion limit without
  // counting itself and checks no stack (CallLeaf).
  bool leaf_frame = false;
  // num_params(), end_of_constants() and num_registers(), kept as ints for
  // the frame a call makes (MakeFrame), which would otherwise divide
  // vector sizes by their elements' at every call.
  int frame_params = 0, frame_constants_end = 0, frame_registers = 0;
  int frame_words = 0;  // a frame's Values: the registers, a spare, the unboxed slots (FrameBytes)
  // Int parameters no instruction writes (the first kMaxValueParams): what
  // value specialization may treat as constants (FunctionRuntime::seen).
  std::vector<uint8_t> value_params;
  // The pcs some path reaches from a store into a buffer. Machine code does
  // not count its stores (g_effects, see vm/runtime.h): when it leaves at such
  // a pc, the interpreter counts them as done. (Object-mode instructions
  // always run on the interpreter, which counts their effects, and a typed
  // callee counts its own.)
  std::vector<bool> after_store;
  // Whether any instruction may have an effect (a store, object-mode code, a
  // call): a function with none has none as Python code either.
  bool may_have_effects = false;
  std::vector<int32_t> loop_headers;  // targets of back edges, sorted: where machine code can be entered
  // Float registers a frame reserves past `registers` for unboxed code (vm/unbox.h).
  int unbox_slots = 0;
  // Whether machine code for it would move object references (MOVE_O; never
  // for a @ppy.nogil function, whose machine code leaves them to the
  // interpreter): then a nogil frame does not enter it (vm/interpreter.cpp,
  // enter_jit).
  bool moves_objects = false;
  // For an unboxed version's machine-code function (UnboxedCode::machine):
  // the function it is a version of, whose frames run it and whose caches
  // (type_cache, by pc: the code is the same pc for pc) its machine code reads.
  const FunctionCode* unboxed_of = nullptr;

  // What this process keeps about the function while it runs: counters and
  // machine code. A separate object, so that the code above (what the verifier
  // checked) is unchanged through a const FunctionCode&, and this is what
  // changes, through a pointer that const does not reach.
  const std::unique_ptr<FunctionRuntime> runtime;

  bool IsLoopHeader(int32_t pc) const;
  bool IsJitLoopEntry(int32_t pc) const;

  FunctionCode();
  FunctionCode(const FunctionCode&) = delete;
  FunctionCode& operator=(const FunctionCode&) = delete;
  ~FunctionCode();

  int num_params() const { return static_cast<int>(params.size()); }
  // The source line of the instruction at pc; the def's line for a pc
  // outside the code (an error before the first instruction, say).
  int LineAt(int pc) const { return pc >= 0 && pc < static_cast<int>(lines.size()) ? lines[pc] : first_line; }
  int num_registers() const { return static_cast<int>(registers.size()); }
  int first_constant() const { return num_params(); }
  int end_of_constants() const { return num_params() + static_cast<int>(constants.size()); }
  bool IsConstantRegister(int reg) const { return reg >= first_constant() && reg < end_of_constants(); }
};

// What machine code reads to know that a module function's name still holds
// it, so that it may run the function's code in place of the call
// (asmjit-backend/codegen.h, EmitInlineCall): the word that versions the
// module's namespace (vm/interpreter.cpp, GlobalsVersion), null where every
// call looks the name up, and per function index the address of its
// FunctionRuntime::globals_version. Plain pointers at fixed offsets.
struct ModuleVersions {
  const uint64_t* globals = nullptr;
  const uint64_t* const* bound = nullptr;
  const BoundPython* const* bound_python = nullptr;  // per function index: its FunctionRuntime's
};

struct ModuleCode {
  std::string module_name;
  std::string filename;
  std::vector<std::unique_ptr<FunctionCode>> functions;

  // The namespace the functions run in, set when the module is bound (strong
  // references, released by the owner of the ModuleCode).
  PyObject* globals = nullptr;
  PyObject* builtins = nullptr;
  // Whether the module's own code binds its functions (its defs run): direct
  // calls then check the callee's name (CallModuleFunction). Code run without a
  // module (the unit tests) calls directly.
  bool defs_bind_names = false;
  // From 3.12: a dict watcher versions `globals` (vm/interpreter.cpp, WatchGlobals).
  bool globals_watched = false;
  bool builtins_watched = false;  // the same, for the builtins (a dict)
  ModuleVersions versions;                   // set by PrepareModule and WatchGlobals
  std::vector<const uint64_t*> bound_words;  // what versions.bound points at
  std::vector<const BoundPython*> bound_pythons;  // what versions.bound_python points at

  // While machine code is pending (JitState::kPending): where it will appear,
  // the lock its builder holds, what it must match, and when we last looked.
  std::string pending_code_path;
  std::string pending_lock_path;
  std::string pending_version;
  std::string pending_key;
  mutable uint64_t pending_polled_ns = 0;
};

}  // namespace ppy
