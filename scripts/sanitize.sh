#!/usr/bin/env bash
# ppy under AddressSanitizer and UndefinedBehaviorSanitizer (GCC's
# -fsanitize=address,undefined, in build/asan):
#
#   1. the GoogleTest unit tests, under ctest;
#   2. the extension modules ppy._ppy and ppy._compiler, put with the package's
#      Python sources into build/asan/package (first on PYTHONPATH, the ASan
#      runtime LD_PRELOADed into every interpreter), and the differential suite
#      (tests/python/test_programs.py) run against them.
#
# Exits non-zero on any test failure or any sanitizer report: reports of every
# process go to build/asan/reports/ as well, and any file there fails the run.
# The ATen region executor (ppy._regions, libtorch) is not rebuilt: the
# installed one is used where there is one. See docs/fuzzing.md.
#
#   scripts/sanitize.sh [PYTEST ARGS...]     (default: tests/python/test_programs.py)
#
# Environment: PYTHON (default python), JOBS (default 2), PYTEST_WORKERS (default:
# one per core, with pytest-xdist), PPY_SANITIZE_PYMALLOC=1
# keeps CPython's pymalloc (default: PYTHONMALLOC=malloc, so that ASan sees
# Python objects freed too early or twice).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

PYTHON=${PYTHON:-python}
JOBS=${JOBS:-2}
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started)) s"; }

# ---- Debian packages (as scripts/setup.sh) ---------------------------------------------
. scripts/debian_packages.sh
ensure_debian_packages sanitize cmake ninja-build ccache g++ libabsl-dev libgtest-dev libgmock-dev
if [ ! -f build/asmjit-src/CMakeLists.txt ] || ! "$PYTHON" -c 'import pytest' >/dev/null 2>&1; then
  echo "sanitize: asmjit's source or pytest is missing; running scripts/setup.sh"
  scripts/setup.sh
fi

# ---- Build ----------------------------------------------------------------------------
build=build/asan
sanitizers="-fsanitize=address,undefined -fno-omit-frame-pointer"
python_executable=$("$PYTHON" -c 'import sys; print(sys.executable)')
libasan=$(g++ -print-file-name=libasan.so)
if [ ! -e "$libasan" ]; then
  echo "sanitize: GCC's ASan runtime is missing ($libasan)" >&2
  exit 1
fi
# Every process that loads a sanitized object: reports logged per process too.
reports=$root/$build/reports
rm -rf "$reports"
mkdir -p "$reports"
# Leaks: off. CPython does not free everything at exit (and Py_Finalize in the
# unit tests even less), which LeakSanitizer would report for every process.
asan_options="detect_leaks=0:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0"
ubsan_options="halt_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="${asan_options}:log_path=${reports}/asan"
export UBSAN_OPTIONS="${ubsan_options}:log_path=${reports}/ubsan"

echo "sanitize: configuring ${build} (g++ $(g++ -dumpfullversion), ${sanitizers})"
# SKBUILD=ON: a plain CMake build would copy the extensions and _region_build.py
# into hook/ppy/; this one must leave the source tree alone.
nice -n 10 cmake -G Ninja -S . -B "$build" \
  -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="${sanitizers}" \
  -DCMAKE_EXE_LINKER_FLAGS="${sanitizers}" \
  -DCMAKE_SHARED_LINKER_FLAGS="${sanitizers}" \
  -DCMAKE_MODULE_LINKER_FLAGS="${sanitizers}" \
  -DPython_EXECUTABLE="$python_executable" \
  -DPPY_BUILD_TESTS=ON -DPPY_PLAIN_ASMJIT=ON -DSKBUILD=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
echo "sanitize: building the unit tests, _ppy and _compiler ($(elapsed))"
# The unit tests' discovery runs the sanitized binary while building.
nice -n 10 ninja -C "$build" -j "$JOBS" ppy_unit_tests _ppy _compiler
built=$(date +%s)

status=0
summary=()

# ---- 1. Unit tests ----------------------------------------------------------------------
echo "sanitize: ctest in ${build} ($(elapsed))"
if PYTHONMALLOC=$([ "${PPY_SANITIZE_PYMALLOC:-0}" = 1 ] && echo pymalloc || echo malloc) \
    nice -n 10 ctest --test-dir "$build" --output-on-failure -j "$JOBS" >"$build/ctest.log" 2>&1; then
  summary+=("unit tests: $(grep -E 'tests passed' "$build/ctest.log" | tail -n 1 || true)")
else
  status=1
  grep -E 'tests passed|\*\*\*Failed|\*\*\*Exception|Timeout|Not Run' "$build/ctest.log" | head -n 40 || true
  summary+=("unit tests: FAILED: $(grep -E 'tests passed' "$build/ctest.log" | tail -n 1 || true) (${build}/ctest.log)")
fi
tested=$(date +%s)

# ---- 2. The extensions, under the differential suite ------------------------------------
package=$root/$build/package
rm -rf "$package"
mkdir -p "$package/ppy"
cp hook/ppy/*.py "$package/ppy/"
cp "$build/regions/_region_build.py" "$package/ppy/_region_build.py"
cp "$build"/hook/_ppy.*.so "$build"/hook/_compiler.*.so "$package/ppy/"
# The installed executor, if any (it checks its own API and torch versions on
# load, and a region runs as Python without it).
installed=$(cd / && "$PYTHON" -c 'import os, ppy; print(os.path.dirname(ppy.__file__))' 2>/dev/null || true)
if [ -n "$installed" ] && ls "$installed"/_regions.*.so >/dev/null 2>&1; then
  cp "$installed"/_regions.*.so "$package/ppy/"
fi
export PYTHONPATH="$package${PYTHONPATH:+:$PYTHONPATH}"
export LD_PRELOAD="$libasan${LD_PRELOAD:+:$LD_PRELOAD}"
if [ "${PPY_SANITIZE_PYMALLOC:-0}" != 1 ]; then export PYTHONMALLOC=malloc; fi

# The check: a child interpreter (as the tests start them) imports these.
loaded=$(cd / && "$python_executable" -c 'import ppy._ppy, ppy._compiler
print(ppy._ppy.__file__)
print(ppy._compiler.__file__)')
echo "sanitize: the suite's interpreters import"
echo "$loaded" | sed 's/^/  /'
while read -r path; do
  case "$path" in
    "$package"/ppy/*) ;;
    *) echo "sanitize: ${path} is not the sanitized build" >&2; exit 1 ;;
  esac
  if ! grep -q __asan_report "$path"; then
    echo "sanitize: ${path} is not built with ASan" >&2
    exit 1
  fi
done <<<"$loaded"

pytest_args=("$@")
# By default the suite's vm mode (tests/python/test_programs.py, MODES): every
# program run through the interpreter, whose every instruction ASan sees. Not
# the jit mode, whose typed code is machine code ASan does not see (its code
# generator runs under ASan in the unit tests, which compile every
# instruction flagged JIT), nor the default mode, where functions of mostly
# object code run as Python; nor `ppy check -v` of each program: the
# compiler runs under ASan+UBSan on every program's source in
# scripts/fuzz.sh, whose corpus they seed. (Each is a minute or more of the
# CI's hour.)
if [ "${#pytest_args[@]}" -eq 0 ]; then
  export PPY_TEST_MODES=${PPY_TEST_MODES:-vm}
  pytest_args=(tests/python/test_programs.py -k "matches_cpython")
fi
# One worker per core where pytest-xdist is installed (scripts/setup.sh
# installs it): each test waits on one child process at a time.
workers=${PYTEST_WORKERS:-$(nproc)}
if [ "$workers" -gt 1 ] && "$python_executable" -c 'import xdist' >/dev/null 2>&1; then
  pytest_args=(-n "$workers" --dist loadgroup "${pytest_args[@]}")
fi
echo "sanitize: pytest ${pytest_args[*]} ($(elapsed))"
if nice -n 10 "$python_executable" -m pytest -q -p no:cacheprovider "${pytest_args[@]}" 2>&1 | tee "$build/pytest.log" | tail -n 25; [ "${PIPESTATUS[0]}" -eq 0 ]; then
  summary+=("differential suite: $(tail -n 1 "$build/pytest.log")")
else
  status=1
  summary+=("differential suite: FAILED: $(tail -n 1 "$build/pytest.log") (${build}/pytest.log)")
fi
unset LD_PRELOAD PYTHONMALLOC

# ---- Sanitizer reports of any process ------------------------------------------------------
if compgen -G "$reports/*" >/dev/null; then
  status=1
  count=$(ls "$reports" | wc -l)
  summary+=("sanitizer reports: ${count} (in ${reports})")
  echo "sanitize: ${count} sanitizer report(s) in ${reports}:"
  for report in "$reports"/*; do
    echo "---- ${report}"
    grep -E 'ERROR: |runtime error|SUMMARY|^    #[0-9] ' "$report" | head -n 20 || true
  done
else
  summary+=("sanitizer reports: none")
fi

finished=$(date +%s)
echo "sanitize: summary (build $((built - started)) s, unit tests $((tested - built)) s, suite $((finished - tested)) s, total $((finished - started)) s)"
for line in "${summary[@]}"; do echo "  ${line}"; done
exit "$status"
