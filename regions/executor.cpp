// ppy._regions: the ATen region executor, the only code of ppy built against
// libtorch (and the only translation unit that includes its headers).
//
// A program is a verified region (regions/region_code.h) with its constant
// operands prepared once: numbers that Python would pass as "wrapped number"
// tensors are made into such tensors at load time. A call converts the
// arguments (exact torch.Tensor or Parameter, exact int/float/bool), then runs
// each op with the at:: call torch's Python binding makes for that spelling, so
// every op goes through the dispatcher and autograd records the graph eager mode
// records. Intermediate results stay at::Tensor; the GIL is released while the
// ops run, as torch's bindings release it. Errors and warnings are translated
// exactly as torch's bindings translate them (HANDLE_TH_ERRORS), and the
// traceback gains the .ppy line of the op that failed.

#include <ATen/ATen.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/ScalarOps.h>
#include <c10/core/TensorImpl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "regions/region_api.h"
#include "regions/region_code.h"
#include "vm/exact_scalars.h"
#include "vm/python_compat.h"

#ifndef PPY_TORCH_VERSION
#error "PPY_TORCH_VERSION must name the torch version the executor is built against"
#endif

namespace ppy::regions {
namespace {

// Python's own rules for a number passed where a tensor is expected.
at::Tensor WrappedNumber(const at::Scalar& value) {
  at::AutoDispatchBelowADInplaceOrView guard;
  at::Tensor tensor = c10::scalar_to_tensor(value);
  tensor.unsafeGetTensorImpl()->set_wrapped_number(true);
  return tensor;
}

// Python's repr of a float, for messages that quote one.
std::string FloatRepr(double value) {
  char text[64];
  auto [end, error] = std::to_chars(text, text + sizeof text, value);
  std::string result(text, error == std::errc() ? end : text);
  if (result.find_first_of(".ein") == std::string::npos) result += ".0";
  return result;
}

std::string SizeRepr(at::IntArrayRef sizes) {
  std::string text = "torch.Size([";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "])";
}

int64_t ReductionOf(const std::string& name) {
  if (name == "none") return at::Reduction::None;
  if (name == "sum") return at::Reduction::Sum;
  return at::Reduction::Mean;
}

struct Program {
  RegionCode code;
  // Per instruction and operand: the wrapped-number tensor of a constant
  // number where the op takes Tensor|Number (undefined otherwise).
  std::vector<std::vector<at::Tensor>> wrapped;
  std::string qualname;
};

// The values of one call.
struct Frame {
  const Program& program;
  std::vector<at::Tensor> tensors;
  std::vector<at::Scalar> scalars;

  const at::Tensor& Tensor(const Operand& operand) const { return tensors[operand.slot]; }

  at::Scalar Scalar(const Operand& operand) const {
    switch (operand.kind) {
      case Operand::Kind::kScalar: return scalars[operand.slot];
      case Operand::Kind::kInt: return at::Scalar(operand.int_value);
      case Operand::Kind::kFloat: return at::Scalar(operand.float_value);
      case Operand::Kind::kBool: return at::Scalar(operand.int_value != 0);
      default: return at::Scalar(0);
    }
  }
  std::optional<at::Scalar> OptionalScalar(const Operand& operand) const {
    if (operand.kind == Operand::Kind::kNone) return std::nullopt;
    return Scalar(operand);
  }
  int64_t Int(const Operand& operand) const {
    return operand.kind == Operand::Kind::kScalar ? scalars[operand.slot].toLong() : operand.int_value;
  }
  double Float(const Operand& operand) const {
    if (operand.kind == Operand::Kind::kScalar) return scalars[operand.slot].toDouble();
    return operand.kind == Operand::Kind::kInt ? static_cast<double>(operand.int_value) : operand.float_value;
  }
  bool Bool(const Operand& operand) const {
    return operand.kind == Operand::Kind::kScalar ? scalars[operand.slot].toBool() : operand.int_value != 0;
  }
  std::vector<int64_t> Ints(const Operand& operand) const {
    std::vector<int64_t> values;
    values.reserve(operand.items.size());
    for (const Operand& item : operand.items) values.push_back(Int(item));
    return values;
  }
  std::vector<at::Tensor> Tensors(const Operand& operand) const {
    std::vector<at::Tensor> values;
    values.reserve(operand.items.size());
    for (const Operand& item : operand.items) values.push_back(Tensor(item));
    return values;
  }
  std::optional<at::Tensor> OptionalTensor(const Operand& operand) const {
    if (operand.kind == Operand::Kind::kNone) return std::nullopt;
    return Tensor(operand);
  }
  // A Tensor|Number operand: the tensor, or the number as Python wraps it.
  at::Tensor TensorOrNumber(size_t instruction, size_t index, const Operand& operand) const {
    if (operand.kind == Operand::Kind::kTensor) return Tensor(operand);
    const at::Tensor& prepared = program.wrapped[instruction][index];
    return prepared.defined() ? prepared : WrappedNumber(Scalar(operand));
  }
};

// Runs instruction `k`: the at:: call of torch's Python binding for its op.
void RunRegion(Frame& frame, size_t k) {
  const Instruction& in = frame.program.code.instructions[k];
  const std::vector<Operand>& a = in.operands;
  auto T = [&](size_t i) -> const at::Tensor& { return frame.Tensor(a[i]); };
  auto TN = [&](size_t i) { return frame.TensorOrNumber(k, i, a[i]); };
  auto S = [&](size_t i) { return frame.Scalar(a[i]); };
  auto I = [&](size_t i) { return frame.Int(a[i]); };
  auto B = [&](size_t i) { return frame.Bool(a[i]); };
  at::Tensor result;
  switch (in.op) {
    case AtenOp::kAdd: result = at::add(T(0), TN(1), S(2)); break;
    case AtenOp::kSub: result = at::sub(T(0), TN(1), S(2)); break;
    case AtenOp::kReverseSub: result = at::rsub(T(0), S(1)); break;
    case AtenOp::kMul: result = at::mul(T(0), TN(1)); break;
    case AtenOp::kDiv: result = at::div(T(0), TN(1)); break;
    // Tensor.__rdiv__ is `self.reciprocal() * other`.
    case AtenOp::kReverseDiv: result = at::mul(at::reciprocal(T(0)), frame.TensorOrNumber(k, 1, a[1])); break;
    case AtenOp::kPow: result = at::pow(T(0), T(1)); break;
    case AtenOp::kPowScalarExponent: result = at::pow(T(0), S(1)); break;
    case AtenOp::kPowScalarBase: result = at::pow(S(0), T(1)); break;
    // Tensor.__rpow__ is `torch.pow(other, self)`.
    case AtenOp::kReversePow: result = at::pow(S(1), T(0)); break;
    case AtenOp::kMatmul:
      // at::matmul of two matrices is exactly at::mm (it is a composite that
      // calls mm; the graph holds MmBackward0 either way): skip the detour.
      result = T(0).dim() == 2 && T(1).dim() == 2 ? at::mm(T(0), T(1)) : at::matmul(T(0), T(1));
      break;
    case AtenOp::kMm: result = at::mm(T(0), T(1)); break;
    case AtenOp::kNeg: result = at::neg(T(0)); break;
    case AtenOp::kAbs: result = at::abs(T(0)); break;
    case AtenOp::kExp: result = at::exp(T(0)); break;
    case AtenOp::kLog: result = at::log(T(0)); break;
    case AtenOp::kSqrt: result = at::sqrt(T(0)); break;
    case AtenOp::kRelu:
    case AtenOp::kFunctionalRelu: result = at::relu(T(0)); break;
    case AtenOp::kSigmoid: result = at::sigmoid(T(0)); break;
    case AtenOp::kTanh: result = at::tanh(T(0)); break;
    case AtenOp::kGelu: result = at::gelu(T(0), a[1].text); break;
    case AtenOp::kClamp: result = at::clamp(T(0), frame.OptionalScalar(a[1]), frame.OptionalScalar(a[2])); break;
    case AtenOp::kWhere: result = at::where(T(0), T(1), T(2)); break;
    case AtenOp::kWhereScalar: result = at::where(T(0), T(1), S(2)); break;
    case AtenOp::kEq: result = at::eq(T(0), TN(1)); break;
    case AtenOp::kNe: result = at::ne(T(0), TN(1)); break;
    case AtenOp::kLt: result = at::lt(T(0), TN(1)); break;
    case AtenOp::kLe: result = at::le(T(0), TN(1)); break;
    case AtenOp::kGt: result = at::gt(T(0), TN(1)); break;
    case AtenOp::kGe: result = at::ge(T(0), TN(1)); break;
    case AtenOp::kSoftmax: result = at::softmax(T(0), I(1)); break;
    case AtenOp::kLogSoftmax: result = at::log_softmax(T(0), I(1)); break;
    case AtenOp::kMean: result = at::mean(T(0)); break;
    case AtenOp::kMeanDim: result = at::mean(T(0), frame.Ints(a[1]), B(2)); break;
    case AtenOp::kSum: result = at::sum(T(0)); break;
    case AtenOp::kSumDim: result = at::sum(T(0), frame.Ints(a[1]), B(2)); break;
    case AtenOp::kMax: result = at::max(T(0)); break;
    case AtenOp::kMin: result = at::min(T(0)); break;
    case AtenOp::kMaxDim:
    case AtenOp::kMinDim: {
      auto [values, indices] = in.op == AtenOp::kMaxDim ? at::max(T(0), I(1), B(2)) : at::min(T(0), I(1), B(2));
      frame.tensors[in.outputs[0]] = std::move(values);
      frame.tensors[in.outputs[1]] = std::move(indices);
      return;
    }
    case AtenOp::kTranspose: result = at::transpose(T(0), I(1), I(2)); break;
    case AtenOp::kT: result = at::t(T(0)); break;
    case AtenOp::kReshape:
    case AtenOp::kReshapeMethod: result = at::reshape(T(0), frame.Ints(a[1])); break;
    case AtenOp::kView: result = T(0).view(frame.Ints(a[1])); break;
    case AtenOp::kFlatten: result = at::flatten(T(0), I(1), I(2)); break;
    case AtenOp::kUnsqueeze: result = at::unsqueeze(T(0), I(1)); break;
    case AtenOp::kSqueeze: result = at::squeeze(T(0)); break;
    case AtenOp::kSqueezeDim: result = at::squeeze(T(0), I(1)); break;
    case AtenOp::kCat: result = at::cat(frame.Tensors(a[0]), I(1)); break;
    case AtenOp::kLinear: result = at::linear(T(0), T(1), frame.OptionalTensor(a[2])); break;
    case AtenOp::kMseLoss: {
      // F.mse_loss: warn about broadcasting as it does, then broadcast.
      const at::Tensor& input = T(0);
      const at::Tensor& target = T(1);
      if (target.sizes() != input.sizes()) {
        TORCH_WARN("Using a target size (", SizeRepr(target.sizes()), ") that is different to the input size (",
                   SizeRepr(input.sizes()), "). This will likely lead to incorrect results due to broadcasting. ",
                   "Please ensure they have the same size.");
      }
      std::vector<at::Tensor> expanded = at::broadcast_tensors({input, target});
      result = at::mse_loss(expanded[0], expanded[1], ReductionOf(a[4].text));
      break;
    }
    case AtenOp::kCrossEntropy:
      result = at::cross_entropy_loss(T(0), T(1), frame.OptionalTensor(a[2]), ReductionOf(a[6].text), I(4),
                                      frame.Float(a[7]));
      break;
    case AtenOp::kDropout: {
      double p = frame.Float(a[1]);
      if (p < 0.0 || p > 1.0) {
        throw c10::ValueError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                              "dropout probability has to be between 0 and 1, but got " + FloatRepr(p));
      }
      result = at::dropout(T(0), p, B(2));
      break;
    }
    case AtenOp::kCount: break;
  }
  frame.tensors[in.outputs[0]] = std::move(result);
}

// Runs every op; on an error sets the Python exception as torch's bindings do,
// stores the failing instruction in `failed`, and returns false.
bool RunOps(Frame& frame, size_t* failed) {
  const std::vector<Instruction>& instructions = frame.program.code.instructions;
  size_t k = 0;
  HANDLE_TH_ERRORS
  {
    pybind11::gil_scoped_release no_gil;
    for (; k < instructions.size(); ++k) {
      RunRegion(frame, k);
      for (int32_t slot : instructions[k].release) frame.tensors[slot].reset();
    }
  }
  return true;
  END_HANDLE_TH_ERRORS_RET((*failed = k, false))
}

// Converts an argument to its annotated type; false if it is not exactly that.
bool Convert(const RegionParam& param, PyObject* object, Frame& frame) {
  if (param.is_tensor) {
    // Exactly torch.Tensor or Parameter: a subclass may override operators
    // through __torch_function__, which only the Python code honours.
    if (!THPVariable_CheckExact(object)) return false;
    frame.tensors[param.slot] = THPVariable_Unpack(object);
    return true;
  }
  switch (param.scalar) {
    case ScalarType::kInt: {
      int64_t value;
      if (!ExactInt64(object, &value)) return false;
      frame.scalars[param.slot] = at::Scalar(value);
      return true;
    }
    case ScalarType::kFloat: {
      double value;
      if (!ExactFloat(object, &value)) return false;
      frame.scalars[param.slot] = at::Scalar(value);
      return true;
    }
    case ScalarType::kBool: {
      bool value;
      if (!ExactBool(object, &value)) return false;
      frame.scalars[param.slot] = at::Scalar(value);
      return true;
    }
  }
  return false;
}

PyObject* Run(void* opaque, PyObject* const* args) {
  const Program& program = *static_cast<const Program*>(opaque);
  const RegionCode& code = program.code;
  // Under a torch function mode only the Python code dispatches as asked.
  if (at::impl::torch_function_mode_enabled()) Py_RETURN_NOTIMPLEMENTED;
  Frame frame{program, std::vector<at::Tensor>(code.num_tensor_slots),
              std::vector<at::Scalar>(code.num_scalar_slots)};
  for (size_t i = 0; i < code.params.size(); ++i) {
    if (!Convert(code.params[i], args[i], frame)) Py_RETURN_NOTIMPLEMENTED;
  }
  size_t failed = 0;
  if (!RunOps(frame, &failed)) {
    if (failed < code.instructions.size()) {
      ppy::AddTracebackEntry(code.name.c_str(), code.filename.c_str(), code.instructions[failed].line);
    }
    return nullptr;
  }
  if (!code.returns_tuple) return THPVariable_Wrap(std::move(frame.tensors[code.results[0]]));
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(code.results.size()));
  if (tuple == nullptr) return nullptr;
  for (size_t i = 0; i < code.results.size(); ++i) {
    PyObject* item = THPVariable_Wrap(frame.tensors[code.results[i]]);
    if (item == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), item);
  }
  return tuple;
}

void* Load(const char* section, size_t size, size_t index) {
  StatusOr<std::vector<RegionCode>> parsed = ParseRegions(std::string_view(section, size));
  if (!parsed.ok()) {
    PyErr_Format(PyExc_ValueError, "ppy: %s", parsed.status().message().c_str());
    return nullptr;
  }
  if (index >= parsed->size()) {
    PyErr_SetString(PyExc_IndexError, "ppy: no such region");
    return nullptr;
  }
  auto program = std::make_unique<Program>();
  program->code = std::move((*parsed)[index]);
  for (const Instruction& instruction : program->code.instructions) {
    const AtenOpInfo& info = AtenInfoOf(instruction.op);
    std::vector<at::Tensor> wrapped(instruction.operands.size());
    for (size_t i = 0; i < instruction.operands.size(); ++i) {
      const Operand& operand = instruction.operands[i];
      bool constant = operand.kind == Operand::Kind::kInt || operand.kind == Operand::Kind::kFloat ||
                      operand.kind == Operand::Kind::kBool;
      bool takes_tensor = info.params[i].kind == ParamKind::kTensorOrNumber || instruction.op == AtenOp::kReverseDiv;
      if (constant && takes_tensor) {
        at::Scalar value = operand.kind == Operand::Kind::kFloat ? at::Scalar(operand.float_value)
                           : operand.kind == Operand::Kind::kBool ? at::Scalar(operand.int_value != 0)
                                                                  : at::Scalar(operand.int_value);
        wrapped[i] = WrappedNumber(value);
      }
    }
    program->wrapped.push_back(std::move(wrapped));
  }
  return program.release();
}

void Release(void* program) { delete static_cast<Program*>(program); }

const ExecutorApi kApi = {kApiVersion, Load, Run, Release, PPY_TORCH_VERSION};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "ppy._regions", "The ATen region executor of ppy, built against libtorch.", -1, nullptr,
};

}  // namespace
}  // namespace ppy::regions

PyMODINIT_FUNC PyInit__regions() {
  PyObject* module = PyModule_Create(&ppy::regions::kModule);
  if (module == nullptr) return nullptr;
  PyObject* capsule = PyCapsule_New(const_cast<ppy::regions::ExecutorApi*>(&ppy::regions::kApi),
                                    ppy::regions::kApiCapsule, nullptr);
  if (capsule == nullptr || PyModule_AddObject(module, "_api", capsule) < 0 ||
      PyModule_AddStringConstant(module, "TORCH_VERSION", PPY_TORCH_VERSION) < 0) {
    Py_XDECREF(capsule);
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
