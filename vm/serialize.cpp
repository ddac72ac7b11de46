#include "vm/serialize.h"

#include <cstring>

#include "vm/bytes.h"
#include "vm/verify.h"
#include "vm/status.h"

namespace ppy {
namespace {

// ---- Object constants --------------------------------------------------------------------

enum class ObjectTag : uint8_t {
  kNone = 0,
  kTrue = 1,
  kFalse = 2,
  kEllipsis = 3,
  kInt = 4,
  kBigInt = 5,
  kFloat = 6,
  kStr = 7,
  kBytes = 8,
  kTuple = 9,
  kComplex = 10,
};

// The high bit of a register's kind byte: RegisterType::annotated.
constexpr uint8_t kAnnotatedRegister = 0x80;

// A buffer's element type and dimensions share one byte: the element type in
// the low four bits, ndim - 1 above them (0 for every other kind).
uint8_t ElemByte(ElemType elem, int ndim) { return static_cast<uint8_t>(elem) | static_cast<uint8_t>((ndim - 1) << 4); }
bool ReadElemByte(uint8_t byte, ElemType* elem, uint8_t* ndim) {
  if ((byte & 0x0F) >= kElemTypeCount || (byte >> 4) >= kMaxDims) return false;
  *elem = static_cast<ElemType>(byte & 0x0F);
  *ndim = static_cast<uint8_t>((byte >> 4) + 1);
  return true;
}

bool WriteObject(Writer& w, PyObject* object) {
  if (object == Py_None) {
    w.U8(static_cast<uint8_t>(ObjectTag::kNone));
  } else if (object == Py_True) {
    w.U8(static_cast<uint8_t>(ObjectTag::kTrue));
  } else if (object == Py_False) {
    w.U8(static_cast<uint8_t>(ObjectTag::kFalse));
  } else if (object == Py_Ellipsis) {
    w.U8(static_cast<uint8_t>(ObjectTag::kEllipsis));
  } else if (PyLong_CheckExact(object)) {
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow == 0) {
      w.U8(static_cast<uint8_t>(ObjectTag::kInt));
      w.Signed(value);
    } else {
      PyObject* text = PyObject_Str(object);
      if (text == nullptr) return false;
      w.U8(static_cast<uint8_t>(ObjectTag::kBigInt));
      w.Str(PyUnicode_AsUTF8(text));
      Py_DECREF(text);
    }
  } else if (PyFloat_CheckExact(object)) {
    double value = PyFloat_AS_DOUBLE(object);
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    w.U8(static_cast<uint8_t>(ObjectTag::kFloat));
    w.U64(bits);
  } else if (PyComplex_CheckExact(object)) {
    double parts[2] = {PyComplex_RealAsDouble(object), PyComplex_ImagAsDouble(object)};
    w.U8(static_cast<uint8_t>(ObjectTag::kComplex));
    for (double part : parts) {
      uint64_t bits;
      std::memcpy(&bits, &part, 8);
      w.U64(bits);
    }
  } else if (PyUnicode_CheckExact(object)) {
    PyObject* encoded = PyUnicode_AsEncodedString(object, "utf-8", "surrogatepass");
    if (encoded == nullptr) return false;
    w.U8(static_cast<uint8_t>(ObjectTag::kStr));
    w.Str(std::string_view(PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded)));
    Py_DECREF(encoded);
  } else if (PyBytes_CheckExact(object)) {
    w.U8(static_cast<uint8_t>(ObjectTag::kBytes));
    w.Str(std::string_view(PyBytes_AS_STRING(object), PyBytes_GET_SIZE(object)));
  } else if (PyTuple_CheckExact(object)) {
    w.U8(static_cast<uint8_t>(ObjectTag::kTuple));
    w.Varint(PyTuple_GET_SIZE(object));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(object); ++i) {
      if (!WriteObject(w, PyTuple_GET_ITEM(object, i))) return false;
    }
  } else {
    PyErr_Format(PyExc_TypeError, "ppy: cannot store a %.200s constant", Py_TYPE(object)->tp_name);
    return false;
  }
  return true;
}

// Whether a string constant is made of ASCII letters, digits and
// underscores only (CPython's all_name_chars, which decides what its
// compiler interns), and short enough for a name (an interned string lives
// as long as the process: an entry, which is untrusted data, cannot make it
// keep megabytes).
bool LooksLikeName(const std::string& text) {
  if (text.size() > 256) return false;
  for (char c : text) {  // (not isalnum: that follows the C locale Python may set)
    const bool name_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!name_char) return false;
  }
  return true;
}

// Returns a new reference, or nullptr (with no Python error) when the data is bad.
PyObject* ReadObject(Reader& r, int depth) {
  if (depth > 32) return nullptr;
  auto tag = static_cast<ObjectTag>(r.U8());
  if (!r.ok()) return nullptr;
  PyObject* result = nullptr;
  switch (tag) {
    case ObjectTag::kNone: return Py_NewRef(Py_None);
    case ObjectTag::kTrue: return Py_NewRef(Py_True);
    case ObjectTag::kFalse: return Py_NewRef(Py_False);
    case ObjectTag::kEllipsis: return Py_NewRef(Py_Ellipsis);
    case ObjectTag::kInt: {
      int64_t value = r.Signed();
      return r.ok() ? PyLong_FromLongLong(value) : nullptr;
    }
    case ObjectTag::kBigInt: {
      std::string text = r.Str();
      // Decimal digits: no NUL that would cut the C string short.
      if (!r.ok() || !IsValidText(text)) return nullptr;
      result = PyLong_FromString(text.c_str(), nullptr, 10);
      break;
    }
    case ObjectTag::kFloat: {
      uint64_t bits = r.U64();
      double value;
      std::memcpy(&value, &bits, 8);
      return r.ok() ? PyFloat_FromDouble(value) : nullptr;
    }
    case ObjectTag::kComplex: {
      double parts[2];
      for (double& part : parts) {
        uint64_t bits = r.U64();
        std::memcpy(&part, &bits, 8);
      }
      return r.ok() ? PyComplex_FromDoubles(parts[0], parts[1]) : nullptr;
    }
    case ObjectTag::kStr: {
      std::string text = r.Str();
      if (!r.ok()) return nullptr;
      result = PyUnicode_DecodeUTF8(text.data(), text.size(), "surrogatepass");
      // Interned where it looks like a name, as CPython's compiler interns a
      // code object's names and name-like constants: an attribute, global or
      // method name that is the interned string is found in a dict by
      // identity, and PyObject_GetAttr/SetAttr do not intern it again at
      // every call (which cost a halving loop over instance attributes
      // three times CPython's time).
      if (result != nullptr && LooksLikeName(text)) PyUnicode_InternInPlace(&result);
      break;
    }
    case ObjectTag::kBytes: {
      std::string text = r.Str();
      return r.ok() ? PyBytes_FromStringAndSize(text.data(), text.size()) : nullptr;
    }
    case ObjectTag::kTuple: {
      size_t count = r.Count(r.remaining());
      if (!r.ok()) return nullptr;
      PyObject* tuple = PyTuple_New(count);
      if (tuple == nullptr) break;
      for (size_t i = 0; i < count; ++i) {
        PyObject* item = ReadObject(r, depth + 1);
        if (item == nullptr) {
          Py_DECREF(tuple);
          return nullptr;
        }
        PyTuple_SET_ITEM(tuple, i, item);
      }
      return tuple;
    }
  }
  if (result == nullptr) PyErr_Clear();
  return result;
}

// ---- Instructions, driven by the operand modes ------------------------------------------

void WriteInstr(Writer& w, const Instr& in) {
  const OpInfo& info = InfoOf(in.op);
  w.U8(static_cast<uint8_t>(in.op));
  if (info.a != Mode::k__) w.U8(in.a);
  if (info.b != Mode::k__) w.U8(in.b);
  if (info.c != Mode::k__) w.U8(in.c);
  if (info.d != Mode::k__) w.Signed(in.d);
}

bool ReadInstr(Reader& r, Instr* in) {
  uint8_t op = r.U8();
  if (!r.ok() || op >= kOpCount || HasFlag(static_cast<Op>(op), kFlagRuntime)) return false;
  in->op = static_cast<Op>(op);
  const OpInfo& info = InfoOf(in->op);
  in->a = info.a != Mode::k__ ? r.U8() : 0;
  in->b = info.b != Mode::k__ ? r.U8() : 0;
  in->c = info.c != Mode::k__ ? r.U8() : 0;
  int64_t d = info.d != Mode::k__ ? r.Signed() : 0;
  if (d < INT32_MIN || d > INT32_MAX) return false;
  in->d = static_cast<int32_t>(d);
  return r.ok();
}

// ---- Sections --------------------------------------------------------------------------------

void WriteSection(Writer& w, const char tag[4], const std::string& payload) {
  w.Bytes(tag, 4);
  w.U64(payload.size());
  w.Bytes(payload.data(), payload.size());
}

std::string FunctionTable(const ModuleCode& module) {
  Writer w;
  w.Str(module.module_name);
  w.Str(module.filename);
  w.Varint(module.functions.size());
  for (const auto& fn : module.functions) {
    w.Str(fn->name);
    w.Str(fn->qualname);
    w.Varint(fn->first_line);
    w.Varint(fn->num_posonly);
    w.Varint(fn->num_kwonly);
    w.U8(static_cast<uint8_t>(fn->result));
    w.U8(fn->nogil ? 1 : 0);
    w.Varint(fn->params.size());
    for (const Param& param : fn->params) {
      w.Str(param.name);
      w.U8(static_cast<uint8_t>(param.type));
      w.U8(ElemByte(param.elem, param.ndim));
      w.U8(param.writes ? 1 : 0);
    }
    w.Varint(fn->registers.size());
    for (const RegisterType& reg : fn->registers) {
      w.U8(static_cast<uint8_t>(reg.kind) | (reg.annotated ? kAnnotatedRegister : 0));
      w.U8(ElemByte(reg.elem, reg.ndim));
    }
    w.Varint(fn->constants.size());
    for (const ConstantValue& constant : fn->constants) {
      w.U8(static_cast<uint8_t>(constant.kind));
      if (constant.kind == Kind::kFloat) w.U64(static_cast<uint64_t>(constant.bits));
      else w.Signed(constant.bits);
    }
    w.Varint(fn->objects.size());
    w.Varint(fn->code.size());
  }
  return std::move(w.out());
}

constexpr size_t kMaxFunctions = 1 << 16;
constexpr size_t kMaxCode = 1 << 24;

// Every name read from an entry must be UTF-8 text (see IsValidText): Python
// decodes them strictly (in messages, tracebacks, __name__), so a name that is not
// would raise UnicodeDecodeError later, where a corrupt entry must be reported.
bool ReadFunctionTable(std::string_view payload, ModuleCode* module, std::vector<std::pair<size_t, size_t>>* sizes) {
  Reader r(payload);
  module->module_name = r.Str();
  module->filename = r.Str();
  if (!IsValidText(module->module_name) || !IsValidText(module->filename)) return false;
  size_t count = r.Count(kMaxFunctions);
  for (size_t f = 0; f < count && r.ok(); ++f) {
    auto fn = std::make_unique<FunctionCode>();
    fn->name = r.Str();
    fn->qualname = r.Str();
    if (!IsValidText(fn->name) || !IsValidText(fn->qualname)) return false;
    fn->first_line = static_cast<int>(r.Count(INT32_MAX));
    fn->num_posonly = static_cast<int>(r.Count(kMaxRegisters));
    fn->num_kwonly = static_cast<int>(r.Count(kMaxRegisters));
    uint8_t result = r.U8();
    if (result > static_cast<uint8_t>(kLastValueType)) return false;
    fn->result = static_cast<ValueType>(result);
    const uint8_t nogil = r.U8();
    if (nogil > 1) return false;
    fn->nogil = nogil == 1;
    size_t num_params = r.Count(kMaxRegisters);
    for (size_t i = 0; i < num_params && r.ok(); ++i) {
      Param param;
      param.name = r.Str();
      if (!IsValidText(param.name)) return false;
      uint8_t type = r.U8();
      uint8_t elem = r.U8();
      uint8_t writes = r.U8();
      if (type > static_cast<uint8_t>(kLastValueType) || writes > 1) return false;
      if (!ReadElemByte(elem, &param.elem, &param.ndim)) return false;
      param.type = static_cast<ValueType>(type);
      param.writes = writes == 1;
      fn->params.push_back(std::move(param));
    }
    size_t num_registers = r.Count(kMaxRegisters);
    for (size_t i = 0; i < num_registers && r.ok(); ++i) {
      uint8_t kind = r.U8();
      uint8_t elem = r.U8();
      const bool annotated = (kind & kAnnotatedRegister) != 0;
      kind &= static_cast<uint8_t>(~kAnnotatedRegister);
      RegisterType reg{static_cast<Kind>(kind), ElemType::kNone, annotated};
      if (kind >= kKindCount || !ReadElemByte(elem, &reg.elem, &reg.ndim) ||
          (annotated && kind != static_cast<uint8_t>(Kind::kInt))) {
        return false;
      }
      fn->registers.push_back(reg);
    }
    size_t num_constants = r.Count(kMaxRegisters);
    for (size_t i = 0; i < num_constants && r.ok(); ++i) {
      uint8_t kind = r.U8();
      if (kind >= kKindCount) return false;
      ConstantValue constant{static_cast<Kind>(kind), 0};
      constant.bits = constant.kind == Kind::kFloat ? static_cast<int64_t>(r.U64()) : r.Signed();
      fn->constants.push_back(constant);
    }
    size_t num_objects = r.Count(kMaxCode);
    size_t num_code = r.Count(kMaxCode);
    sizes->emplace_back(num_objects, num_code);
    module->functions.push_back(std::move(fn));
  }
  return r.ok() && r.at_end();
}

}  // namespace

namespace {

uint64_t SeededChecksum(std::string_view data, uint64_t seed) {
  constexpr uint64_t kMultiplier1 = 0x9E3779B97F4A7C15ull;
  constexpr uint64_t kMultiplier2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t state = seed ^ (data.size() * kMultiplier2);
  size_t i = 0;
  auto mix = [&](uint64_t word) {
    state ^= word * kMultiplier1;
    state = (state << 31) | (state >> 33);
    state *= kMultiplier2;
  };
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, data.data() + i, 8);
    mix(word);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, data.data() + i, data.size() - i);
  mix(tail);
  state ^= state >> 32;
  state *= kMultiplier1;
  state ^= state >> 29;
  return state;
}

}  // namespace

uint64_t Checksum64(std::string_view data) { return SeededChecksum(data, 0x243F6A8885A308D3ull); }

std::string Digest128(std::string_view data) {
  return Format("%016llx%016llx", static_cast<unsigned long long>(SeededChecksum(data, 0x243F6A8885A308D3ull)),
                static_cast<unsigned long long>(SeededChecksum(data, 0x13198A2E03707344ull)));
}

std::string SerializeEntry(const EntryHeader& header, const ModuleCode& module,
                           const std::map<std::string, std::string>& extra_sections) {
  Writer w;
  w.Bytes(kEntryMagic, sizeof kEntryMagic);
  w.U32(kBytecodeVersion);
  w.Str(header.ppy_version);
  w.Str(header.abi);
  w.Str(header.key);

  WriteSection(w, "FUNC", FunctionTable(module));
  Writer code, objects, lines;
  for (const auto& fn : module.functions) {
    for (const Instr& in : fn->code) WriteInstr(code, in);
    for (PyObject* object : fn->objects) WriteObject(objects, object);
    int32_t previous = fn->first_line;
    for (int32_t line : fn->lines) {
      lines.Signed(line - previous);
      previous = line;
    }
  }
  WriteSection(w, "CODE", code.out());
  WriteSection(w, "KONS", objects.out());
  WriteSection(w, "LINE", lines.out());
  for (const auto& [tag, payload] : extra_sections) {
    char padded[4] = {' ', ' ', ' ', ' '};
    std::memcpy(padded, tag.data(), std::min<size_t>(tag.size(), 4));
    WriteSection(w, padded, payload);
  }
  w.Bytes("END!", 4);
  w.U64(Checksum64(w.out()));
  return std::move(w.out());
}

StatusOr<EntryHeader> ParseEntryHeader(std::string_view data) {
  Reader r(data);
  std::string_view magic = r.Take(sizeof kEntryMagic);
  if (!r.ok() || std::memcmp(magic.data(), kEntryMagic, sizeof kEntryMagic) != 0) {
    return Status::Error("not a ppy cache entry (bad magic)");
  }
  EntryHeader header;
  header.format = r.U32();
  header.ppy_version = r.Str();
  header.abi = r.Str();
  header.key = r.Str();
  if (!r.ok()) return Status::Error("truncated header");
  // The hook hands these to Python as str (and puts them in messages).
  if (!IsValidText(header.ppy_version) || !IsValidText(header.abi) || !IsValidText(header.key)) {
    return Status::Error("bad header (a string is not UTF-8 text)");
  }
  return header;
}

StatusOr<Entry> ParseEntry(std::string_view data, std::string_view ppy_version, EntryProblem* problem) {
  *problem = EntryProblem::kCorrupt;
  StatusOr<EntryHeader> header = ParseEntryHeader(data);
  if (!header.ok()) return header.status();
  if (header->format != kBytecodeVersion || header->ppy_version != ppy_version) {
    *problem = EntryProblem::kVersion;
    return Status::Error(Cat("written by ppy ", header->ppy_version, " (bytecode ",
                                                      header->format, ")"));
  }
  if (data.size() < 12 || data.substr(data.size() - 12, 4) != "END!") {
    return Status::Error("truncated entry (no trailer)");
  }
  Reader trailer(data.substr(data.size() - 8));
  if (trailer.U64() != Checksum64(data.substr(0, data.size() - 8))) {
    return Status::Error("checksum mismatch");
  }

  // Sections.
  Reader r(data.substr(0, data.size() - 12));
  r.Take(sizeof kEntryMagic);
  r.U32();
  r.Str();
  r.Str();
  r.Str();
  std::map<std::string, std::string_view> sections;
  while (r.ok() && !r.at_end()) {
    std::string tag(r.Take(4));
    uint64_t size = r.U64();
    if (!r.ok() || size > r.remaining()) return Status::Error("truncated section");
    sections[tag] = r.Take(size);
  }
  if (!r.ok()) return Status::Error("bad section table");
  for (const char* required : {"FUNC", "CODE", "KONS", "LINE"}) {
    if (!sections.count(required)) return Status::Error(Cat("missing section ", required));
  }

  Entry entry;
  entry.header = *header;
  entry.module = std::make_unique<ModuleCode>();
  std::vector<std::pair<size_t, size_t>> sizes;
  if (!ReadFunctionTable(sections["FUNC"], entry.module.get(), &sizes)) {
    return Status::Error("bad function table");
  }
  Reader code(sections["CODE"]), objects(sections["KONS"]), lines(sections["LINE"]);
  for (size_t f = 0; f < entry.module->functions.size(); ++f) {
    FunctionCode& fn = *entry.module->functions[f];
    auto [num_objects, num_code] = sizes[f];
    if (num_code > code.remaining() || num_objects > objects.remaining() || num_code > lines.remaining()) {
      return Status::Error("section too short for its functions");
    }
    fn.code.resize(num_code);
    for (Instr& in : fn.code) {
      if (!ReadInstr(code, &in)) return Status::Error(Cat("bad code in ", fn.qualname));
    }
    for (size_t i = 0; i < num_objects; ++i) {
      PyObject* object = ReadObject(objects, 0);
      if (object == nullptr) return Status::Error(Cat("bad constant in ", fn.qualname));
      fn.objects.push_back(object);
    }
    int64_t line = fn.first_line;
    fn.lines.reserve(num_code);
    for (size_t i = 0; i < num_code; ++i) {
      // (The delta is untrusted: the sum must not overflow on the way to the check.)
      if (__builtin_add_overflow(line, lines.Signed(), &line) || !lines.ok() || line < 0 || line > INT32_MAX) {
        return Status::Error("bad line table");
      }
      fn.lines.push_back(static_cast<int32_t>(line));
    }
  }
  if (!code.at_end() || !objects.at_end() || !lines.at_end()) {
    return Status::Error("trailing data in a section");
  }
  if (Status verified = VerifyModule(*entry.module); !verified.ok()) {
    return Status::Error(verified.message());
  }
  for (auto& [tag, payload] : sections) {
    if (tag != "FUNC" && tag != "CODE" && tag != "KONS" && tag != "LINE") {
      std::string trimmed = tag;
      while (!trimmed.empty() && trimmed.back() == ' ') trimmed.pop_back();
      // A tag is a Python dict key (the module's extras): printable ASCII, as
      // every tag ppy writes is, or the entry is corrupt.
      bool printable = !trimmed.empty();
      for (char c : trimmed) printable &= c > ' ' && c < 0x7f;
      if (!printable) return Status::Error("a section tag that is not printable ASCII");
      entry.extra_sections[trimmed] = std::string(payload);
    }
  }
  *problem = EntryProblem::kNone;
  return entry;
}

}  // namespace ppy
