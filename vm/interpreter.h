// The interpreter: runs a verified FunctionCode on typed registers.
#pragma once

#include <string>

#include "vm/code.h"
#include "vm/runtime.h"

namespace ppy {

// Runs `fn` with its parameters already converted to register values (buffers as
// borrowed views). On success stores the result (an owned reference for object
// results, None included) and returns true; on error returns false with a Python
// exception set whose traceback has a frame for every ppy function it crossed.
bool Interpret(const FunctionCode& fn, const Value* args, Value* result);

// Runs one chunk of a prange loop (vm/prange.h): `regs` is the chunk's copy
// of the frame, `pc` the loop's test; returns at the loop's PRANGE_END.
struct PrangeChunk;
bool InterpretChunk(const FunctionCode& fn, Value* regs, int pc, bool views_contiguous, const PrangeChunk& chunk);

// A call of a compiled function: Interpret inside CPython's recursion limit,
// counted (and timed while profiling).
bool CallTyped(const FunctionCode& fn, const Value* args, Value* result);

// The words of a leaf's frame that its callers keep in a fixed array.
inline constexpr int kLeafFrameWords = 16;

// A leaf (FunctionCode::leaf_frame: it cannot recurse) whose frame fits in
// kLeafFrameWords: CallTyped calls it without counting its depth.
inline bool FitsLeafFrame(const FunctionCode& fn) { return fn.leaf_frame && fn.frame_words <= kLeafFrameWords; }

// CallTyped for a leaf that FitsLeafFrame, on `frame`: an array of
// kLeafFrameWords whose first fn.num_params() hold the arguments. Its machine
// code runs on that frame, the recursion limit checked but its depth not
// counted, and no stack checked (the counted call where the machine code is
// not ready, or at the limit).
bool CallLeafOnFrame(const FunctionCode& fn, Value* frame, Value* result);

// CallLeafOnFrame with the arguments copied into a frame of its own.
bool CallLeaf(const FunctionCode& fn, const Value* args, Value* result);

// A call from compiled code of the same module (CALL_FN). CPython looks the
// callee's name up at every call: while the module's namespace binds it to this
// very function the call is direct; otherwise (its def has not run yet, the
// name was deleted, rebound or patched) this calls whatever the name holds,
// builtins included, boxing the arguments and unboxing the result as a typed
// local would (NameError if there is nothing).
bool CallModuleFunction(const FunctionCode& callee, const Value* args, Value* result);

// From 3.12: watches the module's namespace, so that a direct call skips the
// lookup while the namespace is unchanged (3.11 reads the dict's version
// tag). Under the GIL, after the module's globals are set.
void WatchGlobals(ModuleCode& module);

// For machine code's LOAD_ATTR_GF/GI: `object`'s attribute named by the
// attribute instruction at `pc` of `fn` (the function whose frames run it:
// its type_cache) where the cache finds it in place, a `__slots__` member or
// a value of the instance's values array: borrowed; null where it does not
// (another type, a type changed since, a descriptor, an unset attribute, an
// instance with a dict), and then the interpreter reads it. Runs no Python
// code and raises nothing; the GIL is held.
PyObject* AttributeInPlace(const FunctionCode& fn, int pc, PyObject* object);

// For machine code that reads that attribute without a call: if the cache of
// the instruction at `pc` of `fn` holds a `__slots__` member of one type (an
// object at a fixed offset), that type, its version tag and the offset. A
// type is only compared with, never dereferenced through this pointer: a
// version tag is never given twice, so an object whose type is at that
// address and has that tag is of that type as it was (and the entry is read
// without following any pointer of it: the type may be gone).
bool CachedSlotMember(const FunctionCode& fn, int pc, PyTypeObject** type, unsigned int* version_tag,
                      Py_ssize_t* offset);

// The values a value specialization is for, as the trace, `ppy dis --jit
// --value` and stats() say them: "rows=100, cols=16, flip=True" (registers of
// fn's parameters, with their values).
std::string DescribeValues(const FunctionCode& fn, const KnownValues& values);

// Whether calls are timed, for `ppy run --trace`'s summary.
void SetProfiling(bool enabled);

// How many back edges run between checks for Ctrl-C (and, with the JIT, for a
// switch to machine code).
inline constexpr uint32_t kBackEdgesPerCheck = 4096;

}  // namespace ppy
