#include "regions/region_code.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "vm/bytes.h"

namespace ppy::regions {
namespace {

constexpr uint32_t kSectionMagic = 0x4e474552;  // "REGN"
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kMaxCount = 1 << 20;

// A count of things that follow in the section: each takes at least a byte,
// so a count past the bytes left is corrupt (and must not size an allocation).
size_t CountIn(Reader& in) { return in.Count(std::min(kMaxCount, in.remaining())); }
constexpr int kMaxListDepth = 1;

struct KindName {
  const char* text;
  ParamKind kind;
};

constexpr KindName kKindNames[] = {
    {"Tensor", ParamKind::kTensor},          {"Tensor?", ParamKind::kOptionalTensor},
    {"Tensor[]", ParamKind::kTensorList},    {"Tensor|Number", ParamKind::kTensorOrNumber},
    {"Number", ParamKind::kNumber},          {"Number?", ParamKind::kOptionalNumber},
    {"int", ParamKind::kInt},                {"int[]", ParamKind::kIntList},
    {"float", ParamKind::kFloat},            {"bool", ParamKind::kBool},
    {"reduction", ParamKind::kReduction},    {"gelu", ParamKind::kGeluApproximation},
    {"fixed", ParamKind::kFixed},
};

std::string Trim(std::string_view text) {
  size_t begin = text.find_first_not_of(' ');
  size_t end = text.find_last_not_of(' ');
  return begin == std::string_view::npos ? "" : std::string(text.substr(begin, end - begin + 1));
}

Literal ParseLiteral(const std::string& text) {
  Literal literal;
  if (text == "None") return literal;
  if (text == "True" || text == "False") {
    literal.kind = Literal::Kind::kBool;
    literal.int_value = text == "True";
  } else if (text.front() == '\'') {
    literal.kind = Literal::Kind::kString;
    literal.text = text.substr(1, text.size() - 2);
  } else if (text.find_first_of(".e") != std::string::npos) {
    literal.kind = Literal::Kind::kFloat;
    literal.float_value = std::strtod(text.c_str(), nullptr);
  } else {
    literal.kind = Literal::Kind::kInt;
    literal.int_value = std::strtoll(text.c_str(), nullptr, 10);
  }
  return literal;
}

// "Tensor input, Number other, *, Number alpha=1" -> parameters. The table is
// ours, so a malformed entry is a bug caught by the unit tests (kind "?" aborts).
std::vector<SignatureParam> ParseSignature(std::string_view signature) {
  std::vector<SignatureParam> params;
  bool keyword_only = false;
  while (!signature.empty()) {
    size_t comma = signature.find(',');
    std::string piece = Trim(signature.substr(0, comma));
    signature = comma == std::string_view::npos ? std::string_view() : signature.substr(comma + 1);
    if (piece == "*") {
      keyword_only = true;
      continue;
    }
    SignatureParam param;
    param.keyword_only = keyword_only;
    if (piece.front() == '*') {
      param.collects_positional = true;
      piece.erase(0, 1);
    }
    size_t space = piece.find(' ');
    std::string kind = piece.substr(0, space);
    std::string rest = piece.substr(space + 1);
    bool known = false;
    for (const KindName& entry : kKindNames) {
      if (kind == entry.text) {
        param.kind = entry.kind;
        known = true;
      }
    }
    if (!known) std::abort();
    size_t equals = rest.find('=');
    param.name = rest.substr(0, equals);
    if (equals != std::string::npos) {
      param.has_default = true;
      param.default_value = ParseLiteral(rest.substr(equals + 1));
    }
    params.push_back(std::move(param));
  }
  return params;
}

// ---- Serialization --------------------------------------------------------------------------

void WriteOperand(Writer& out, const Operand& operand) {
  out.U8(static_cast<uint8_t>(operand.kind));
  switch (operand.kind) {
    case Operand::Kind::kTensor:
    case Operand::Kind::kScalar: out.Signed(operand.slot); break;
    case Operand::Kind::kInt:
    case Operand::Kind::kBool: out.Signed(operand.int_value); break;
    case Operand::Kind::kFloat: {
      uint64_t bits;
      std::memcpy(&bits, &operand.float_value, sizeof bits);
      out.U64(bits);
      break;
    }
    case Operand::Kind::kString: out.Str(operand.text); break;
    case Operand::Kind::kList:
      out.Varint(operand.items.size());
      for (const Operand& item : operand.items) WriteOperand(out, item);
      break;
    case Operand::Kind::kNone: break;
  }
}

bool ReadOperand(Reader& in, Operand* operand, int depth) {
  uint8_t kind = in.U8();
  if (kind > static_cast<uint8_t>(Operand::Kind::kList)) return false;
  operand->kind = static_cast<Operand::Kind>(kind);
  switch (operand->kind) {
    case Operand::Kind::kTensor:
    case Operand::Kind::kScalar: operand->slot = static_cast<int32_t>(in.Signed()); break;
    case Operand::Kind::kInt:
    case Operand::Kind::kBool: operand->int_value = in.Signed(); break;
    case Operand::Kind::kFloat: {
      uint64_t bits = in.U64();
      std::memcpy(&operand->float_value, &bits, sizeof bits);
      break;
    }
    case Operand::Kind::kString:
      operand->text = in.Str();
      if (!IsValidText(operand->text)) return false;  // see NamesAreText
      break;
    case Operand::Kind::kList: {
      if (depth >= kMaxListDepth) return false;
      size_t count = CountIn(in);
      operand->items.resize(count);
      for (Operand& item : operand->items) {
        if (!ReadOperand(in, &item, depth + 1)) return false;
      }
      break;
    }
    case Operand::Kind::kNone: break;
  }
  return in.ok();
}

void WriteSlots(Writer& out, const std::vector<int32_t>& slots) {
  out.Varint(slots.size());
  for (int32_t slot : slots) out.Signed(slot);
}

std::vector<int32_t> ReadSlots(Reader& in) {
  std::vector<int32_t> slots(CountIn(in));
  for (int32_t& slot : slots) slot = static_cast<int32_t>(in.Signed());
  return slots;
}

// ---- Verification ---------------------------------------------------------------------------

class Verifier {
 public:
  explicit Verifier(const RegionCode& region) : region_(region) {}

  Status Run() {
    if (region_.num_tensor_slots < 0 || region_.num_scalar_slots < 0 ||
        static_cast<size_t>(region_.num_tensor_slots) > kMaxCount ||
        static_cast<size_t>(region_.num_scalar_slots) > kMaxCount) {
      return Status::Error("slot counts out of range");
    }
    if (region_.slot_names.size() != static_cast<size_t>(region_.num_tensor_slots)) {
      return Status::Error("slot names do not match the slot count");
    }
    int32_t num_params = static_cast<int32_t>(region_.params.size());
    if (region_.num_posonly < 0 || region_.num_kwonly < 0 ||
        int64_t{region_.num_posonly} + region_.num_kwonly > num_params) {
      return Status::Error("parameter kinds out of range");
    }
    defined_.assign(region_.num_tensor_slots, false);
    scalar_types_.assign(region_.num_scalar_slots, -1);
    for (const RegionParam& param : region_.params) {
      if (param.is_tensor) {
        if (!TensorSlot(param.slot) || defined_[param.slot]) return Status::Error("bad tensor parameter slot");
        defined_[param.slot] = true;
      } else {
        if (param.slot < 0 || param.slot >= region_.num_scalar_slots || scalar_types_[param.slot] >= 0 ||
            static_cast<uint8_t>(param.scalar) > static_cast<uint8_t>(ScalarType::kBool)) {
          return Status::Error("bad scalar parameter slot");
        }
        scalar_types_[param.slot] = static_cast<int>(param.scalar);
      }
    }
    for (size_t k = 0; k < region_.instructions.size(); ++k) {
      Status status = CheckInstruction(region_.instructions[k]);
      if (!status.ok()) return Status::Error(Cat("instruction ", k, ": ", status.message()));
    }
    if (region_.results.empty()) return Status::Error("a region returns at least one tensor");
    if (!region_.returns_tuple && region_.results.size() != 1) return Status::Error("one result expected");
    for (int32_t slot : region_.results) {
      if (!TensorSlot(slot) || !defined_[slot]) return Status::Error("a result slot is not defined");
    }
    return Status();
  }

 private:
  bool TensorSlot(int32_t slot) const { return slot >= 0 && slot < region_.num_tensor_slots; }

  bool DefinedTensor(const Operand& operand) const {
    return operand.kind == Operand::Kind::kTensor && TensorSlot(operand.slot) && defined_[operand.slot];
  }
  bool ScalarOf(const Operand& operand, std::initializer_list<ScalarType> types) const {
    if (operand.kind != Operand::Kind::kScalar || operand.slot < 0 || operand.slot >= region_.num_scalar_slots) {
      return false;
    }
    for (ScalarType type : types) {
      if (scalar_types_[operand.slot] == static_cast<int>(type)) return true;
    }
    return false;
  }
  bool Number(const Operand& operand) const {
    return operand.kind == Operand::Kind::kInt || operand.kind == Operand::Kind::kFloat ||
           operand.kind == Operand::Kind::kBool ||
           ScalarOf(operand, {ScalarType::kInt, ScalarType::kFloat, ScalarType::kBool});
  }
  bool Int(const Operand& operand) const {
    return operand.kind == Operand::Kind::kInt || ScalarOf(operand, {ScalarType::kInt});
  }

  bool Accepts(const SignatureParam& param, const Operand& operand) const {
    switch (param.kind) {
      case ParamKind::kTensor: return DefinedTensor(operand);
      case ParamKind::kOptionalTensor: return operand.kind == Operand::Kind::kNone || DefinedTensor(operand);
      case ParamKind::kTensorList:
        if (operand.kind != Operand::Kind::kList || operand.items.empty()) return false;
        for (const Operand& item : operand.items) {
          if (!DefinedTensor(item)) return false;
        }
        return true;
      case ParamKind::kTensorOrNumber: return DefinedTensor(operand) || Number(operand);
      case ParamKind::kNumber: return Number(operand);
      case ParamKind::kOptionalNumber: return operand.kind == Operand::Kind::kNone || Number(operand);
      case ParamKind::kInt: return Int(operand);
      case ParamKind::kIntList:
        if (operand.kind != Operand::Kind::kList) return false;
        for (const Operand& item : operand.items) {
          if (!Int(item)) return false;
        }
        return true;
      case ParamKind::kFloat:
        return operand.kind == Operand::Kind::kFloat || operand.kind == Operand::Kind::kInt ||
               ScalarOf(operand, {ScalarType::kInt, ScalarType::kFloat});
      case ParamKind::kBool: return operand.kind == Operand::Kind::kBool || ScalarOf(operand, {ScalarType::kBool});
      case ParamKind::kReduction:
        return operand.kind == Operand::Kind::kString &&
               (operand.text == "none" || operand.text == "mean" || operand.text == "sum");
      case ParamKind::kGeluApproximation:
        return operand.kind == Operand::Kind::kString && (operand.text == "none" || operand.text == "tanh");
      case ParamKind::kFixed: {
        const Literal& fixed = param.default_value;
        switch (fixed.kind) {
          case Literal::Kind::kNone: return operand.kind == Operand::Kind::kNone;
          case Literal::Kind::kBool:
            return operand.kind == Operand::Kind::kBool && operand.int_value == fixed.int_value;
          default: return false;
        }
      }
    }
    return false;
  }

  Status CheckInstruction(const Instruction& instruction) {
    if (static_cast<uint16_t>(instruction.op) >= static_cast<uint16_t>(AtenOp::kCount)) {
      return Status::Error("unknown op");
    }
    const AtenOpInfo& info = AtenInfoOf(instruction.op);
    if (instruction.operands.size() != info.params.size()) {
      return Status::Error(Cat(info.name, " takes ", info.params.size(), " operands"));
    }
    for (size_t i = 0; i < info.params.size(); ++i) {
      if (!Accepts(info.params[i], instruction.operands[i])) {
        return Status::Error(Cat(info.name, ": operand ", i, " (", info.params[i].name, ") is not valid"));
      }
    }
    if (instruction.outputs.size() != static_cast<size_t>(info.outputs)) {
      return Status::Error(Cat(info.name, " writes ", info.outputs, " tensors"));
    }
    for (int32_t slot : instruction.outputs) {
      if (!TensorSlot(slot) || defined_[slot]) return Status::Error("an output slot is taken");
      defined_[slot] = true;
    }
    for (int32_t slot : instruction.release) {
      if (!TensorSlot(slot) || !defined_[slot]) return Status::Error("a released slot is not defined");
      defined_[slot] = false;
    }
    return Status();
  }

  const RegionCode& region_;
  std::vector<bool> defined_;
  std::vector<int> scalar_types_;
};

// ---- Description ---------------------------------------------------------------------------

std::string FloatText(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  std::string result = text;
  if (result.find_first_of(".eni") == std::string::npos) result += ".0";
  return result;
}

std::string OperandText(const RegionCode& region, const Operand& operand) {
  switch (operand.kind) {
    case Operand::Kind::kTensor:
      return operand.slot >= 0 && operand.slot < static_cast<int32_t>(region.slot_names.size())
                 ? region.slot_names[operand.slot]
                 : "?";
    case Operand::Kind::kScalar:
      for (const RegionParam& param : region.params) {
        if (!param.is_tensor && param.slot == operand.slot) return param.name;
      }
      return "?";
    case Operand::Kind::kNone: return "None";
    case Operand::Kind::kInt: return std::to_string(operand.int_value);
    case Operand::Kind::kFloat: return FloatText(operand.float_value);
    case Operand::Kind::kBool: return operand.int_value ? "True" : "False";
    case Operand::Kind::kString: return "'" + operand.text + "'";
    case Operand::Kind::kList: {
      std::string text = "[";
      for (size_t i = 0; i < operand.items.size(); ++i) {
        if (i > 0) text += ", ";
        text += OperandText(region, operand.items[i]);
      }
      return text + "]";
    }
  }
  return "?";
}

}  // namespace

const std::vector<AtenOpInfo>& AtenOps() {
  static const std::vector<AtenOpInfo>* ops = [] {
    auto* table = new std::vector<AtenOpInfo>{
#define REGION_OP(id, spellings, signature, outputs) {#id, spellings, signature, outputs, {}},
#include "regions/region_ops.def"
#undef REGION_OP
    };
    for (AtenOpInfo& info : *table) info.params = ParseSignature(info.signature);
    return table;
  }();
  return *ops;
}

std::string SerializeRegions(const std::vector<RegionCode>& regions) {
  Writer out;
  out.U32(kSectionMagic);
  out.U32(kFormatVersion);
  out.Varint(regions.size());
  for (const RegionCode& region : regions) {
    out.Str(region.name);
    out.Str(region.filename);
    out.Signed(region.line);
    out.Varint(region.params.size());
    for (const RegionParam& param : region.params) {
      out.Str(param.name);
      out.U8(param.is_tensor);
      out.U8(static_cast<uint8_t>(param.scalar));
      out.Signed(param.slot);
    }
    out.Signed(region.num_posonly);
    out.Signed(region.num_kwonly);
    out.Signed(region.num_tensor_slots);
    out.Signed(region.num_scalar_slots);
    for (const std::string& name : region.slot_names) out.Str(name);
    out.Varint(region.instructions.size());
    for (const Instruction& instruction : region.instructions) {
      out.Varint(static_cast<uint16_t>(instruction.op));
      out.Signed(instruction.line);
      out.Signed(instruction.col);
      out.Varint(instruction.operands.size());
      for (const Operand& operand : instruction.operands) WriteOperand(out, operand);
      WriteSlots(out, instruction.outputs);
      WriteSlots(out, instruction.release);
    }
    WriteSlots(out, region.results);
    out.U8(region.returns_tuple);
  }
  return std::move(out.out());
}

namespace {

// Every string of a region is shown to Python (ppy dis, tracebacks) or passed
// on as a C string: like every string of an entry it must be UTF-8 text
// without NUL (vm/bytes.h IsValidText), or the section is corrupt.
bool NamesAreText(const RegionCode& region) {
  if (!IsValidText(region.name) || !IsValidText(region.filename)) return false;
  for (const RegionParam& param : region.params) {
    if (!IsValidText(param.name)) return false;
  }
  for (const std::string& name : region.slot_names) {
    if (!IsValidText(name)) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::vector<RegionCode>> ParseRegions(std::string_view data) {
  Reader in(data);
  if (in.U32() != kSectionMagic) return Status::Error("not a region section");
  if (in.U32() != kFormatVersion) return Status::Error("another region format version");
  std::vector<RegionCode> regions(CountIn(in));
  for (RegionCode& region : regions) {
    region.name = in.Str();
    region.filename = in.Str();
    region.line = static_cast<int32_t>(in.Signed());
    region.params.resize(CountIn(in));
    for (RegionParam& param : region.params) {
      param.name = in.Str();
      param.is_tensor = in.U8() != 0;
      param.scalar = static_cast<ScalarType>(in.U8());
      param.slot = static_cast<int32_t>(in.Signed());
    }
    region.num_posonly = static_cast<int32_t>(in.Signed());
    region.num_kwonly = static_cast<int32_t>(in.Signed());
    region.num_tensor_slots = static_cast<int32_t>(in.Signed());
    region.num_scalar_slots = static_cast<int32_t>(in.Signed());
    if (!in.ok() || region.num_tensor_slots < 0 || static_cast<size_t>(region.num_tensor_slots) > in.remaining()) {
      return Status::Error("truncated region section");
    }
    region.slot_names.resize(region.num_tensor_slots);
    for (std::string& name : region.slot_names) name = in.Str();
    region.instructions.resize(CountIn(in));
    for (Instruction& instruction : region.instructions) {
      instruction.op = static_cast<AtenOp>(in.Varint());
      instruction.line = static_cast<int32_t>(in.Signed());
      instruction.col = static_cast<int32_t>(in.Signed());
      instruction.operands.resize(CountIn(in));
      for (Operand& operand : instruction.operands) {
        if (!ReadOperand(in, &operand, 0)) return Status::Error("bad operand in region section");
      }
      instruction.outputs = ReadSlots(in);
      instruction.release = ReadSlots(in);
    }
    region.results = ReadSlots(in);
    region.returns_tuple = in.U8() != 0;
    if (!in.ok()) return Status::Error("truncated region section");
    if (!NamesAreText(region)) return Status::Error("a name in the region section is not UTF-8 text");
    Status verified = VerifyRegion(region);
    if (!verified.ok()) return Status::Error(Cat("region ", region.name, ": ", verified.message()));
  }
  if (!in.ok() || !in.at_end()) return Status::Error("truncated region section");
  return regions;
}

Status VerifyRegion(const RegionCode& region) { return Verifier(region).Run(); }

std::string DescribeRegion(const RegionCode& region) {
  std::string text = "region " + region.name + "(";
  for (size_t i = 0; i < region.params.size(); ++i) {
    const RegionParam& param = region.params[i];
    if (i > 0) text += ", ";
    static const char* kScalarNames[] = {"int", "float", "bool"};
    text += param.name + ": " + (param.is_tensor ? "Tensor" : kScalarNames[static_cast<int>(param.scalar)]);
  }
  text += Cat("), ", region.instructions.size(), " ops, ", region.num_tensor_slots, " tensor slots\n");
  for (const Instruction& instruction : region.instructions) {
    const AtenOpInfo& info = AtenInfoOf(instruction.op);
    std::string outputs;
    for (size_t i = 0; i < instruction.outputs.size(); ++i) {
      if (i > 0) outputs += ", ";
      outputs += region.slot_names[instruction.outputs[i]];
    }
    std::string operands;
    for (size_t i = 0; i < instruction.operands.size(); ++i) {
      if (i > 0) operands += ", ";
      const SignatureParam& param = info.params[i];
      if (param.keyword_only || param.has_default) operands += param.name + "=";
      operands += OperandText(region, instruction.operands[i]);
    }
    text += Format("  %4d  %s = %s(%s)", instruction.line, outputs.c_str(), info.name, operands.c_str());
    if (!instruction.release.empty()) {
      text += "  ; frees";
      for (int32_t slot : instruction.release) text += " " + region.slot_names[slot];
    }
    text += "\n";
  }
  std::string results;
  for (size_t i = 0; i < region.results.size(); ++i) {
    if (i > 0) results += ", ";
    results += region.slot_names[region.results[i]];
  }
  text += "        return " + (region.returns_tuple ? "(" + results + (region.results.size() == 1 ? ",)" : ")")
                                                    : results) + "\n";
  return text;
}

}  // namespace ppy::regions
