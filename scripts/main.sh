#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the main job: examples/31_torchrun, its
# kernels built once into the project cache, then the trainer under python,
# torchrun and accelerate launch, and under PPY_IMPORT=python for comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd examples/31_torchrun
./run.sh
