// Diagnostics: what `ppy check` prints and what an import warns about.
//
//   features.ppy:12:9: error: cannot assign float to 'x', an int (from its first assignment at line 10)
//      12 |     x = 1.5
//         |         ^~~
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/syntax.h"

namespace ppy {

enum class Severity : uint8_t { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  Loc loc;
  std::string message;
};

// `file:line:col: severity: message`, then the source line and a caret line
// under the range (columns are shown 1-based, in characters).
std::string RenderDiagnostic(const Diagnostic& diagnostic, std::string_view filename, std::string_view source);

// The 1-based character column of a 0-based UTF-8 byte offset into `line`.
int CharacterColumn(std::string_view line, int byte_offset);

// Line `line` (1-based) of `source`, without its newline.
std::string_view SourceLine(std::string_view source, int line);

}  // namespace ppy
