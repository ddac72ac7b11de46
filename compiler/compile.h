// The compiler's driver: source to checked, lowered module code.
#pragma once

#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/typecheck.h"
#include "regions/region_code.h"
#include "vm/code.h"

namespace ppy {

// What `ppy check -v` and `ppy run --trace` say about one top-level function.
struct FunctionReport {
  std::string name;
  int line = 0;
  int statement_index = -1;  // among the module's top-level statements
  int code_index = -1;       // in ModuleCode::functions, when compiled
  bool compiled = false;
  bool native_required = false;
  std::string reason;  // why it runs as Python
  Loc reason_loc;
  // Compiled, but why calls from Python run its Python function (the module
  // binds that to the name: compile.cpp, SmallCallAsPython), or empty.
  std::string python_entry;
  // Unannotated locals whose assignments disagree, so they hold dynamic
  // values: "s (int at line 3, float at line 5)".
  std::vector<std::string> dynamic_locals;
  // The region tier: the function's index among the module's regions, or -1;
  // for a candidate that is not a region, why not.
  int region_index = -1;
  int region_ops = 0;
  std::string region_reason;
  Loc region_reason_loc;
  // An element-generic function (a parameter annotated `Buffer` alone): that
  // parameter's position, and the other element types' specializations as
  // (ElemType, index in ModuleCode::functions); code_index is the f64 one.
  int generic_param = -1;
  std::vector<std::pair<int, int>> specializations;
};

struct CompileResult {
  std::unique_ptr<ModuleCode> code;
  std::vector<FunctionReport> functions;
  std::vector<Diagnostic> diagnostics;
  std::vector<regions::RegionCode> regions;
};

// Compiles an ast.Module (from ParseSource). Never fails for a valid tree: what
// it cannot compile is reported per function and runs as Python. With
// `regions`, functions of curated torch operations become ATen regions (only
// when the region executor was built, i.e. torch was there to build it).
// With `object_code_as_python`, what the import hook and `ppy check` do, a
// function of mostly object operations runs as Python, since CPython runs
// those faster (compile.cpp, ObjectCodeAsPython); tests and benchmarks of the
// interpreter's object mode turn it off to have such functions compiled.
CompileResult CompileModule(PyObject* tree, const std::string& filename, const std::string& module_name,
                            bool regions = false, bool object_code_as_python = true);

}  // namespace ppy
