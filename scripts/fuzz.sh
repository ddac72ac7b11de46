#!/usr/bin/env bash
# Builds ppy's libFuzzer targets (fuzz/: clang, -fsanitize=fuzzer,address,undefined,
# in build/fuzz), regenerates their seed corpus, and runs each for SECONDS
# (default 60). Prints per target its executions and final coverage line, and
# exits non-zero if any target crashed, leaked, tripped a sanitizer, timed out
# or ran out of memory; the input that did it is kept in
# build/fuzz/artifacts/<target>/. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment: PYTHON (default python: the CPython the fuzzers embed), JOBS
# (default 2), FUZZ_TARGETS (default "fuzz_entry fuzz_compiler fuzz_regions"),
# FUZZ_ARGS (more libFuzzer flags for every target). Debian 12 or 13; installs
# what is missing (clang and its libFuzzer runtime), and is safe to run again:
# the build is incremental (Ninja and ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

duration=${1:-60}
if ! [[ "$duration" =~ ^[0-9]+$ ]] || [ "$duration" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS]" >&2
  exit 2
fi
PYTHON=${PYTHON:-python}
JOBS=${JOBS:-2}
targets=(${FUZZ_TARGETS:-fuzz_entry fuzz_compiler fuzz_regions})
started=$(date +%s)

# ---- Debian packages: clang and libFuzzer (libclang-rt-dev: Debian's default clang's) --
. scripts/debian_packages.sh
ensure_debian_packages fuzz clang libclang-rt-dev cmake ninja-build ccache libabsl-dev
# asmjit's source (the root CMakeLists.txt needs it even though no fuzz target
# links the JIT) comes from scripts/setup.sh.
if [ ! -f build/asmjit-src/CMakeLists.txt ]; then
  echo "fuzz: asmjit's source is missing; running scripts/setup.sh"
  scripts/setup.sh
fi

# ---- Build --------------------------------------------------------------------------
python_executable=$("$PYTHON" -c 'import sys; print(sys.executable)')
build=build/fuzz
echo "fuzz: configuring ${build} (clang++, $(clang++ --version | head -n 1))"
# SKBUILD=ON: a plain CMake build would copy files into hook/ppy/; this one
# must leave the source tree alone.
nice -n 10 cmake -G Ninja -S . -B "$build" \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DPython_EXECUTABLE="$python_executable" \
  -DPPY_BUILD_FUZZERS=ON -DPPY_BUILD_TESTS=OFF -DSKBUILD=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
echo "fuzz: building ${targets[*]}"
nice -n 10 ninja -C "$build" -j "$JOBS" "${targets[@]}" fuzz_compiler
built=$(date +%s)

# ---- Seed corpus (regenerated; nothing of it is in the repository) -------------------
corpus=$build/corpus
artifacts=$build/artifacts
logs=$build/logs
rm -rf "$corpus" "$logs"
mkdir -p "$corpus"/fuzz_entry "$corpus"/fuzz_compiler "$corpus"/fuzz_regions "$logs"
mapfile -t sources < <(ls tests/programs/*.ppy; find examples fuzz/seeds -name '*.ppy' | sort)
# fuzz_compiler: the sources themselves.
for source in "${sources[@]}"; do
  name=$(basename "$(dirname "$source")")_$(basename "$source")
  cp "$source" "$corpus/fuzz_compiler/$name"
done
# fuzz_entry and fuzz_regions: the entries the compiler makes of them (version
# "fuzz"), and their region sections, whole and one region each.
ASAN_OPTIONS=detect_leaks=0 "$build/fuzz/fuzz_compiler" --make-seeds \
  "$corpus/fuzz_entry" "$corpus/fuzz_regions" "${sources[@]}"
# Also the entries the installed ppy writes (its own version string; with the
# hook's PYMC and META sections), where ppy is installed.
if "$PYTHON" -c 'import ppy._ppy, ppy._compiler' >/dev/null 2>&1; then
  cache=$(mktemp -d)
  if PPY_CACHE_DIR="$cache" PPY_QUIET=1 "$PYTHON" -m ppy build tests/programs examples fuzz/seeds \
      >"$logs/ppy-build.log" 2>&1; then
    for entry in "$cache"/*.ppyc; do cp "$entry" "$corpus/fuzz_entry/hook_$(basename "$entry")"; done
  fi
  rm -rf "$cache"
fi
# Every input that once found a bug runs first, on every run.
for target in fuzz_entry fuzz_compiler fuzz_regions; do
  if [ -d "fuzz/regressions/$target" ]; then cp fuzz/regressions/"$target"/* "$corpus/$target/" 2>/dev/null || true; fi
done
for target in fuzz_entry fuzz_compiler fuzz_regions; do
  echo "fuzz: seeds for ${target}: $(ls "$corpus/$target" | wc -l) files, $(du -sk "$corpus/$target" | cut -f1) KiB"
done

# ---- Run ----------------------------------------------------------------------------
# detect_leaks: libFuzzer checks for leaks after any input that allocated more
# than it freed. CPython's own memory stays reachable, so it is not reported.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
# The targets run at once, each for SECONDS: on a machine with fewer cores
# than targets they share them (fewer executions each, the same minute).
declare -A pids
for target in "${targets[@]}"; do
  mkdir -p "$artifacts/$target"
  options=(
    -max_total_time="$duration"
    -timeout=30
    -print_final_stats=1
    -artifact_prefix="$artifacts/$target/"
    -dict="fuzz/$target.dict"
  )
  if [ "$target" = fuzz_compiler ]; then options+=(-max_len=16384); fi
  echo "fuzz: ${target} for ${duration} s"
  # shellcheck disable=SC2086
  nice -n 10 "$build/fuzz/$target" "${options[@]}" ${FUZZ_ARGS:-} "$corpus/$target" >"$logs/$target.log" 2>&1 &
  pids[$target]=$!
done
for target in "${targets[@]}"; do
  log=$logs/$target.log
  set +e
  wait "${pids[$target]}"
  rc=$?
  set -e
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  if [ "$rc" -eq 0 ]; then
    echo "  ${target}: ${executions:-?} executions"
    echo "  ${done_line}"
    summary+=("${target}: ok, ${executions:-?} executions; ${done_line}")
  else
    status=1
    echo "  ${target}: FAILED (exit ${rc}); the end of ${log}:"
    grep -E 'ppy fuzz: BUG|^SUMMARY|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer|UndefinedBehaviorSanitizer)|runtime error|Test unit written' \
      "$log" | head -n 20 | sed 's/^/    /' || true
    last=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 || true)
    artifact=$(sed -n "s/.*Test unit written to \(.*\)/\1/p" "$log" | tail -n 1)
    what=$(grep -m 1 -E '^SUMMARY' "$log" || true)
    summary+=("${target}: FAILED (exit ${rc}) after ${last#\#} executions: ${what:-see ${log}}; reproducer: ${artifact:-none written}")
  fi
done

finished=$(date +%s)
echo "fuzz: summary (build $((built - started)) s, total $((finished - started)) s)"
for line in "${summary[@]}"; do echo "  ${line}"; done
if [ "$status" -ne 0 ]; then
  echo "fuzz: reproduce a failure with: ${build}/fuzz/<target> <artifact> (see docs/fuzzing.md)"
fi
exit "$status"
