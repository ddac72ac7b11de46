// fuzz_compiler: source text -> the compiler front end, as ppy._compiler.compile
// and serialize run it: CPython's parser (ast.parse and CPython's own compile
// check, through the C API), the ast reader, the type checker, lowering, region
// extraction (for a source that mentions torch, as the hook asks for regions),
// the verifier over what was lowered, diagnostics rendered as `ppy check`
// prints them, serialization, and the entry read back (ParseEntry verifies every
// function again) and used as the hook uses it (embedded_python.h).
//
// Beyond "never crash": the compiler's own output must be accepted by its
// own reader and verifier. A function the verifier rejects after lowering is a
// compiler bug that CompileModule hides (the function falls back to Python,
// "an internal compiler error"): here it is reported as a crash.
//
// Inputs longer than 16 KiB, or not UTF-8 text (or with NUL), are rejected
// before anything else runs.
//
// Seed mode (scripts/fuzz.sh): fuzz_compiler --make-seeds ENTRY_DIR REGION_DIR FILE.ppy...
// compiles each file and writes its cache entry to ENTRY_DIR (the fuzz_entry
// corpus) and its region section, if any, to REGION_DIR (the fuzz_regions corpus),
// whole and as one section per region.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ast_reader.h"
#include "compiler/compile.h"
#include "compiler/diagnostics.h"
#include "fuzz/embedded_python.h"
#include "regions/region_code.h"
#include "vm/bytes.h"
#include "vm/serialize.h"
#include "vm/verify.h"

namespace {

constexpr size_t kMaxSource = 16 * 1024;
constexpr const char* kVersion = "fuzz";  // fuzz_entry's fixed version string
constexpr const char* kFilename = "fuzzed.ppy";

struct Compiled {
  bool parsed = false;
  std::string entry;    // the serialized cache entry
  std::string regions;  // its region section, or empty
  std::vector<std::pair<std::string, std::string>> single_regions;  // (name, a section of that region alone)
};

Compiled CompileAndCheck(std::string_view source, const std::string& filename, const std::string& module_name) {
  using ppy::fuzz::Fail;
  using ppy::fuzz::TakeException;
  Compiled out;
  PyObject* tree = ppy::ParseSource(source, filename);
  if (tree == nullptr) {
    // CPython's SyntaxError (or its ValueError, RecursionError, MemoryError for
    // what its parser and compiler refuse): the hook raises it as it is.
    if (!PyErr_Occurred()) Fail("ParseSource failed without an exception", "");
    PyErr_Clear();
    return out;
  }
  out.parsed = true;
  bool regions = source.find("torch") != std::string_view::npos;
  ppy::CompileResult result = ppy::CompileModule(tree, filename, module_name, regions);
  Py_DECREF(tree);
  if (PyErr_Occurred()) Fail("CompileModule raised for a tree ast.parse returned", TakeException());
  if (result.code == nullptr) Fail("CompileModule returned no code", "");

  for (const ppy::FunctionReport& report : result.functions) {
    if (report.reason.find("internal compiler error") != std::string::npos) {
      Fail("the verifier rejected lowered code", report.name + ": " + report.reason);
    }
  }
  // `ppy check` and an import's warning render every diagnostic.
  for (const ppy::Diagnostic& diagnostic : result.diagnostics) {
    std::string text = ppy::RenderDiagnostic(diagnostic, filename, source);
    if (text.empty()) Fail("an empty rendered diagnostic", diagnostic.message);
  }

  std::map<std::string, std::string> extras;
  if (!result.regions.empty()) {
    for (const ppy::regions::RegionCode& region : result.regions) {
      ppy::Status verified = ppy::regions::VerifyRegion(region);
      if (!verified.ok()) Fail("the compiler made a region VerifyRegion rejects", region.name + ": " + verified.message());
      ppy::regions::DescribeRegion(region);
      out.single_regions.emplace_back(region.name, ppy::regions::SerializeRegions({region}));
    }
    out.regions = ppy::regions::SerializeRegions(result.regions);
    ppy::StatusOr<std::vector<ppy::regions::RegionCode>> read = ppy::regions::ParseRegions(out.regions);
    if (!read.ok()) Fail("the compiler's region section does not read back", read.status().message());
    extras["RGNS"] = out.regions;
  }

  ppy::EntryHeader header{ppy::kBytecodeVersion, kVersion, "fuzz-abi", module_name};
  out.entry = ppy::SerializeEntry(header, *result.code, extras);
  if (PyErr_Occurred()) Fail("SerializeEntry failed on the compiler's own code", TakeException());

  ppy::EntryProblem problem;
  ppy::StatusOr<ppy::Entry> entry = ppy::ParseEntry(out.entry, kVersion, &problem);
  if (!entry.ok()) Fail("the compiler's entry does not load", entry.status().message());
  if (entry->module->functions.size() != result.code->functions.size()) {
    Fail("the entry read back has another number of functions", "");
  }
  ppy::fuzz::ExerciseEntry(*entry);
  return out;
}

bool ReadFile(const char* path, std::string* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  out->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return true;
}

bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(file);
}

// parent_stem: "programs_01_int_arith" for tests/programs/01_int_arith.ppy.
std::string SeedName(const std::string& path) {
  std::string stem = path;
  size_t slash = stem.rfind('/');
  std::string parent;
  if (slash != std::string::npos) {
    std::string dir = stem.substr(0, slash);
    size_t parent_slash = dir.rfind('/');
    parent = parent_slash == std::string::npos ? dir : dir.substr(parent_slash + 1);
    stem = stem.substr(slash + 1);
  }
  if (size_t dot = stem.rfind('.'); dot != std::string::npos) stem.resize(dot);
  return parent.empty() ? stem : parent + "_" + stem;
}

int MakeSeeds(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s --make-seeds ENTRY_DIR REGION_DIR FILE.ppy...\n", argv[0]);
    return 2;
  }
  std::string entry_dir = argv[2], region_dir = argv[3];
  int entries = 0, region_sections = 0, failed = 0;
  for (int i = 4; i < argc; ++i) {
    std::string source;
    if (!ReadFile(argv[i], &source)) {
      std::fprintf(stderr, "fuzz_compiler: cannot read %s\n", argv[i]);
      ++failed;
      continue;
    }
    std::string name = SeedName(argv[i]);
    Compiled compiled = CompileAndCheck(source, argv[i], name);
    if (!compiled.parsed) {
      std::fprintf(stderr, "fuzz_compiler: %s does not parse\n", argv[i]);
      ++failed;
      continue;
    }
    entries += WriteFile(entry_dir + "/" + name + ".ppyc", compiled.entry);
    // The module's whole section, and each region alone (small seeds mutate well).
    if (!compiled.regions.empty()) region_sections += WriteFile(region_dir + "/" + name + ".rgns", compiled.regions);
    for (const auto& [region_name, section] : compiled.single_regions) {
      region_sections += WriteFile(region_dir + "/" + name + "." + region_name + ".rgns", section);
    }
  }
  std::printf("fuzz_compiler: %d entries, %d region sections written\n", entries, region_sections);
  return failed == 0 ? 0 : 1;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  ppy::fuzz::InitEmbeddedPython();
  if (*argc >= 2 && std::string_view((*argv)[1]) == "--make-seeds") {
    int status = MakeSeeds(*argc, *argv);
    std::fflush(nullptr);
    // Not exit(): CPython's memory at exit is no leak of ppy's.
    std::_Exit(status);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size > kMaxSource) return -1;
  std::string_view source(reinterpret_cast<const char*>(bytes), size);
  if (!ppy::IsValidText(source)) return -1;
  CompileAndCheck(source, kFilename, "fuzzed");
  return 0;
}
