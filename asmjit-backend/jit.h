// The asmjit tier: compiling functions to machine code, and tiering.
//
// Install() hooks the tier into the interpreter (vm/tiering.h) according to
// PPY_JIT: "0" keeps everything on the interpreter, "eager" compiles every
// function before its first call, anything else compiles functions whose calls
// or loops get hot. Code is position-independent: the same bytes run from memory
// this process compiled or from the cache (`ppy build --warm`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "asmjit-backend/asmjit_api.h"
#include "vm/code.h"

namespace ppy::jit {

void Install();

// The architecture and CPU features machine code is built for, as cached code
// is keyed: "x86_64-avx" (where the CPU has AVX), "x86_64-sse2" or "aarch64".
std::string Target();

// A guard the machine code relies on: a check, not of the program's
// semantics but of an assumption the code was made under (a loop's indexes
// stay inside its buffers, a name still holds the function a call runs in
// place), whose failure hands the rest of the loop or call to the
// interpreter. `pc`: an instruction of what it guards (a call, a loop's test
// or its closing instruction), whose line is the guard's, or -1 for the
// function's entry (its def line); `what` says it in
// words, for `ppy dis --jit` and `ppy run --trace`.
struct JitGuard {
  int pc = 0;
  std::string what;
};

// Compiles `fn` to relocatable bytes. `listing`, if not null, receives the
// assembly, and `guards` the guards the code relies on. `known`: a value
// specialization's constants (none: the general code).
bool CompileBlob(const FunctionCode& fn, Blob* blob, std::string* listing, std::string* error,
                 const KnownValues& known = {}, std::vector<JitGuard>* guards = nullptr);

// The known values a specialization of `fn` would have from what its calls
// showed: its value parameters that kept one value so far.
KnownValues ValuesSeen(const FunctionCode& fn);

// Compiles and installs fn's value specialization from ValuesSeen, or marks
// it unavailable (nothing kept one value, no loop to gain from it, or the
// compile failed); what the tiering hook runs once the general code exists.
void Specialize(const FunctionCode& fn);

// Maps `blob` executable and makes it `fn`'s machine code, in `runtime` (the
// function's runtime state, fn.runtime): the code itself is not changed.
bool InstallBlob(const FunctionCode& fn, FunctionRuntime* runtime, const uint8_t* bytes, size_t size, uint64_t entry,
                 std::string* error);

// Compiles and installs; what the tiering hook runs. `trigger` says why.
bool CompileAndInstall(const FunctionCode& fn, const char* trigger);

// Events for `ppy run --trace` (a compilation, a load from the cache).
using Listener = void (*)(const std::string& event);
void SetListener(Listener listener);
void Report(const std::string& event);

}  // namespace ppy::jit
