#!/usr/bin/env bash
# Builds the C++ micro benchmarks (benchmarks/micro/: Google Benchmark, Release,
# in build/micro) and runs them. Every argument goes to the benchmark binary:
#
#   scripts/micro_benchmarks.sh                                  # the whole suite
#   scripts/micro_benchmarks.sh --benchmark_filter=Interpret     # one group
#   scripts/micro_benchmarks.sh --benchmark_out=new.json --benchmark_out_format=json
#
# --benchmark_min_time may be spelled 0.01 or 0.01s whichever Google Benchmark
# Debian has (the binary translates). What each benchmark measures and how to
# compare two versions: benchmarks/micro/README.md.
#
# Environment: PYTHON (the CPython embedded, default python), JOBS (default 2),
# PPY_ASMJIT_SOURCE_DIR (default build/asmjit-src, which scripts/setup.sh
# fetches). The build is incremental (Ninja and ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
JOBS=${JOBS:-2}
asmjit=${PPY_ASMJIT_SOURCE_DIR:-$PWD/build/asmjit-src}

. scripts/debian_packages.sh
ensure_debian_packages micro cmake ninja-build ccache g++ libabsl-dev libbenchmark-dev
if [ ! -f "$asmjit/CMakeLists.txt" ]; then
  echo "micro: asmjit's source is missing at ${asmjit}; running scripts/setup.sh"
  scripts/setup.sh
fi

build=build/micro
python_executable=$("$PYTHON" -c 'import sys; print(sys.executable)')
mkdir -p build
# SKBUILD=ON: a plain CMake build would copy the extensions into hook/ppy/;
# this one leaves the source tree alone (it builds only the benchmark anyway).
# g++ by name, as the wheel's build finds it: the same compiler command line,
# so ccache gives back asmjit and ppy's objects from that build.
nice -n 10 cmake -G Ninja -S . -B "$build" \
  -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE="$python_executable" \
  -DPPY_ASMJIT_SOURCE_DIR="$asmjit" \
  -DPPY_BUILD_BENCHMARKS=ON -DPPY_BUILD_TESTS=OFF -DPPY_WERROR=ON -DSKBUILD=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
nice -n 10 ninja -C "$build" -j "$JOBS" ppy_micro_benchmarks
exec "$build/benchmarks/micro/ppy_micro_benchmarks" "$@"
