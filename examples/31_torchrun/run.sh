#!/usr/bin/env bash
# The seed page, command by command (see README.md in this folder): the
# kernels built once into the project cache, then the trainer under python,
# torchrun and accelerate launch, then PPY_IMPORT=python for comparison, and
# the two kernels' own checks.
set -euo pipefail
cd "$(dirname "$0")"
run() { echo "\$ $1"; eval "$1"; echo; }
run "ppy build --warm ."
run "python train.py"
run "torchrun --standalone --nproc_per_node=2 train.py"
# accelerate_config.yaml answers `accelerate config`'s questions (two processes,
# this machine), so that nothing is asked and nothing is warned about.
run "accelerate launch --config_file accelerate_config.yaml --multi_gpu --num_processes 2 train.py"
run "PPY_IMPORT=python python train.py"
run "ppy check ."
run "python features.ppy && ppy run features.ppy"
run "python model.ppy && ppy run model.ppy"
