# Cross build for AArch64 on an x86-64 Debian machine: Debian's cross compilers,
# arm64 libraries unpacked into a sysroot by scripts/cross_aarch64.sh, and
# qemu-user to run what is built (ctest and gtest discovery use the emulator).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

get_filename_component(PPY_ARM64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build/arm64/sysroot" ABSOLUTE)
set(CMAKE_FIND_ROOT_PATH "${PPY_ARM64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The C library comes from the cross toolchain (/usr/aarch64-linux-gnu), every
# other library from the sysroot, found at run time through the rpath.
# (A wrapper script: CMake 3.25's gtest discovery drops an emulator's arguments.)
set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/run-aarch64")
# Debian 12's packages still put some libraries under /lib.
set(PPY_ARM64_LIBRARY_DIRS "${PPY_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu" "${PPY_ARM64_SYSROOT}/lib/aarch64-linux-gnu")
set(CMAKE_BUILD_RPATH ${PPY_ARM64_LIBRARY_DIRS})
string(REPLACE ";" ":" PPY_ARM64_LINK_PATH "${PPY_ARM64_LIBRARY_DIRS}")
# DT_RPATH, not RUNPATH: it also serves the libraries libpython needs.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${PPY_ARM64_LINK_PATH} -Wl,--disable-new-dtags")
