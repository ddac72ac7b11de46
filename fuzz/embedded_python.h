// What fuzz_entry and fuzz_compiler share: one embedded CPython for the whole
// run, and the path a cache entry takes through the VM extension once it has
// been read (ppy._ppy.load, CompiledModule.attach and the introspection `ppy dis`
// and `ppy run --trace` use), without running any of its code.
#pragma once

#include <Python.h>

#include <string>
#include <string_view>

#include "vm/serialize.h"

namespace ppy::fuzz {

// Starts CPython once (idempotent). Python objects are allocated with malloc
// (PYTHONMALLOC=malloc), so that ASan sees a reference-count mistake as a
// use-after-free or a leak rather than a silent reuse inside pymalloc's pools.
// Python's own signal handlers stay off: SIGINT, SIGALRM and friends are
// libFuzzer's.
void InitEmbeddedPython();

// Reports a broken invariant of ppy (not of the input) and aborts, which
// libFuzzer records as a crash with the input that caused it.
[[noreturn]] void Fail(std::string_view what, std::string_view detail);

// The exception that is set, as "Type: message" (and clears it).
std::string TakeException();

// Does with a parsed, verified entry what the hook does: wraps it as
// ppy._ppy.CompiledModule (_ppy.load), attaches it to a fresh namespace, binds
// every function and region to a Python function, and asks for its names,
// disassembly, tiers, stats and region listings. Consumes `entry.module`.
void ExerciseEntry(Entry& entry);

}  // namespace ppy::fuzz
