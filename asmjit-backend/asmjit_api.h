// Every call whose shape depends on the asmjit version lives here.
//
// ppy builds against the asmjit of Debian's source package (library version
// 1.9 on Debian 12). Where a newer asmjit renames something, only this file
// changes.
#pragma once

#include <asmjit/core.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace ppy::jit {

// Position-independent bytes of finalized code and the offset of its entry.
struct Blob {
  std::vector<uint8_t> bytes;
  uint64_t entry = 0;
};

// Flattens `code`, resolves its internal links and relocates it to address 0,
// so that the bytes run wherever they are mapped (calls go through a helper
// table; there are no absolute addresses).
inline bool CopyRelocatable(asmjit::CodeHolder& code, const asmjit::Label& entry, Blob* out, std::string* error) {
  using asmjit::kErrorOk;
  if (code.flatten() != kErrorOk || code.resolveUnresolvedLinks() != kErrorOk || code.relocateToBase(0) != kErrorOk) {
    *error = "asmjit could not relocate the code";
    return false;
  }
  if (code.hasUnresolvedLinks() || code.hasAddressTable()) {
    *error = "the code is not position-independent";
    return false;
  }
  out->bytes.resize(code.codeSize());
  if (code.copyFlattenedData(out->bytes.data(), out->bytes.size(), asmjit::CopySectionFlags::kPadTargetBuffer) !=
      kErrorOk) {
    *error = "asmjit could not copy the code";
    return false;
  }
  out->entry = code.labelOffsetFromBase(entry);
  return true;
}

// Opens the generated function, int64 f(Value* regs, Value* result,
// const JitCallContext* context, int64 entry_pc), on either backend's Compiler;
// returns its entry label.
template <typename Compiler, typename Gp>
asmjit::Label BeginFunction(Compiler& cc, Gp* regs, Gp* result, Gp* context, Gp* entry_pc) {
  using namespace asmjit;
  FuncNode* func = cc.addFunc(FuncSignatureT<int64_t, void*, void*, const void*, int64_t>(CallConvId::kHost));
  *regs = cc.newIntPtr("regs");
  *result = cc.newIntPtr("result");
  *context = cc.newIntPtr("context");
  *entry_pc = cc.newInt64("entry_pc");
  func->setArg(0, *regs);
  func->setArg(1, *result);
  func->setArg(2, *context);
  func->setArg(3, *entry_pc);
  return func->label();
}

// Calls the function at `target` with `args` (all of C type Arg), its result
// (of C type Result) in `result`, through either backend's Compiler.
template <typename Result, typename Arg, typename Compiler, typename Target, typename Reg>
void InvokeHelper(Compiler& cc, const Target& target, std::initializer_list<Reg> args, const Reg& result) {
  asmjit::FuncSignatureBuilder signature(asmjit::CallConvId::kHost);
  signature.setRetT<Result>();
  for (size_t i = 0; i < args.size(); ++i) signature.template addArgT<Arg>();
  asmjit::InvokeNode* invoke;
  cc.invoke(&invoke, target, signature);
  size_t i = 0;
  for (const Reg& arg : args) invoke->setArg(i++, arg);
  invoke->setRet(0, result);
}

}  // namespace ppy::jit
