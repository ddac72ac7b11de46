#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: the GoogleTest suites under
# ctest, natively and cross-built for AArch64 under qemu, the micro benchmarks
# for a few iterations, then pytest (hook, cache, CLI, the differential suite
# in every mode, launches) on every CPython ppy supports that this machine
# has: 3.11, 3.12 and 3.13, each from a wheel of its own installed into a
# virtual environment under build/; then the fuzzers for a minute each and
# the sanitizer builds (ASan+UBSan, then TSan). The run fails if any step
# fails, and goes on to the next step either way.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
since() { echo "$(($(date +%s) - $1)) s"; }
# pytest workers (pytest-xdist): one per core unless PPY_TEST_WORKERS says.
workers=${PPY_TEST_WORKERS:-$(nproc)}
summary=()
scripts/setup.sh
summary+=("setup: $(since "$started")")
PYTHON=${PYTHON:-python}
base_tag=$("$PYTHON" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
build_dir=$(ls -d build/"${base_tag}"-*/ | head -n 1)
echo "test: ctest in ${build_dir}"
step=$(date +%s)
ctest --test-dir "$build_dir" --output-on-failure -j 2
summary+=("ctest: passed ($(since "$step"))")
echo "test: the same unit tests built for AArch64, under qemu-aarch64"
step=$(date +%s)
scripts/cross_aarch64.sh
ctest --test-dir build/aarch64 --output-on-failure -j 2
summary+=("ctest for AArch64: passed ($(since "$step"))")

status=0
# The micro benchmarks (benchmarks/micro/), built and run for a few
# iterations each: a smoke test that every benchmark still compiles its
# source, runs and reports, not a measurement (scripts/micro_benchmarks.sh
# without arguments is). Seconds, with the build from ccache.
echo "test: micro benchmarks, a few iterations each"
step=$(date +%s)
if scripts/micro_benchmarks.sh --benchmark_min_time=0.01; then
  summary+=("micro benchmarks: passed ($(since "$step"))")
else
  summary+=("micro benchmarks: FAILED")
  status=1
fi

# The newest installed CPython X.Y: pyenv's, else pythonX.Y on PATH.
find_python() {
  local version=$1 root candidate found=""
  if command -v pyenv >/dev/null 2>&1; then
    root=$(pyenv root)
    for candidate in $(ls -d "$root"/versions/"$version".* 2>/dev/null | sort -V); do
      [ -x "$candidate/bin/python$version" ] && found="$candidate/bin/python$version"
    done
  fi
  if [ -z "$found" ]; then found=$(command -v "python$version" 2>/dev/null || true); fi
  # A venv's python is no base to make another venv from.
  if [ -n "$found" ]; then "$found" -c 'import sys; print(sys._base_executable)'; fi
}

for version in 3.11 3.12 3.13; do
  tag="cp${version/./}"
  interpreter=$(find_python "$version")
  if [ -z "$interpreter" ]; then
    echo "test: CPython ${version}: skipped (not installed on this machine)"
    summary+=("CPython ${version}: skipped (not installed)")
    continue
  fi
  venv="build/venv-${tag}"
  echo "test: CPython ${version} (${interpreter}) in ${venv}"
  step=$(date +%s)
  if [ ! -x "$venv/bin/python" ]; then
    # The interpreter's own site-packages stay visible: torch, where it is
    # installed, is a multi-GB download that each venv should not repeat.
    "$interpreter" -m venv --system-site-packages "$venv"
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check scikit-build-core pytest pytest-xdist numpy
  # The wheel, built as a user's `pip wheel .` would, then installed from it.
  rm -rf "build/wheels/${tag}"
  options=(-q --disable-pip-version-check --no-build-isolation --no-deps)
  if [ "$tag" = "$base_tag" ]; then
    # The same configuration as setup.sh's build, so this build reuses it.
    PPY_BUILD_TESTS=ON PPY_WERROR=ON "$venv/bin/python" -m pip wheel "${options[@]}" -w "build/wheels/${tag}" .
  else
    PPY_WERROR=ON "$venv/bin/python" -m pip wheel "${options[@]}" -w "build/wheels/${tag}" .
  fi
  wheel=$(ls "build/wheels/${tag}"/ppy-*.whl)
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$wheel"
  # pytest's summary line closes each run; a failure does not stop the others.
  # One worker per core (pytest-xdist): most tests wait on one child process
  # at a time. `loadgroup` keeps the modes of one differential program in one
  # worker, where CPython's output of it is computed once.
  built=$(date +%s)
  # The differential suite in every mode on the first CPython, in the jit
  # and default modes on the others (tests/python/test_programs.py, MODES).
  modes=""
  if [ "$tag" != "$base_tag" ]; then modes="jit,default"; fi
  if PPY_TEST_MODES="$modes" PPY_WHEEL="$PWD/$wheel" "$venv/bin/python" -m pytest -q --durations=10 -n "$workers" --dist loadgroup tests/python; then
    summary+=("CPython ${version}: passed (wheel $((built - step)) s, pytest $(since "$built"))")
  else
    summary+=("CPython ${version}: FAILED")
    status=1
  fi
done

# Hardening: each libFuzzer target for a minute (the bugs they ever found are
# replayed first), then the unit tests and the differential suite built with
# AddressSanitizer and UndefinedBehaviorSanitizer (docs/fuzzing.md).
# A fixed seed: the same inputs in the same order on every run, so a failure
# here is a regression, reproducible, not a lucky find (longer runs with fresh
# seeds are scripts/fuzz.sh's own job).
echo "test: fuzzers, 60 s each"
step=$(date +%s)
if FUZZ_ARGS="${FUZZ_ARGS:--seed=20261130}" scripts/fuzz.sh 60; then summary+=("fuzzers: passed ($(since "$step"))"); else summary+=("fuzzers: FAILED"); status=1; fi
echo "test: ASan+UBSan build of the unit tests and the differential suite"
step=$(date +%s)
if PYTEST_WORKERS=$workers scripts/sanitize.sh; then summary+=("sanitizers: passed ($(since "$step"))"); else summary+=("sanitizers: FAILED"); status=1; fi
# ThreadSanitizer: the unit tests (Threads.* among them) and the thread stress
# test (tests/python/test_threads.py: 8 threads, 10,000 calls each, while the
# functions tier up) against a TSan build (docs/fuzzing.md).
echo "test: TSan build of the unit tests and the thread stress test"
step=$(date +%s)
if scripts/tsan.sh; then summary+=("thread sanitizer: passed ($(since "$step"))"); else summary+=("thread sanitizer: FAILED"); status=1; fi

echo "test: summary (total $(since "$started"))"
for line in "${summary[@]}"; do echo "  ${line}"; done
exit "$status"
