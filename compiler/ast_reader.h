// Reads CPython's ast into the ppy syntax tree.
#pragma once

#include <Python.h>

#include <memory>
#include <string_view>

#include "compiler/syntax.h"

namespace ppy {

// Parses `source` with CPython's own parser (ast.parse). Returns the ast.Module
// (a new reference), or nullptr with the SyntaxError set exactly as CPython
// raises it.
PyObject* ParseSource(std::string_view source, std::string_view filename);

// Converts an ast.Module. Returns nullptr with a Python exception set only if
// the tree is not a well-formed ast (never for a tree ast.parse returned).
std::unique_ptr<ModuleSyntax> ReadModule(PyObject* tree);

}  // namespace ppy
