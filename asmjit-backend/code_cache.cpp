#include "asmjit-backend/code_cache.h"

#include <cstring>

#include "asmjit-backend/jit.h"
#include "vm/bytes.h"
#include "vm/serialize.h"

namespace ppy::jit {

StatusOr<std::string> BuildMachineCode(const ModuleCode& module, std::string_view ppy_version,
                                       std::string_view key) {
  Writer w;
  w.Bytes(kMachineCodeMagic, sizeof kMachineCodeMagic);
  w.U32(kMachineCodeFormat);
  w.Str(ppy_version);
  w.Str(Target());
  w.Str(key);
  std::vector<std::pair<size_t, Blob>> blobs;
  for (size_t i = 0; i < module.functions.size(); ++i) {
    Blob blob;
    std::string error;
    if (CompileBlob(*module.functions[i], &blob, nullptr, &error)) blobs.emplace_back(i, std::move(blob));
  }
  w.Varint(blobs.size());
  for (const auto& [index, blob] : blobs) {
    w.Varint(index);
    w.Varint(blob.entry);
    w.Varint(blob.bytes.size());
    w.Bytes(blob.bytes.data(), blob.bytes.size());
  }
  w.Bytes("END!", 4);
  w.U64(Checksum64(w.out()));
  return std::move(w.out());
}

StatusOr<int> LoadMachineCode(const ModuleCode& module, std::string_view data, std::string_view ppy_version,
                              std::string_view key) {
  if (data.size() < sizeof kMachineCodeMagic + 12 ||
      std::memcmp(data.data(), kMachineCodeMagic, sizeof kMachineCodeMagic) != 0) {
    return Status::Error("not a ppy machine-code entry");
  }
  if (data.substr(data.size() - 12, 4) != "END!") return Status::Error("truncated machine-code entry");
  Reader trailer(data.substr(data.size() - 8));
  if (trailer.U64() != Checksum64(data.substr(0, data.size() - 8))) return Status::Error("checksum mismatch");
  Reader r(data.substr(0, data.size() - 12));
  r.Take(sizeof kMachineCodeMagic);
  uint32_t format = r.U32();
  std::string version = r.Str(), target = r.Str(), entry_key = r.Str();
  if (!r.ok()) return Status::Error("truncated header");
  // Untrusted strings: one that is not UTF-8 text would make the errors below
  // undecodable for Python (UnicodeDecodeError instead of EntryError).
  if (!IsValidText(version) || !IsValidText(target) || !IsValidText(entry_key)) {
    return Status::Error("bad machine-code header (a string is not UTF-8 text)");
  }
  if (format != kMachineCodeFormat || version != ppy_version) return Status::Error("written by another ppy build");
  if (target != Target()) return Status::Error(Cat("compiled for ", target, ", not ", Target()));
  if (entry_key != key) return Status::Error("compiled from other bytecode");
  size_t count = r.Count(module.functions.size());
  struct Piece {
    size_t index;
    uint64_t entry;
    std::string_view bytes;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < count && r.ok(); ++i) {
    Piece piece;
    piece.index = r.Count(module.functions.size() - 1);
    piece.entry = r.Varint();
    size_t size = r.Count(r.remaining());
    piece.bytes = r.Take(size);
    pieces.push_back(piece);
  }
  if (!r.ok() || !r.at_end()) return Status::Error("bad machine-code entry");
  for (const Piece& piece : pieces) {
    std::string error;
    const FunctionCode& fn = *module.functions[piece.index];
    if (!InstallBlob(fn, fn.runtime.get(), reinterpret_cast<const uint8_t*>(piece.bytes.data()),
                     piece.bytes.size(), piece.entry, &error)) {
      return Status::Error(error);
    }
  }
  return static_cast<int>(pieces.size());
}

}  // namespace ppy::jit
