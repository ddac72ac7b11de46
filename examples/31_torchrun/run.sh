#!/usr/bin/env bash
# The seed page, command by command (see README.md in this folder).
set -euo pipefail
cd "$(dirname "$0")"
run() { echo "\$ $*"; "$@"; echo; }
run ppy build --warm .
run ppy check .
run python features.ppy
run ppy run features.ppy
