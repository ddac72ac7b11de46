#!/usr/bin/env bash
# ppy under ThreadSanitizer (GCC's -fsanitize=thread, in build/tsan):
#
#   1. the GoogleTest unit tests, under ctest (among them Threads.*, where
#      8 std::threads call compiled functions through the C API while they
#      tier up);
#   2. the extension modules ppy._ppy and ppy._compiler, put with the package's
#      Python sources into build/tsan/package (first on PYTHONPATH, the TSan
#      runtime LD_PRELOADed into every interpreter), and the thread stress test
#      (tests/python/test_threads.py) run against them.
#
# Exits non-zero on any test failure or any TSan report: reports of every
# process go to build/tsan/reports/, and any file there fails the run.
# CPython itself is not instrumented: TSan sees its locks (the GIL is a pthread
# mutex and condition variable, which the runtime intercepts) but not its
# memory accesses. scripts/tsan.supp holds the suppressions (none for ppy's own
# code). The ATen region executor (ppy._regions, libtorch) is not rebuilt: the
# installed one is used where there is one. See docs/fuzzing.md.
#
#   scripts/tsan.sh [PYTEST ARGS...]     (default: tests/python/test_threads.py)
#
# Environment: PYTHON (default python), JOBS (default 2), PPY_TSAN_SETARCH=1
# runs everything with ASLR off (the default only where vm.mmap_rnd_bits > 28).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# GCC 12's TSan runtime maps its shadow memory at fixed addresses, which a
# kernel randomizing mmap with more than 28 bits (vm.mmap_rnd_bits = 32, as
# recent kernels default to) can collide with: "FATAL: ThreadSanitizer:
# unexpected memory mapping". Then the whole run goes without ASLR (setarch -R;
# the personality is inherited by every process started from here), which
# needs no privileges, unlike lowering the sysctl (which only root can read,
# too: unreadable counts as too many bits). PPY_TSAN_SETARCH=1 forces it.
rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo unknown)
if [ -z "${PPY_TSAN_UNDER_SETARCH:-}" ] &&
   { [ "${PPY_TSAN_SETARCH:-0}" = 1 ] || [ "$rnd_bits" = unknown ] || [ "$rnd_bits" -gt 28 ]; }; then
  echo "tsan: running with ASLR off (setarch -R; vm.mmap_rnd_bits = ${rnd_bits})"
  PPY_TSAN_UNDER_SETARCH=1 exec setarch "$(uname -m)" -R "$root/scripts/tsan.sh" "$@"
fi

PYTHON=${PYTHON:-python}
JOBS=${JOBS:-2}
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started)) s"; }

# ---- Debian packages (as scripts/setup.sh) ---------------------------------------------
. scripts/debian_packages.sh
ensure_debian_packages tsan cmake ninja-build ccache g++ libabsl-dev libgtest-dev libgmock-dev
if [ ! -f build/asmjit-src/CMakeLists.txt ] || ! "$PYTHON" -c 'import pytest' >/dev/null 2>&1; then
  echo "tsan: asmjit's source or pytest is missing; running scripts/setup.sh"
  scripts/setup.sh
fi

# ---- Build ----------------------------------------------------------------------------
build=build/tsan
sanitizers="-fsanitize=thread -fno-omit-frame-pointer"
# The interpreter itself, never a launcher script (a pyenv shim is a bash
# script, and bash and dash crash at startup with the TSan runtime preloaded).
python_executable=$("$PYTHON" -c 'import sys; print(sys.executable)')
libtsan=$(g++ -print-file-name=libtsan.so)
if [ ! -e "$libtsan" ]; then
  echo "tsan: GCC's TSan runtime is missing ($libtsan)" >&2
  exit 1
fi
# Every process that loads an instrumented object logs its reports per process.
reports=$root/$build/reports
rm -rf "$reports"
mkdir -p "$reports"
# halt_on_error=0: every race of a run is reported, not only the first. A
# process with a report still exits 66 at the end (TSan's exitcode), so the
# test that ran it fails too. report_signal_unsafe=0: CPython's own signal
# handlers (uninstrumented) call what TSan calls signal-unsafe.
# second_deadlock_stack=1: both stacks of a lock-order inversion.
export TSAN_OPTIONS="halt_on_error=0:report_signal_unsafe=0:second_deadlock_stack=1:history_size=4:suppressions=${root}/scripts/tsan.supp:log_path=${reports}/tsan"

echo "tsan: configuring ${build} (g++ $(g++ -dumpfullversion), ${sanitizers})"
# SKBUILD=ON: a plain CMake build would copy the extensions and _region_build.py
# into hook/ppy/; this one must leave the source tree alone.
mkdir -p "$(dirname "$build")"
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
echo "tsan: building the unit tests, _ppy and _compiler ($(elapsed))"
# The unit tests' discovery runs the instrumented binary while building.
nice -n 10 ninja -C "$build" -j "$JOBS" ppy_unit_tests _ppy _compiler
built=$(date +%s)

status=0
summary=()

# ---- 1. Unit tests ----------------------------------------------------------------------
# PYTHONMALLOC=malloc: Python objects come from TSan's allocator, which knows
# when memory is freed and reused (pymalloc's pools would hide that).
echo "tsan: ctest in ${build} ($(elapsed))"
if PYTHONMALLOC=malloc nice -n 10 ctest --test-dir "$build" --output-on-failure -j "$JOBS" --timeout 600 \
    >"$build/ctest.log" 2>&1; then
  summary+=("unit tests: $(grep -E 'tests passed' "$build/ctest.log" | tail -n 1 || true)")
else
  status=1
  grep -E 'tests passed|\*\*\*Failed|\*\*\*Exception|Timeout|Not Run' "$build/ctest.log" | head -n 40 || true
  summary+=("unit tests: FAILED: $(grep -E 'tests passed' "$build/ctest.log" | tail -n 1 || true) (${build}/ctest.log)")
fi
tested=$(date +%s)

# ---- 2. The extensions, under the thread stress test --------------------------------------
package=$root/$build/package
rm -rf "$package"
mkdir -p "$package/ppy"
cp hook/ppy/*.py "$package/ppy/"
cp "$build/regions/_region_build.py" "$package/ppy/_region_build.py"
cp "$build"/hook/_ppy.*.so "$build"/hook/_compiler.*.so "$package/ppy/"
installed=$(cd / && "$PYTHON" -c 'import os, ppy; print(os.path.dirname(ppy.__file__))' 2>/dev/null || true)
if [ -n "$installed" ] && ls "$installed"/_regions.*.so >/dev/null 2>&1; then
  cp "$installed"/_regions.*.so "$package/ppy/"
fi
export PYTHONPATH="$package${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONMALLOC=malloc
# The runtime goes into the interpreters only (by env), not into this script's
# own pipes and commands: bash and dash crash at startup with it preloaded.
under_tsan=(env "LD_PRELOAD=$libtsan${LD_PRELOAD:+:$LD_PRELOAD}")

# The check: a child interpreter (as the tests start them) imports these.
loaded=$(cd / && "${under_tsan[@]}" "$python_executable" -c 'import ppy._ppy, ppy._compiler
print(ppy._ppy.__file__)
print(ppy._compiler.__file__)')
echo "tsan: the suite's interpreters import"
echo "$loaded" | sed 's/^/  /'
while read -r path; do
  case "$path" in
    "$package"/ppy/*) ;;
    *) echo "tsan: ${path} is not the TSan build" >&2; exit 1 ;;
  esac
  if ! grep -q __tsan_func_entry "$path"; then
    echo "tsan: ${path} is not built with TSan" >&2
    exit 1
  fi
done <<<"$loaded"

pytest_args=("$@")
if [ "${#pytest_args[@]}" -eq 0 ]; then pytest_args=(tests/python/test_threads.py); fi
echo "tsan: pytest ${pytest_args[*]} ($(elapsed))"
# The test run itself is under TSan too, as are the interpreters it starts
# (they inherit LD_PRELOAD, and the tests start sys.executable, never a shell).
if nice -n 10 "${under_tsan[@]}" "$python_executable" -m pytest -q -p no:cacheprovider "${pytest_args[@]}" 2>&1 | tee "$build/pytest.log" | tail -n 25; [ "${PIPESTATUS[0]}" -eq 0 ]; then
  summary+=("thread stress test: $(tail -n 1 "$build/pytest.log")")
else
  status=1
  summary+=("thread stress test: FAILED: $(tail -n 1 "$build/pytest.log") (${build}/pytest.log)")
fi
unset PYTHONMALLOC

# ---- TSan reports of any process -----------------------------------------------------------
if compgen -G "$reports/*" >/dev/null; then
  status=1
  count=$(ls "$reports" | wc -l)
  summary+=("TSan reports: ${count} file(s), $(cat "$reports"/* | grep -c '^WARNING: ThreadSanitizer' || true) report(s) (in ${reports})")
  echo "tsan: ${count} report file(s) in ${reports}:"
  for report in "$reports"/*; do
    echo "---- ${report}"
    grep -E '^WARNING: ThreadSanitizer|^  (Write|Read|Atomic|Previous|Mutex|Location)|^    #[0-2] |SUMMARY' "$report" | head -n 40 || true
  done
else
  summary+=("TSan reports: none")
fi

finished=$(date +%s)
echo "tsan: summary (build $((built - started)) s, unit tests $((tested - built)) s, stress test $((finished - tested)) s, total $((finished - started)) s)"
for line in "${summary[@]}"; do echo "  ${line}"; done
exit "$status"
