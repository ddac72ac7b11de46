#!/usr/bin/env bash
# Installs what ppy needs and builds it into this machine's `python`.
#
# Debian 12 or 13: the compilers and libraries come from Debian (apt), the
# Python packages from PyPI (pip; torch==2.13.0 is the CPU build). Safe to run
# again: it installs only what is missing, and the build is incremental
# (Ninja and ccache in build/).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python}
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# ---- Debian packages -----------------------------------------------------------------
. /etc/os-release
. scripts/debian_packages.sh
ensure_debian_packages setup cmake ninja-build ccache g++ dpkg-dev \
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev

# ---- asmjit's source, from Debian ----------------------------------------------------
# Debian's libasmjit.a is not position-independent and cannot go into a Python
# extension, so the build compiles asmjit's Debian source package itself. The
# source lives under build/, never in the repository.
if [ ! -f build/asmjit-src/CMakeLists.txt ]; then
  if ! apt-get source --print-uris asmjit >/dev/null 2>&1; then
    echo "setup: adding a deb-src entry for ${VERSION_CODENAME}"
    $SUDO tee /etc/apt/sources.list.d/ppy-deb-src.sources >/dev/null <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME} ${VERSION_CODENAME}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    $SUDO apt-get update -qq
  fi
  echo "setup: fetching asmjit's Debian source package"
  rm -rf build/asmjit-download
  mkdir -p build/asmjit-download
  (cd build/asmjit-download && apt-get source -qq asmjit >/dev/null 2>&1)
  rm -rf build/asmjit-src
  mv "$(find build/asmjit-download -maxdepth 1 -mindepth 1 -type d -name 'asmjit-*' | head -n 1)" build/asmjit-src
  rm -rf build/asmjit-download
fi

# ---- Python packages -----------------------------------------------------------------
want=(scikit-build-core pytest pytest-xdist numpy "torch==2.13.0" accelerate)
if ! "$PYTHON" - "${want[@]}" <<'PY'
import sys
from importlib import metadata
for requirement in sys.argv[1:]:
    name, _, version = requirement.partition("==")
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        sys.exit(1)
    if version and not installed.startswith(version):
        sys.exit(1)
PY
then
  echo "setup: installing ${want[*]}"
  "$PYTHON" -m pip install -q --disable-pip-version-check "${want[@]}"
fi

# ---- ppy itself ----------------------------------------------------------------------
echo "setup: building ppy"
PPY_BUILD_TESTS=ON PPY_WERROR=ON "$PYTHON" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps .
