#include <gtest/gtest.h>

#include "compiler/diagnostics.h"

namespace ppy {
namespace {

TEST(Diagnostics, RendersTheLineWithACaretUnderTheRange) {
  Diagnostic diagnostic{Severity::kError, {2, 8, 2, 11}, "cannot assign float to 'x'"};
  EXPECT_EQ(RenderDiagnostic(diagnostic, "k.ppy", "def f():\n    x = 1.5\n"),
            "k.ppy:2:9: error: cannot assign float to 'x'\n"
            "    2 |     x = 1.5\n"
            "      |         ^~~\n");
}

TEST(Diagnostics, CountsColumnsInCharactersNotBytes) {
  // "é" is two bytes in UTF-8: byte 3 is the third character.
  EXPECT_EQ(CharacterColumn("é = x", 3), 3);
  Diagnostic diagnostic{Severity::kWarning, {1, 5, 1, 6}, "here"};
  EXPECT_EQ(RenderDiagnostic(diagnostic, "k.ppy", "\"é\" + x"),
            "k.ppy:1:5: warning: here\n"
            "    1 | \"é\" + x\n"
            "      |     ^\n");
}

TEST(Diagnostics, KeepsTabsSoTheCaretLinesUp) {
  Diagnostic diagnostic{Severity::kError, {1, 2, 1, 3}, "x"};
  EXPECT_EQ(RenderDiagnostic(diagnostic, "k.ppy", "\tab"), "k.ppy:1:3: error: x\n    1 | \tab\n      | \t ^\n");
}

}  // namespace
}  // namespace ppy
