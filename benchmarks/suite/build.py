"""Builds the suite's native systems into a folder: the C kernels as shared
libraries (gcc -O2, loaded through ctypes) and the Cython kernels twice (typed
memoryviews with bounds checks on, and with boundscheck and wraparound off),
plus the one-function library that marks a callgrind region.

Used by benchmarks/suite.py and tests/python/test_suite_kernels.py; every
compiler runs as a child with a timeout.
"""

import concurrent.futures
import os
import signal
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
CFLAGS = ["-O2", "-fPIC", "-shared", "-ffp-contract=off"]
CYTHON_VARIANTS = {
    "cython-checked": [],
    "cython-unchecked": ["-X", "boundscheck=False", "-X", "wraparound=False"],
}
# Counts one call: zero callgrind's counters, collect only during the call, and
# dump them (one numbered dump per call). Run under
# valgrind --tool=callgrind --collect-atstart=no.
REGION_C = """
#include <valgrind/callgrind.h>
typedef void (*suite_callback)(void);
void suite_region(suite_callback callback) {
  CALLGRIND_ZERO_STATS;
  CALLGRIND_TOGGLE_COLLECT;
  callback();
  CALLGRIND_TOGGLE_COLLECT;
  CALLGRIND_DUMP_STATS;
}
"""


def _run(args, timeout):
    """Runs a compiler; on a timeout or any failure its whole process group
    (cc1, as, ld) is killed."""
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except BaseException:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        raise
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, args, output)


def build_c(kernels, build, timeout=120):
    os.makedirs(os.path.join(build, "c"), exist_ok=True)
    jobs = [["gcc", *CFLAGS, "-o", os.path.join(build, "c", f"lib{k}.so"), os.path.join(HERE, f"{k}.c"), "-lm"]
            for k in kernels]
    _parallel(jobs, timeout)


def build_region(build, timeout=60):
    """The region library, or None where valgrind's callgrind.h is missing."""
    source = os.path.join(build, "suite_region.c")
    with open(source, "w") as f:
        f.write(REGION_C)
    library = os.path.join(build, "libsuite_region.so")
    try:
        _run(["gcc", "-O1", "-fPIC", "-shared", "-o", library, source], timeout)
    except subprocess.CalledProcessError:
        return None
    return library


def build_cython(kernels, build, variants=tuple(CYTHON_VARIANTS), optimize="-O2", timeout=300):
    """One extension module per variant, suite_cy, holding every kernel's .pyx
    (their names do not collide): Cython's memoryview support code is then
    translated and compiled once per variant rather than once per kernel."""
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    translate, compile_ = [], []
    for variant in variants:
        folder = os.path.join(build, variant)
        os.makedirs(folder, exist_ok=True)
        combined = os.path.join(folder, "suite_cy.pyx")
        with open(combined, "w") as out:
            for k in kernels:
                with open(os.path.join(HERE, f"{k}_cy.pyx")) as f:
                    out.write(f"# ---- {k}_cy.pyx\n{f.read()}\n\n")
        c_file = os.path.join(folder, "suite_cy.c")
        translate.append([sys.executable, "-m", "cython", "-3", *CYTHON_VARIANTS[variant], combined, "-o", c_file])
        compile_.append(["gcc", optimize, "-fPIC", "-shared", "-ffp-contract=off", f"-I{include}", "-o",
                         os.path.join(folder, f"suite_cy{suffix}"), c_file])
    _parallel(translate, timeout)
    _parallel(compile_, timeout)


def _parallel(jobs, timeout):
    with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        for future in [pool.submit(_run, job, timeout) for job in jobs]:
            future.result()
