#include "compiler/diagnostics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ppy {

std::string_view SourceLine(std::string_view source, int line) {
  size_t start = 0;
  for (int i = 1; i < line; ++i) {
    size_t newline = source.find('\n', start);
    if (newline == std::string_view::npos) return {};
    start = newline + 1;
  }
  size_t end = source.find('\n', start);
  std::string_view text = source.substr(start, end == std::string_view::npos ? source.size() - start : end - start);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  return text;
}

int CharacterColumn(std::string_view line, int byte_offset) {
  int column = 1;
  for (int i = 0; i < byte_offset && i < static_cast<int>(line.size()); ++i) {
    // Count every byte that starts a UTF-8 sequence.
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++column;
  }
  return column;
}

std::string RenderDiagnostic(const Diagnostic& diagnostic, std::string_view filename, std::string_view source) {
  static const char* kSeverity[] = {"error", "warning", "note"};
  std::string_view line = SourceLine(source, diagnostic.loc.line);
  int column = CharacterColumn(line, diagnostic.loc.col);
  std::string out = absl::StrFormat("%s:%d:%d: %s: %s\n", filename, diagnostic.loc.line, column,
                                    kSeverity[static_cast<int>(diagnostic.severity)], diagnostic.message);
  if (line.empty()) return out;
  int end_column = diagnostic.loc.end_line == diagnostic.loc.line
                       ? CharacterColumn(line, diagnostic.loc.end_col)
                       : CharacterColumn(line, static_cast<int>(line.size()));
  int width = std::max(1, end_column - column);
  std::string gutter = absl::StrFormat("%5d | ", diagnostic.loc.line);
  std::string blank(gutter.size() - 2, ' ');
  // Tabs stay tabs under the caret so that it lines up however they render.
  std::string pad;
  int counted = 1;
  for (size_t i = 0; i < line.size() && counted < column; ++i) {
    unsigned char byte = static_cast<unsigned char>(line[i]);
    if ((byte & 0xC0) == 0x80) continue;
    pad += byte == '\t' ? '\t' : ' ';
    ++counted;
  }
  absl::StrAppend(&out, gutter, std::string(line), "\n", blank, "| ", pad, "^", std::string(width - 1, '~'), "\n");
  return out;
}

}  // namespace ppy
