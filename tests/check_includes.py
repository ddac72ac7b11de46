"""Checks that every C++ folder keeps to the layers its README states.

Each folder of C++ code (vm/, compiler/, asmjit-backend/, regions/, hook/) has
a README.md with a table of its files and a line

    May include: `vm/`, `regions/region_code.h`, ...

naming, in backticks, the folders (ending in /) and single files its
`#include "..."` lines may name. This script fails, naming the file and line,
when a source includes anything else, and when a source file of the folder is
missing from its README's table (so that the table stays true). Angle-bracket
includes (the standard library, CPython, torch, asmjit) are not checked here.

Run by ctest (tests/CMakeLists.txt) as `Layers.IncludesFollowReadmes`:
    python tests/check_includes.py [SOURCE_ROOT]
"""

import pathlib
import re
import sys

FOLDERS = ["vm", "compiler", "asmjit-backend", "regions", "hook"]
SOURCE_SUFFIXES = {".h", ".cpp", ".def"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def allowed_includes(readme):
    for line in readme.read_text().splitlines():
        if line.startswith("May include:"):
            return re.findall(r"`([^`]+)`", line)
    raise SystemExit(f"{readme}: no 'May include:' line")


def listed_files(readme):
    """The file names in the README's table: `name` or `name.{h,cpp}` in the first column."""
    names = set()
    for line in readme.read_text().splitlines():
        if not line.startswith("|"):
            continue
        first = line.split("|")[1]
        for item in re.findall(r"`([^`]+)`", first):
            braces = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", item)
            if braces:
                names.update(braces[1] + part + braces[3] for part in braces[2].split(","))
            else:
                names.add(item)
    return names


def check(root):
    problems = []
    for folder in FOLDERS:
        readme = root / folder / "README.md"
        if not readme.exists():
            problems.append(f"{folder}/: no README.md")
            continue
        allowed = allowed_includes(readme)
        listed = listed_files(readme)
        for source in sorted((root / folder).iterdir()):
            if source.suffix not in SOURCE_SUFFIXES:
                continue
            if source.name not in listed:
                problems.append(f"{folder}/{source.name}: not in the file table of {folder}/README.md")
            for number, line in enumerate(source.read_text().splitlines(), 1):
                match = INCLUDE.match(line)
                if match is None:
                    continue
                target = match[1]
                if not any(target == rule or (rule.endswith("/") and target.startswith(rule)) for rule in allowed):
                    problems.append(f"{folder}/{source.name}:{number}: includes \"{target}\", "
                                    f"which {folder}/README.md does not allow (May include: {', '.join(allowed)})")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
    problems = check(root)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"includes follow the READMEs of {', '.join(FOLDERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
