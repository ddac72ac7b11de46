// Makes verified code runnable: binds a ModuleCode to its namespace and derives
// what the interpreter needs per call (constant register values, which object
// registers a frame owns).
#pragma once

#include "vm/code.h"
#include "vm/status.h"

namespace ppy {

// Prepares every function of `module`, which must have been verified (every
// path to the VM goes through ParseEntry, which runs the verifier). `globals` is
// the module's namespace dict; the builtins are the ones it names, as for
// Python functions. Takes new references to both.
Status PrepareModule(ModuleCode& module, PyObject* globals);

// Releases the references PrepareModule took.
void ReleaseModule(ModuleCode& module);

}  // namespace ppy
