// An ATen region as data: the op sequence the compiler writes into the cache and
// the executor runs. Torch-free, so that the compiler and the VM extension can
// use it; only regions/executor.cpp includes torch.
//
// A region has two kinds of slots. Tensor slots hold the tensor parameters
// first, then every op's outputs; scalar slots hold the int, float and bool
// parameters. Each instruction names its op (regions/region_ops.def), carries
// one operand per parameter of the op's signature (the compiler filled the
// defaults), lists the slots it writes and the slots no later instruction reads
// (so that intermediate tensors are freed as early as in eager mode).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vm/status.h"

namespace ppy::regions {

enum class AtenOp : uint16_t {
#define REGION_OP(id, spellings, signature, outputs) k##id,
#include "regions/region_ops.def"
#undef REGION_OP
  kCount,
};

// What a signature's parameter accepts (see region_ops.def).
enum class ParamKind : uint8_t {
  kTensor,
  kOptionalTensor,
  kTensorList,
  kTensorOrNumber,
  kNumber,
  kOptionalNumber,
  kInt,
  kIntList,
  kFloat,
  kBool,
  kReduction,
  kGeluApproximation,
  kFixed,
};

// A literal default in a signature.
struct Literal {
  enum class Kind : uint8_t { kNone, kInt, kFloat, kBool, kString };
  Kind kind = Kind::kNone;
  int64_t int_value = 0;
  double float_value = 0.0;
  std::string text;
};

struct SignatureParam {
  ParamKind kind = ParamKind::kTensor;
  std::string name;
  bool keyword_only = false;
  bool collects_positional = false;  // `*int[] shape`
  bool has_default = false;
  Literal default_value;
};

struct AtenOpInfo {
  const char* name;       // "Add"
  const char* spellings;  // "torch.add .add + r+"
  const char* signature;
  int outputs;
  std::vector<SignatureParam> params;  // parsed from `signature`
};

// Every op's entry, indexed by AtenOp; signatures parsed once.
const std::vector<AtenOpInfo>& AtenOps();
inline const AtenOpInfo& AtenInfoOf(AtenOp op) { return AtenOps()[static_cast<size_t>(op)]; }

// An instruction's operand.
struct Operand {
  enum class Kind : uint8_t {
    kTensor,  // slot: a tensor slot
    kScalar,  // slot: a scalar slot (an int, float or bool parameter)
    kNone,
    kInt,     // int_value
    kFloat,   // float_value
    kBool,    // int_value 0 or 1
    kString,  // text
    kList,    // items: ints (kInt or kScalar) or tensors (kTensor)
  };
  Kind kind = Kind::kNone;
  int32_t slot = -1;
  int64_t int_value = 0;
  double float_value = 0.0;
  std::string text;
  std::vector<Operand> items;
};

enum class ScalarType : uint8_t { kInt, kFloat, kBool };

struct RegionParam {
  std::string name;
  bool is_tensor = true;
  ScalarType scalar = ScalarType::kInt;  // when not a tensor
  int32_t slot = 0;  // in the tensor slots or the scalar slots
};

struct Instruction {
  AtenOp op = AtenOp::kAdd;
  int32_t line = 0;
  int32_t col = 0;
  std::vector<Operand> operands;  // one per signature parameter
  std::vector<int32_t> outputs;   // tensor slots written
  std::vector<int32_t> release;   // tensor slots no later instruction reads
};

struct RegionCode {
  std::string name;
  std::string filename;
  int32_t line = 0;  // of the def
  std::vector<RegionParam> params;
  int32_t num_posonly = 0;
  int32_t num_kwonly = 0;
  int32_t num_tensor_slots = 0;
  int32_t num_scalar_slots = 0;
  std::vector<std::string> slot_names;  // per tensor slot, for `ppy dis` and messages
  std::vector<Instruction> instructions;
  std::vector<int32_t> results;  // tensor slots returned
  bool returns_tuple = false;
};

// The regions of one module, as the cache entry's region section holds them.
std::string SerializeRegions(const std::vector<RegionCode>& regions);

// Reads and verifies a region section: every op, operand kind, slot and count is
// checked against the op table before anything runs it (cache entries are
// untrusted).
StatusOr<std::vector<RegionCode>> ParseRegions(std::string_view data);

// Verifies one region: what ParseRegions checks, also used on what the compiler made.
Status VerifyRegion(const RegionCode& region);

// The op sequence as `ppy dis` prints it.
std::string DescribeRegion(const RegionCode& region);

}  // namespace ppy::regions
