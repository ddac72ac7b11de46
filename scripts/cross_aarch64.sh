#!/usr/bin/env bash
# Builds the unit tests (the JIT's included) for AArch64 and leaves them in
# build/aarch64 for `ctest --test-dir build/aarch64`, which runs them under
# qemu-aarch64.
#
# Everything comes from Debian: the cross compilers and qemu-user with apt, the
# target's libraries (CPython, Abseil, GoogleTest and what they need) as arm64
# packages unpacked into build/arm64/sysroot. Unpacking instead of installing
# them keeps the host's own packages untouched (libabsl-dev:arm64 cannot be
# co-installed with the host's compilers). asmjit is compiled from the same
# Debian source package as the native build. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

tools=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user)
missing=()
for package in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "cross: adding the arm64 architecture to apt"
  $SUDO dpkg --add-architecture arm64
  need_update=1
fi
if [ "${#missing[@]}" -gt 0 ] || [ -n "${need_update:-}" ]; then
  $SUDO apt-get update -qq
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "cross: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ---- the target's libraries ----------------------------------------------------------
sysroot=build/arm64/sysroot
roots=(libpython3-dev:arm64 libabsl-dev:arm64 libgtest-dev:arm64)
# The C and C++ runtimes come with the cross compilers; two copies would clash.
toolchain_owned='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|linux-libc-dev|dpkg|tar|install-info):arm64$'
if [ ! -f "$sysroot/.complete" ]; then
  echo "cross: unpacking arm64 libraries into $sysroot"
  mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "${roots[@]}" 2>/dev/null |
    grep -E '^[a-z0-9].*:arm64$' | grep -Ev "$toolchain_owned" | sort -u)
  rm -rf build/arm64
  mkdir -p build/arm64/debs "$sysroot"
  (cd build/arm64/debs && apt-get download -qq "${closure[@]}" >/dev/null)
  for deb in build/arm64/debs/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
  # Absolute symlinks (libfoo.so -> /lib/...) must point into the sysroot.
  find "$sysroot" -type l -lname '/*' | while read -r link; do
    ln -sfn "$(realpath -m "$sysroot$(readlink "$link")")" "$link"
  done
  rm -rf build/arm64/debs
  touch "$sysroot/.complete"
fi

# ---- the build -----------------------------------------------------------------------
if [ ! -f build/aarch64/build.ninja ]; then
  cmake -S . -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
    -DPPY_BUILD_TESTS=ON -DPPY_WERROR=ON >/dev/null
fi
echo "cross: building the AArch64 unit tests"
cmake --build build/aarch64 --target ppy_unit_tests
