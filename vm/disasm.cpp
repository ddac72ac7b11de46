#include "vm/disasm.h"

#include <cinttypes>
#include <cstring>

#include "vm/math_table.h"
#include "vm/status.h"

namespace ppy {
namespace {

const char* KindLetter(Kind kind) {
  switch (kind) {
    case Kind::kInt: return "i";
    case Kind::kFloat: return "f";
    case Kind::kObject: return "o";
    case Kind::kBuffer: return "u";
  }
  return "?";
}

std::string ObjectRepr(PyObject* object) {
  PyObject* repr = PyObject_Repr(object);
  if (repr == nullptr) {
    PyErr_Clear();
    return "<unprintable>";
  }
  std::string text = PyUnicode_AsUTF8(repr);
  Py_DECREF(repr);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

std::string ConstantText(const FunctionCode& fn, const ConstantValue& constant) {
  switch (constant.kind) {
    case Kind::kInt: return Cat(constant.bits);
    case Kind::kFloat: {
      double value;
      std::memcpy(&value, &constant.bits, sizeof value);
      return Format("%.17g", value);
    }
    case Kind::kObject: return ObjectRepr(fn.objects[constant.bits]);
    case Kind::kBuffer: break;
  }
  return "?";
}

std::string Register(int reg) { return Cat("r", reg); }

std::string Operand(const ModuleCode& module, const FunctionCode& fn, const Instr& in, Mode mode, int64_t value) {
  switch (mode) {
    case Mode::k__: return "";
    case Mode::krI:
    case Mode::kwI:
    case Mode::kuI:
    case Mode::krF:
    case Mode::kwF:
    case Mode::krC:
    case Mode::kwC:
    case Mode::krO:
    case Mode::kwO:
    case Mode::krU:
    case Mode::kwU:
    case Mode::krUd:
    case Mode::krUq:
    case Mode::krUf:
    case Mode::krUi:
    case Mode::kwX: return Register(value);
    case Mode::krX:
    case Mode::ksO:
    case Mode::ktO:
      return in.c == 0 ? "()" : Cat(Register(value), "..", Register(value + in.c - 1));
    case Mode::kcO: return in.c == 0 ? Register(value) : Cat(Register(value), "(", Register(value + 1), "..", Register(value + in.c), ")");
    case Mode::kJ: return Format("-> %04d", static_cast<int>(value));
    case Mode::kK:
      if (value >= 0 && value < static_cast<int64_t>(fn.objects.size())) return ObjectRepr(fn.objects[value]);
      return Cat("K", value);
    case Mode::kP:
      if (value >= 0 && value < static_cast<int64_t>(module.functions.size())) return module.functions[value]->name;
      return Cat("F", value);
    case Mode::kN: return Cat(value);
    case Mode::kM:
      if (value < 0 || value >= kMathCount) return "?";
      return IsMathModuleFunction(value) ? Cat("math.", kMathInfo[value].name) : kMathInfo[value].name;
    case Mode::kY: {
      bool in_place = value >= kBinaryInPlace;
      int64_t op = in_place ? value - kBinaryInPlace : value;
      if (op < 0 || op >= kBinaryOpCount) return "?";
      return Cat("'", std::string(kBinaryOpSymbols[op]), in_place ? "='" : "'");
    }
    case Mode::kE: {
      static const char* kNames[] = {"'-'", "'+'", "'~'"};
      return value >= 0 && value < kUnaryOpCount ? kNames[value] : "?";
    }
    case Mode::kQ: {
      static const char* kNames[] = {"'<'", "'<='", "'=='", "'!='", "'>'", "'>='"};
      return value >= 0 && value < kCompareOpCount ? kNames[value] : "?";
    }
    case Mode::kV: {
      static const char* kNames[] = {"", "!s", "!r", "!a"};
      return value >= 0 && value < kFormatConversionCount ? kNames[value] : "?";
    }
  }
  return "?";
}

}  // namespace

std::string TypeName(ValueType type, ElemType elem, int ndim) {
  switch (type) {
    case ValueType::kInt: return "int";
    case ValueType::kFloat: return "float";
    case ValueType::kBool: return "bool";
    case ValueType::kNone: return "None";
    case ValueType::kObject: return "object";
    case ValueType::kComplex: return "complex";
    case ValueType::kBuffer: return Cat("Buffer[", InfoOf(elem).name, ndim == 1 ? "" : Cat(", ", ndim), "]");
  }
  return "?";
}

std::string DisassembleInstruction(const ModuleCode& module, const FunctionCode& fn, int pc) {
  const Instr& in = fn.code[pc];
  const OpInfo& info = InfoOf(in.op);
  std::vector<std::string> operands;
  // A span's count is shown by the span itself, so C is skipped after one.
  bool has_span = info.b == Mode::ksO || info.b == Mode::kcO || info.b == Mode::krX || info.a == Mode::ktO;
  const Mode modes[4] = {info.a, info.b, has_span && info.c == Mode::kN ? Mode::k__ : info.c, info.d};
  const int64_t values[4] = {in.a, in.b, in.c, in.d};
  for (int i = 0; i < 4; ++i) {
    std::string text = Operand(module, fn, in, modes[i], values[i]);
    if (!text.empty()) operands.push_back(text);
  }
  return Format("%04d  L%-4d %-12s %s", pc, fn.lines[pc], std::string(info.name).c_str(), Join(operands, ", ").c_str());
}

std::string Disassemble(const ModuleCode& module, const FunctionCode& fn) {
  std::string out;
  std::vector<std::string> params;
  for (const Param& param : fn.params) {
    params.push_back(Cat(param.name, ": ", TypeName(param.type, param.elem, param.ndim)));
  }
  out += Cat("function ", fn.qualname, "(", Join(params, ", "), ") -> ",
                  TypeName(fn.result, ElemType::kNone), "\n");
  std::string kinds;
  for (const RegisterType& reg : fn.registers) kinds += KindLetter(reg.kind);
  out += Cat("  registers: ", fn.num_registers(), " (", kinds, ")\n");
  if (!fn.constants.empty()) {
    std::vector<std::string> constants;
    for (size_t i = 0; i < fn.constants.size(); ++i) {
      constants.push_back(Cat(Register(fn.first_constant() + i), "=", ConstantText(fn, fn.constants[i])));
    }
    out += Cat("  constants: ", Join(constants, " "), "\n");
  }
  for (int pc = 0; pc < static_cast<int>(fn.code.size()); ++pc) {
    out += Cat("  ", DisassembleInstruction(module, fn, pc), "\n");
  }
  return out;
}

}  // namespace ppy
