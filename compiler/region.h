// Region extraction: a function of curated torch operations to an op sequence.
//
// A function is a candidate when a parameter or its result is annotated
// `torch.Tensor`. It becomes a region when its parameters are tensors, ints,
// floats and bools, and its body is assignments of curated operations
// (regions/region_ops.def) ending in a return of a tensor or a tuple of
// tensors. Otherwise it stays on the other tiers, and the reason (the
// operation or statement, and where) is reported for `ppy check -v`.
#pragma once

#include <string>

#include "compiler/syntax.h"
#include "compiler/typecheck.h"
#include "regions/region_code.h"

namespace ppy {

struct RegionAttempt {
  bool candidate = false;  // some parameter or the result is a torch.Tensor
  bool ok = false;
  regions::RegionCode code;
  std::string reason;  // why a candidate is not a region
  Loc reason_loc;
};

RegionAttempt ExtractRegion(const FunctionDef& def, const ModuleInfo& module, const std::string& filename);

}  // namespace ppy
