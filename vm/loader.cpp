#include "vm/loader.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "vm/runtime.h"
#include "vm/status.h"
#include "vm/unbox.h"

namespace ppy {

namespace {

// FunctionCode::after_store: every pc reached from a store's successors
// along falls-through and jumps (the code is verified: targets are in range).
std::vector<bool> ReachedFromStores(const FunctionCode& fn) {
  const int n = static_cast<int>(fn.code.size());
  std::vector<bool> reached(n, false);
  std::vector<int> work;
  auto reach = [&](int pc) {
    if (pc >= 0 && pc < n && !reached[pc]) {
      reached[pc] = true;
      work.push_back(pc);
    }
  };
  auto successors = [&](int pc) {
    const Instr& in = fn.code[pc];
    if (HasFlag(in.op, kFlagJump)) reach(in.d);
    if (!HasFlag(in.op, kFlagEnd)) reach(pc + 1);
  };
  for (int pc = 0; pc < n; ++pc) {
    if (HasFlag(fn.code[pc].op, kFlagStore)) successors(pc);
  }
  while (!work.empty()) {
    int pc = work.back();
    work.pop_back();
    successors(pc);
  }
  return reached;
}

}  // namespace

Status PrepareModule(ModuleCode& module, PyObject* globals) {
  PyObject* builtins = PyDict_GetItemString(globals, "__builtins__");
  if (builtins == nullptr) builtins = PyEval_GetBuiltins();
  if (PyModule_Check(builtins)) builtins = PyModule_GetDict(builtins);
  Py_XSETREF(module.globals, Py_NewRef(globals));
  Py_XSETREF(module.builtins, Py_NewRef(builtins));
  // Until WatchGlobals says how the namespace is versioned, machine code
  // makes every call (null: no inlined call runs).
  module.versions.globals = nullptr;
  module.bound_words.clear();
  module.bound_pythons.clear();
  for (auto& fn : module.functions) {
    module.bound_words.push_back(reinterpret_cast<const uint64_t*>(&fn->runtime->globals_version));
    module.bound_pythons.push_back(&fn->runtime->bound_python);
  }
  module.versions.bound = module.bound_words.data();
  module.versions.bound_python = module.bound_pythons.data();

  for (auto& fn : module.functions) {
    fn->module = &module;
    fn->initial_constants.clear();
    for (const ConstantValue& constant : fn->constants) {
      uint64_t bits = static_cast<uint64_t>(constant.bits);
      if (constant.kind == Kind::kObject) {
        PyObject* object = fn->objects[constant.bits];
        std::memcpy(&bits, &object, sizeof object);
      }
      fn->initial_constants.push_back(bits);
    }
    fn->loop_headers.clear();
    fn->may_have_effects = false;
    fn->moves_objects = false;
    for (const Instr& in : fn->code) {
      if (HasFlag(in.op, kFlagLoop)) fn->loop_headers.push_back(in.d);
      // Machine code runs no object-mode instruction (it leaves them to the
      // interpreter, which counts their effects), and a typed callee counts
      // its own: machine code's own effects are its stores.
      if (HasFlag(in.op, kFlagStore) || HasFlag(in.op, kFlagObj) || HasFlag(in.op, kFlagCall)) {
        fn->may_have_effects = true;
      }
      // (A @ppy.nogil function's machine code leaves MOVE_O to the
      // interpreter: jit::Covers.)
      if (HasFlag(in.op, kFlagJit) && NamesObjectRegister(in.op) && !fn->nogil) fn->moves_objects = true;
    }
    fn->after_store = ReachedFromStores(*fn);
    fn->unbox_slots = UnboxSlotsOf(*fn);
    std::sort(fn->loop_headers.begin(), fn->loop_headers.end());
    fn->loop_headers.erase(std::unique(fn->loop_headers.begin(), fn->loop_headers.end()), fn->loop_headers.end());
    // Int parameters that keep the caller's value for the whole call.
    fn->value_params.clear();
    for (int reg = 0; reg < fn->num_params() && fn->value_params.size() < kMaxValueParams; ++reg) {
      if (fn->registers[reg].kind != Kind::kInt) continue;
      bool written = false;
      for (const Instr& in : fn->code) {
        ForEachRegister(in, [&](int64_t r, bool, bool writes) { written |= writes && r == reg; });
      }
      if (!written) fn->value_params.push_back(static_cast<uint8_t>(reg));
    }
    fn->object_params.clear();
    fn->owned_objects.clear();
    fn->num_buffer_params = 0;
    for (int reg = 0; reg < fn->num_registers(); ++reg) {
      Kind kind = fn->registers[reg].kind;
      if (reg < fn->num_params()) {
        if (kind == Kind::kObject) fn->object_params.push_back(static_cast<uint8_t>(reg));
        if (kind == Kind::kBuffer) ++fn->num_buffer_params;
      } else if (kind == Kind::kObject && !fn->IsConstantRegister(reg)) {
        fn->owned_objects.push_back(static_cast<uint8_t>(reg));
      }
    }
    fn->scalar_frame = fn->object_params.empty() && fn->owned_objects.empty() && fn->num_buffer_params == 0;
    fn->leaf_frame = fn->scalar_frame && std::none_of(fn->code.begin(), fn->code.end(), [](const Instr& in) {
                       return (InfoOf(in.op).flags & (kFlagCall | kFlagObj)) != 0;
                     });
    fn->frame_params = fn->num_params();
    fn->frame_constants_end = fn->end_of_constants();
    fn->frame_registers = fn->num_registers();
    fn->frame_words = fn->frame_registers + 1 + fn->unbox_slots;
  }
  return Status();
}

void ReleaseModule(ModuleCode& module) {
  Py_CLEAR(module.globals);
  Py_CLEAR(module.builtins);
  for (auto& fn : module.functions) {
    Py_CLEAR(fn->runtime->bound_python.function);
    Py_CLEAR(fn->runtime->bound_python.code);
  }
}

}  // namespace ppy
