# CPython for a cross build: the target's headers and libpython from the
# sysroot (FindPython would ask the host's interpreter, which is the wrong
# machine). Defines what the native build gets from FindPython.
file(GLOB PPY_TARGET_PYTHON_INCLUDE "${PPY_ARM64_SYSROOT}/usr/include/python3.*")
file(GLOB PPY_TARGET_PYTHON_LIBRARY "${PPY_ARM64_SYSROOT}/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/libpython3.*.so")
if(NOT PPY_TARGET_PYTHON_INCLUDE OR NOT PPY_TARGET_PYTHON_LIBRARY)
  message(FATAL_ERROR "no target CPython in ${PPY_ARM64_SYSROOT}: run scripts/cross_aarch64.sh")
endif()
get_filename_component(version "${PPY_TARGET_PYTHON_INCLUDE}" NAME)
# Debian's pyconfig.h includes <aarch64-linux-gnu/python3.X/pyconfig.h>.
set(includes "${PPY_TARGET_PYTHON_INCLUDE}" "${PPY_ARM64_SYSROOT}/usr/include")
add_library(Python::Module INTERFACE IMPORTED)
set_target_properties(Python::Module PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${includes}")
add_library(Python::Python SHARED IMPORTED)
set_target_properties(Python::Python PROPERTIES
  IMPORTED_LOCATION "${PPY_TARGET_PYTHON_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${includes}")
# The embedded interpreter of the unit tests finds its standard library here.
set(PPY_TARGET_PYTHON_HOME "${PPY_ARM64_SYSROOT}/usr")
message(STATUS "Target CPython: ${version} in ${PPY_ARM64_SYSROOT}")
