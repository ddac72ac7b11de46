#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: the GoogleTest suites under
# ctest, natively and cross-built for AArch64 under qemu, then pytest (hook,
# cache, CLI, the differential suite in every mode, launches).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=$(ls -d build/cp*/ | head -n 1)
echo "test: ctest in ${build_dir}"
ctest --test-dir "$build_dir" --output-on-failure -j 2
echo "test: the same unit tests built for AArch64, under qemu-aarch64"
scripts/cross_aarch64.sh
ctest --test-dir build/aarch64 --output-on-failure -j 2
echo "test: pytest"
python -m pytest -q --durations=10 tests/python
