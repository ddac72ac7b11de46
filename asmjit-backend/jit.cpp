#include "asmjit-backend/jit.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "asmjit-backend/code_cache.h"
#include "asmjit-backend/codegen.h"
#include "asmjit-backend/helpers.h"
#include "vm/gil.h"
#include "vm/interpreter.h"
#include "vm/runtime.h"
#include "vm/status.h"
#include "vm/tiering.h"

#if defined(__x86_64__)
#include "asmjit-backend/emit_x86.h"
#elif defined(__aarch64__)
#include "asmjit-backend/emit_a64.h"
#endif

namespace ppy::jit {

#if defined(__x86_64__)
using NativeBackend = X86Backend;
#elif defined(__aarch64__)
using NativeBackend = A64Backend;
#endif

namespace {

// Every kBackEdgesPerCheck back edges: Ctrl-C and a prange stop (vm/gil.h);
// in a nogil scope, the GIL goes back if a helper took it (machine code holds
// no Python object, so it never needs it between helpers). A thread that
// holds the GIL lets it go every switch period, as the interpreter's loop
// checks do (YieldGilIfDue), so that a long loop in machine code does not
// starve the other threads. Not here while it borrows a torch tensor, whose
// memory another thread may move (resize_) while the machine code holds its
// address: the machine code leaves for the interpreter instead (2), which
// switches at its next loop check and refreshes its views, then enters the
// machine code again; where it cannot leave (`may_leave` 0) the GIL stays.
// (A prange worker is in a nogil scope for good: vm/prange.cpp.)
int64_t CheckSignals(int64_t may_leave) {
  if (!PollInterrupts()) return 1;
  ReleaseGilAgain();  // (a no-op outside a nogil scope)
  if (InNogil()) return 0;
  if (!ThreadBorrowsTorchViews()) {
    YieldGilIfDue();
    return 0;
  }
  return may_leave != 0 && GilSwitchDue() ? 2 : 0;
}

int64_t CallTypedFromJit(int64_t caller, int64_t index, int64_t args, int64_t result) {
  const FunctionCode& fn = *reinterpret_cast<const FunctionCode*>(caller);
  return CallModuleFunction(*fn.module->functions[index], reinterpret_cast<const Value*>(args),
                            reinterpret_cast<Value*>(result))
             ? 1
             : 0;
}

double ComplexQuotReal(double a, double b, double c, double d) { return _Py_c_quot({a, b}, {c, d}).real; }
double ComplexQuotImag(double a, double b, double c, double d) { return _Py_c_quot({a, b}, {c, d}).imag; }
double ComplexAbsOf(double real, double imag) { return _Py_c_abs({real, imag}); }

int64_t Fill(int64_t data, int64_t value, int64_t bytes) {
  std::memset(reinterpret_cast<void*>(data), static_cast<int>(value), static_cast<size_t>(bytes));
  return 0;
}

// The sum of count elements from p, in blocks whose trip count the compiler
// knows (so that it vectorizes them), each summed in a type that cannot
// overflow in a block: int32 for 64 elements of 16 bits or fewer.
template <typename T>
int64_t SumOf(const T* p, int64_t count) {
  using Block = std::conditional_t<sizeof(T) <= 2, int32_t, int64_t>;
  constexpr int64_t kBlock = 64;
  int64_t total = 0, i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    Block block = 0;
    for (int64_t k = 0; k < kBlock; ++k) block += p[i + k];
    total += block;
  }
  for (; i < count; ++i) total += p[i];
  return total;
}

int64_t Sum(int64_t data, int64_t count, int64_t elem) {
  const void* p = reinterpret_cast<const void*>(data);
  switch (static_cast<ElemType>(elem)) {
    case ElemType::kI32: return SumOf(static_cast<const int32_t*>(p), count);
    case ElemType::kU32: return SumOf(static_cast<const uint32_t*>(p), count);
    case ElemType::kI16: return SumOf(static_cast<const int16_t*>(p), count);
    case ElemType::kU16: return SumOf(static_cast<const uint16_t*>(p), count);
    case ElemType::kI8: return SumOf(static_cast<const int8_t*>(p), count);
    case ElemType::kU8:
    case ElemType::kBool: return SumOf(static_cast<const uint8_t*>(p), count);
    default: std::abort();  // (the code generator passes only these: SummedElements)
  }
}

// LOAD_ATTR_GF/GI's read in place (AttributeInPlace), by the caches of the
// function whose unboxed version `function` is.
int64_t AttributeInPlaceFromJit(int64_t function, int64_t pc, int64_t object) {
  const FunctionCode& fn = *reinterpret_cast<const FunctionCode*>(function);
  const FunctionCode& frames = fn.unboxed_of != nullptr ? *fn.unboxed_of : fn;
  return reinterpret_cast<int64_t>(AttributeInPlace(frames, static_cast<int>(pc), reinterpret_cast<PyObject*>(object)));
}

JitHelpers MakeHelpers() {
  JitHelpers helpers{};
  helpers.check_signals = CheckSignals;
  helpers.call_typed = CallTypedFromJit;
  helpers.floor_div = FloorDivFloat;
  helpers.mod = ModFloat;
  helpers.complex_quot_real = ComplexQuotReal;
  helpers.complex_quot_imag = ComplexQuotImag;
  helpers.complex_abs = ComplexAbsOf;
  helpers.fill = Fill;
  helpers.sum = Sum;
  helpers.attribute_in_place = AttributeInPlaceFromJit;
  for (int i = 0; i < kMathCount; ++i) {
    helpers.math1[i] = kMathInfo[i].fast1;
    helpers.math2[i] = kMathInfo[i].fast2;
  }
  return helpers;
}

Listener g_listener = nullptr;

double Milliseconds(const timespec& start) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start.tv_sec) * 1e3 + (now.tv_nsec - start.tv_nsec) / 1e6;
}

// Collects asmjit's error for the message; asmjit itself never throws.
class ErrorCollector : public asmjit::ErrorHandler {
 public:
  void handleError(asmjit::Error, const char* message, asmjit::BaseEmitter*) override {
    if (first.empty()) first = message;
  }
  std::string first;
};

}  // namespace

const JitHelpers& Helpers() {
  static const JitHelpers helpers = MakeHelpers();
  return helpers;
}

void SetListener(Listener listener) { g_listener = listener; }

void Report(const std::string& event) {
  if (g_listener != nullptr) g_listener(event);
}

#if defined(__x86_64__)
// AVX's three-operand float instructions spare the register copies SSE2's
// two-operand forms need; PPY_JIT_ISA=sse2 keeps to the baseline (tests run both).
bool UsesAvx() {
  static const bool avx = [] {
    const char* isa = std::getenv("PPY_JIT_ISA");
    if (isa != nullptr && std::strcmp(isa, "sse2") == 0) return false;
    return asmjit::CpuInfo::host().features().x86().hasAVX();
  }();
  return avx;
}
#endif

std::string Target() {
#if defined(__x86_64__)
  return UsesAvx() ? "x86_64-avx" : "x86_64-sse2";
#else
  return "aarch64";
#endif
}

namespace {

// A pass after register allocation that removes each instruction `Drops`
// says nothing needs (the passes below).
template <bool (*Drops)(asmjit::BaseNode*)>
class DropPass : public asmjit::Pass {
 public:
  explicit DropPass(const char* name) noexcept : asmjit::Pass(name) {}

  asmjit::Error run(asmjit::Zone*, asmjit::Logger*) override {
    asmjit::BaseBuilder& cb = *_cb;
    asmjit::BaseNode* node = cb.firstNode();
    while (node != nullptr) {
      asmjit::BaseNode* next = node->next();
      if (Drops(node)) cb.removeNode(node);
      node = next;
    }
    return asmjit::kErrorOk;
  }
};

// An unconditional jump to a label that follows it with only labels
// between, a jump to the very next instruction. A `break` out of a while
// loop makes one when the loop's back edge emits no code where it stands
// (its test moved into the body, and the allocator removed the unreachable
// rest), as in the tokenizer's word loop: a taken branch per token, for
// nothing.
bool JumpsToNext(asmjit::BaseNode* node) {
  if (!node->isInst()) return false;
  const asmjit::InstNode* jump = node->as<asmjit::InstNode>();
  if (jump->id() != NativeBackend::kJumpInstId || jump->opCount() != 1 || !jump->op(0).isLabel()) return false;
  for (asmjit::BaseNode* after = node->next(); after != nullptr && after->isLabel(); after = after->next()) {
    if (after->as<asmjit::LabelNode>()->labelId() == jump->op(0).id()) return true;
  }
  return false;
}

// A move into a general register whose value nothing reads, because the
// instructions that follow it, up to one that writes the whole register
// again, neither read it nor may leave (no label, jump or call comes
// between: the backend's UseOf answers for a fixed table of instructions and
// says kUnknown for the rest). The allocator makes such moves where the code
// generator moved a known value into a register that its readers then took
// as an immediate: in each copy of a fully unrolled loop, `(i + 1) % cols`
// with i and cols known is moved twice and read by none (the features
// kernel's interaction loop: 32 dead moves per row, 4% of its instructions).
bool IsDeadMove(asmjit::BaseNode* node) {
  uint32_t reg;
  if (!node->isInst() || !NativeBackend::IsRegisterMove(*node->as<asmjit::InstNode>(), &reg)) return false;
  for (asmjit::BaseNode* after = node->next(); after != nullptr && after->isInst(); after = after->next()) {
    switch (NativeBackend::UseOf(*after->as<asmjit::InstNode>(), reg)) {
      case RegisterUse::kNone: continue;
      case RegisterUse::kOverwrites: return true;
      case RegisterUse::kReads:
      case RegisterUse::kUnknown: return false;
    }
  }
  return false;
}

}  // namespace

// asmjit's register allocation takes time that grows faster than linearly with
// a function's size, with the GIL held (measured on straight-line int code:
// 3,000 instructions 0.25 s, 7,500 1.2 s, 16,000 8.3 s), so a function longer
// than this stays on the interpreter, whose cost is linear. Generated code
// reaches it; kernels written by hand are far below it.
constexpr size_t kMaxJitInstructions = 4096;

bool CompileBlob(const FunctionCode& fn, Blob* blob, std::string* listing, std::string* error,
                 const KnownValues& known, std::vector<JitGuard>* guards) {
  if (fn.code.size() > kMaxJitInstructions) {
    *error = Format("too large for machine code (%zu instructions; the limit is %zu)", fn.code.size(),
                    kMaxJitInstructions);
    return false;
  }
  // Code that would never run is not made: a trace that said "compiled"
  // would mislead, and the compile would cost for nothing.
  if (!MachineCodeCanRun(fn)) {
    *error = "machine code would never run: the function starts with, and each of its loops contains, an "
             "instruction only the interpreter runs (object code)";
    return false;
  }
  asmjit::Environment environment = asmjit::Environment::host();
  asmjit::CodeHolder code;
  code.init(environment);
  ErrorCollector errors;
  code.setErrorHandler(&errors);
  asmjit::StringLogger logger;
  if (listing != nullptr) code.setLogger(&logger);
#if defined(__x86_64__)
  NativeBackend backend(&code, UsesAvx());
#else
  NativeBackend backend(&code);
#endif
  asmjit::BaseCompiler& cc = backend.compiler();
  if (cc.addPass(cc.newPassT<DropPass<IsDeadMove>>("DropDeadMoves")) != asmjit::kErrorOk ||
      cc.addPass(cc.newPassT<DropPass<JumpsToNext>>("DropJumpsToNext")) != asmjit::kErrorOk) {
    *error = "asmjit: cannot add a pass";
    return false;
  }
  CodeGen<NativeBackend> generator(backend, fn, known);
  if (guards != nullptr) generator.NoteGuards();
  generator.Generate();
  if (!generator.missing().empty()) {
    *error = Format("no machine code for %s, which vm/opcodes.def flags JIT",
                    std::string(InfoOf(generator.missing()[0]).name).c_str());
    return false;
  }
  if (backend.compiler().finalize() != asmjit::kErrorOk || !errors.first.empty()) {
    *error = "asmjit: " + (errors.first.empty() ? std::string("finalize failed") : errors.first);
    return false;
  }
  if (listing != nullptr) *listing = logger.data();
  if (guards != nullptr) *guards = generator.guards();
  return CopyRelocatable(code, backend.entry_label(), blob, error);
}

namespace {

// Copies code into fresh executable pages (*memory, *mapped bytes).
bool MapExecutable(const uint8_t* bytes, size_t size, void** memory_out, size_t* mapped_out, std::string* error) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t mapped = (size + page - 1) / page * page;
  void* memory = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    *error = "cannot map memory for machine code";
    return false;
  }
  std::memcpy(memory, bytes, size);
  if (mprotect(memory, mapped, PROT_READ | PROT_EXEC) != 0) {
    munmap(memory, mapped);
    *error = "cannot make machine code executable";
    return false;
  }
  __builtin___clear_cache(static_cast<char*>(memory), static_cast<char*>(memory) + size);
  *memory_out = memory;
  *mapped_out = mapped;
  return true;
}

}  // namespace

bool InstallBlob(const FunctionCode& fn, FunctionRuntime* runtime, const uint8_t* bytes, size_t size, uint64_t entry,
                 std::string* error) {
  if (entry >= size) {
    *error = "the entry lies outside the code";
    return false;
  }
  // Installed code stays: another thread may be running it (see FunctionRuntime).
  if (runtime->jit_state.load(std::memory_order_acquire) == JitState::kCompiled) return true;
  void* memory = nullptr;
  size_t mapped = 0;
  if (!MapExecutable(bytes, size, &memory, &mapped, error)) return false;
  runtime->jit_memory = memory;
  runtime->jit_size = mapped;
  runtime->jit_entry = reinterpret_cast<JitFunction>(static_cast<char*>(memory) + entry);
  runtime->jit_enters_at_start.store(EntersAtStart(fn), std::memory_order_relaxed);
  runtime->jit_loop_entries = LoopEntries(fn);
  if (fn.module != nullptr) MarkInlinedCallees(fn);
  runtime->jit_state.store(JitState::kCompiled, std::memory_order_release);
  return true;
}

bool CompileAndInstall(const FunctionCode& fn, const char* trigger) {
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  Blob blob;
  std::string error;
  if (!CompileBlob(fn, &blob, nullptr, &error) || !InstallBlob(fn, fn.runtime.get(), blob.bytes.data(), blob.bytes.size(), blob.entry, &error)) {
    fn.runtime->jit_state = JitState::kUnavailable;
    Report(Format("jit: %s stays on the interpreter: %s", fn.qualname.c_str(), error.c_str()));
    return false;
  }
  Report(Format("jit: compiled %s (trigger: %s), %zu bytes in %.2f ms", fn.qualname.c_str(), trigger, blob.bytes.size(),
                Milliseconds(start)));
  return true;
}

KnownValues ValuesSeen(const FunctionCode& fn) {
  KnownValues known;
  for (size_t k = 0; k < fn.value_params.size(); ++k) {
    const FunctionRuntime::SeenValue& seen = fn.runtime->seen[k];
    if (seen.state.load(std::memory_order_relaxed) != FunctionRuntime::kOneValue) continue;
    known.emplace_back(fn.value_params[k], seen.value.load(std::memory_order_relaxed));
  }
  return known;
}

void Specialize(const FunctionCode& fn) {
  FunctionRuntime& runtime = *fn.runtime;
  const KnownValues known = ValuesSeen(fn);
  // Without a loop the constants save a few instructions per call, less
  // than the compile costs.
  if (known.empty() || fn.loop_headers.empty()) {
    runtime.special_state.store(JitState::kUnavailable, std::memory_order_release);
    return;
  }
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  Blob blob;
  std::string error;
  void* memory = nullptr;
  size_t mapped = 0;
  if (!CompileBlob(fn, &blob, nullptr, &error, known) || blob.entry >= blob.bytes.size() ||
      !MapExecutable(blob.bytes.data(), blob.bytes.size(), &memory, &mapped, &error)) {
    runtime.special_state.store(JitState::kUnavailable, std::memory_order_release);
    Report(Format("jit: %s has no specialization: %s", fn.qualname.c_str(), error.c_str()));
    return;
  }
  runtime.special_memory = memory;
  runtime.special_size = mapped;
  runtime.special_entry = reinterpret_cast<JitFunction>(static_cast<char*>(memory) + blob.entry);
  runtime.special_count = static_cast<int>(known.size());
  for (size_t k = 0; k < known.size(); ++k) {
    runtime.special_regs[k] = static_cast<uint8_t>(known[k].first);
    runtime.special_values[k] = known[k].second;
  }
  runtime.special_state.store(JitState::kCompiled, std::memory_order_release);
  Report(Format("jit: specialized %s for %s (other values run the general code), %zu bytes in %.2f ms",
                fn.qualname.c_str(), DescribeValues(fn, known).c_str(), blob.bytes.size(), Milliseconds(start)));
}

namespace {

uint64_t NowNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + now.tv_nsec;
}

void StopWaiting(const ModuleCode& module, JitState state) {
  for (const auto& fn : module.functions) {
    if (fn->runtime->jit_state == JitState::kPending) fn->runtime->jit_state = state;
  }
}

// Whether a stat result is owned by this user (or root) and writable by no
// one else: the rule of ppy._entry.private, for the folder and the file.
bool Private(const struct stat& status) {
  return (status.st_uid == geteuid() || status.st_uid == 0) && (status.st_mode & 022) == 0;
}

// Reads the machine-code file a builder is writing, under the cache's trust
// rules (docs/cli.md): a private regular file in a private folder, opened
// relative to the checked folder without following a symlink or blocking on a
// FIFO. False if it is missing or not to be trusted.
bool ReadTrustedFile(const std::string& path, std::string* contents) {
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  int dir_fd = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return false;
  struct stat status;
  int fd = -1;
  if (fstat(dir_fd, &status) == 0 && Private(status)) {
    fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  }
  close(dir_fd);
  if (fd < 0) return false;
  bool ok = fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && Private(status);
  contents->clear();
  char chunk[1 << 16];
  while (ok) {
    ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0) ok = false;
    if (got <= 0) break;
    contents->append(chunk, static_cast<size_t>(got));
  }
  close(fd);
  return ok;
}

// Whether the builder still holds the lock (it releases it with its process).
bool BuilderRunning(const std::string& lock_path) {
  int fd = open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  bool locked = flock(fd, LOCK_SH | LOCK_NB) != 0;
  close(fd);
  return locked;
}

void PollPending(const FunctionCode& fn) {
  const ModuleCode& module = *fn.module;
  uint64_t now = NowNs();
  if (now - module.pending_polled_ns < 5'000'000) return;
  module.pending_polled_ns = now;
  std::string contents;
  if (ReadTrustedFile(module.pending_code_path, &contents)) {
    StatusOr<int> loaded = LoadMachineCode(module, contents, module.pending_version, module.pending_key);
    if (loaded.ok()) {
      Report(Format("jit: mapped machine code for %d functions of %s from %s (it appeared while running)", *loaded,
                    module.module_name.c_str(), module.pending_code_path.c_str()));
      StopWaiting(module, JitState::kNone);
      return;
    }
  }
  if (!BuilderRunning(module.pending_lock_path)) {
    // The builder is gone without leaving code: compile here as usual.
    StopWaiting(module, JitState::kNone);
  }
}

}  // namespace

void Install() {
  const char* setting = std::getenv("PPY_JIT");
  std::string mode = setting ? setting : "";
  g_tiering.compile = CompileAndInstall;
  g_tiering.poll = PollPending;
  // PPY_JIT_SPECIALIZE=0: general code only (to measure what specialization gains).
  const char* specialize = std::getenv("PPY_JIT_SPECIALIZE");
  g_tiering.specialize = specialize != nullptr && std::strcmp(specialize, "0") == 0 ? nullptr : Specialize;
  g_tiering.helpers = &Helpers();
  const char* unbox = std::getenv("PPY_UNBOX");
  g_tiering.unbox = unbox == nullptr || std::strcmp(unbox, "0") != 0;
  if (mode == "0" || mode == "off") {
    g_tiering.mode = JitMode::kOff;
  } else if (mode == "eager") {
    g_tiering.mode = JitMode::kEager;
  } else {
    g_tiering.mode = JitMode::kHot;
  }
}

}  // namespace ppy::jit
