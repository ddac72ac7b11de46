// See vm/prange.h.

#include "vm/prange.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "vm/gil.h"
#include "vm/interpreter.h"
#include "vm/python_compat.h"

namespace ppy {

// One chunk of a loop: its frame, and what it raised.
struct PrangeChunk {
  Value* regs = nullptr;
  PyObject* error = nullptr;  // owned
  bool stopped = false;       // it raised only because the loop was stopping
};

namespace {

int ThreadsFromEnvironment() {
  if (const char* setting = std::getenv("PPY_NUM_THREADS"); setting != nullptr && *setting != '\0') {
    char* end = nullptr;
    const long count = std::strtol(setting, &end, 10);
    if (*end == '\0' && count >= 1 && count <= kMaxPrangeThreads) return static_cast<int>(count);
  }
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
    const int count = CPU_COUNT(&cpus);
    if (count >= 1) return count < kMaxPrangeThreads ? count : kMaxPrangeThreads;
  }
  return 1;
}

// Whether this thread is one of the pool's: a prange loop inside a chunk (in
// a function the chunk calls) runs as one chunk, on this thread, since the
// pool's threads are all busy with the outer loop.
thread_local bool t_pool_thread = false;

// The pool: native threads, each with a Python thread state of its own (to
// take the GIL when a chunk raises, compiles, or calls code that takes
// objects), each living in a nogil scope for good. Started by the first prange
// loop, never joined: at exit its threads wait, holding nothing. A thread
// takes the GIL once, to make its thread state, and the first loop waits for
// every thread to have done so: a thread still starting when the interpreter
// finalizes would be ended inside PyGILState_Ensure. (They are POSIX threads,
// not std::thread, whose entry would turn that ending, an unwind, into
// std::terminate.) One loop runs on the pool at a time; a loop started in
// another thread meanwhile waits.
class Pool {
 public:
  explicit Pool(int size) : size_(size) {
    for (int i = 0; i < size; ++i) {
      pthread_t thread;
      if (pthread_create(&thread, nullptr, &Pool::Start, this) != 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        --size_;  // (a smaller pool; with none, loops run on their caller's thread)
        continue;
      }
      pthread_detach(thread);
    }
  }
  int size() const { return size_; }

  // Runs task(k) for every k < count, calling poll() every kPollInterval on
  // this thread while they run. The caller holds no GIL.
  void Run(int count, const std::function<void(int)>& task, const std::function<void()>& poll) {
    std::lock_guard<std::mutex> one_loop(run_mutex_);
    std::unique_lock<std::mutex> lock(mutex_);
    while (ready_ < size_) done_.wait(lock);
    task_ = &task;
    count_ = count;
    next_ = 0;
    finished_ = 0;
    ++generation_;
    work_.notify_all();
    while (finished_ < count_) {
      if (done_.wait_for(lock, kPollInterval) == std::cv_status::timeout) {
        lock.unlock();
        poll();
        lock.lock();
      }
    }
    task_ = nullptr;
  }

 private:
  static constexpr std::chrono::milliseconds kPollInterval{20};

  static void* Start(void* pool) {
    static_cast<Pool*>(pool)->Work();
    return nullptr;
  }

  void Work() {
    PyGILState_Ensure();  // this thread's state, for good
    t_pool_thread = true;
    t_gil.depth = 1;
    t_gil.released = t_gil.own = PyEval_SaveThread();
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    ++ready_;
    done_.notify_all();
    for (;;) {
      work_.wait(lock, [&] { return generation_ != seen && task_ != nullptr; });
      seen = generation_;
      while (next_ < count_) {
        const int k = next_++;
        const std::function<void(int)>& task = *task_;
        lock.unlock();
        task(k);
        lock.lock();
        if (++finished_ == count_) done_.notify_all();
      }
    }
  }

  int size_;
  int ready_ = 0;  // threads that have their thread state
  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  const std::function<void(int)>* task_ = nullptr;
  int count_ = 0, next_ = 0, finished_ = 0;
  uint64_t generation_ = 0;
};

// Made under the GIL; a forked child (a DataLoader worker) has none of its
// parent's threads and makes its own.
Pool* g_pool = nullptr;
pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

Pool& ThePool() {
  pthread_once(&g_atfork_once, [] { pthread_atfork(nullptr, nullptr, [] { g_pool = nullptr; }); });
  if (g_pool == nullptr) g_pool = new Pool(ThreadsFromEnvironment());
  return *g_pool;
}

// Python's min(a, b) and max(a, b): the first of equals, NaN comparing false.
template <typename T>
T Combine(PrangeOp op, T a, T b, bool* overflow) {
  switch (op) {
    case PrangeOp::kAdd:
      if constexpr (std::is_same_v<T, int64_t>) {
        T sum;
        *overflow |= __builtin_add_overflow(a, b, &sum);
        return sum;
      } else {
        return a + b;
      }
    case PrangeOp::kMul:
      if constexpr (std::is_same_v<T, int64_t>) {
        T product;
        *overflow |= __builtin_mul_overflow(a, b, &product);
        return product;
      } else {
        return a * b;
      }
    case PrangeOp::kMin: return b < a ? b : a;
    case PrangeOp::kMax: return b > a ? b : a;
  }
  return a;
}

struct Reduction {
  int reg;
  PrangeOp op;
  bool is_float;
};

}  // namespace

bool RunPrange(const FunctionCode& fn, Value* regs, int pc, bool views_contiguous, bool* traced) {
  TakeGil();
  *traced = false;
  const Instr& loop = fn.code[pc];
  const int64_t start = regs[loop.a].i, stop = regs[loop.b].i, step = regs[loop.c].i;
  if (step == 0) return RaiseValueError("range() arg 3 must not be zero");
  // The trip count, as len(range(start, stop, step)).
  const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 magnitude = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  const __int128 trips = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
  if (trips == 0) return true;  // the loop variable stays unassigned, as in Python

  const int body = PrangeChunkStart(fn.code, pc, loop.d - 1);
  std::vector<Reduction> reductions;
  for (int at = pc + 1; at < body; ++at) {
    const Instr& data = fn.code[at];
    reductions.push_back({data.a, static_cast<PrangeOp>(data.c), data.op == Op::PRANGE_REDUCE_F});
  }
  // Chunks store into buffers and may run any typed code: the frame has had effects.
  ++g_effects;

  // One chunk on this thread: in a chunk already, or with no pool thread at all.
  const bool here = t_pool_thread || ThePool().size() == 0;
  const int threads = here ? 1 : ThePool().size();
  const int count = trips < threads ? static_cast<int>(trips) : threads;
  const int num_registers = fn.num_registers();
  std::vector<Value> frames(static_cast<size_t>(count) * num_registers);
  std::vector<PrangeChunk> chunks(count);
  for (int k = 0; k < count; ++k) {
    Value* frame = frames.data() + static_cast<size_t>(k) * num_registers;
    std::memcpy(frame, regs, sizeof(Value) * num_registers);
    const __int128 first = trips * k / count, end = trips * (k + 1) / count;
    frame[loop.a].i = static_cast<int64_t>(start + first * step);
    if (k + 1 < count) frame[loop.b].i = static_cast<int64_t>(start + end * step);
    for (const Reduction& reduction : reductions) {
      if (k == 0 || reduction.op == PrangeOp::kMin || reduction.op == PrangeOp::kMax) continue;
      Value& partial = frame[reduction.reg];
      if (reduction.is_float) partial.f = reduction.op == PrangeOp::kAdd ? -0.0 : 1.0;
      else partial.i = reduction.op == PrangeOp::kAdd ? 0 : 1;
    }
    chunks[k].regs = frame;
  }

  std::atomic<bool> stopping{false};
  PyObject* interrupt = nullptr;  // Ctrl-C's exception, owned
  auto run_chunk = [&](int k) {
    PrangeChunk& chunk = chunks[k];
    const std::atomic<bool>* outer_stop = t_gil.stop;
    if (outer_stop == nullptr && t_pool_thread) t_gil.stop = &stopping;  // (else Ctrl-C is this thread's own)
    t_gil.stopped = false;
    if (!InterpretChunk(fn, chunk.regs, body, views_contiguous, chunk)) {
      TakeGil();
      chunk.error = TakeRaisedException();
      chunk.stopped = t_gil.stopped;
      stopping.store(true, std::memory_order_relaxed);
    }
    t_gil.stop = outer_stop;
    ReleaseGilAgain();  // (whatever in the chunk took it)
  };
  if (here) {
    run_chunk(0);  // (on a pool thread, in its nogil scope; else with the GIL)
    TakeGil();
  } else {
    NogilScope scope;   // releases the GIL for the loop, unless the caller is nogil already,
    ReleaseGilAgain();  // in which case this does
    ThePool().Run(count, run_chunk, [&] {
      TakeGil();
      if (PyErr_CheckSignals() != 0) {
        if (interrupt == nullptr) interrupt = TakeRaisedException();
        else PyErr_Clear();
        stopping.store(true, std::memory_order_relaxed);
      }
      ReleaseGilAgain();
    });
    TakeGil();
  }

  // The exception to raise: Ctrl-C's, else the lowest chunk's own.
  PyObject* raised = interrupt;
  for (PrangeChunk& chunk : chunks) {
    if (raised == nullptr && chunk.error != nullptr && !chunk.stopped) {
      raised = chunk.error;
      *traced = true;
    } else {
      Py_XDECREF(chunk.error);
    }
  }
  if (raised != nullptr) {
    RestoreRaisedException(raised);
    return false;
  }

  // Reductions, combined in chunk order; every other typed register from the
  // chunk that ran the last iteration.
  std::vector<bool> reduced(num_registers, false);
  bool overflow = false;
  for (const Reduction& reduction : reductions) {
    reduced[reduction.reg] = true;
    Value value = chunks[0].regs[reduction.reg];
    for (int k = 1; k < count; ++k) {
      const Value partial = chunks[k].regs[reduction.reg];
      if (reduction.is_float) value.f = Combine(reduction.op, value.f, partial.f, &overflow);
      else value.i = Combine(reduction.op, value.i, partial.i, &overflow);
    }
    regs[reduction.reg] = value;
  }
  const Value* last = chunks[count - 1].regs;
  for (int reg = 0; reg < num_registers; ++reg) {
    if (reduced[reg] || fn.IsConstantRegister(reg) || fn.registers[reg].kind == Kind::kObject) continue;
    regs[reg] = last[reg];
  }
  if (overflow) return RaiseIntOverflow(fn, pc, "a prange reduction");
  return true;
}

}  // namespace ppy
