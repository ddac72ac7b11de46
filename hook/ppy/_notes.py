"""Notes and warnings ppy itself prints, on stderr.

Under a launcher every rank prints its own, so each line carries the rank when
one is set. PPY_QUIET=1 silences them all.

Imports nothing from ppy, so that any module of the package may use it.
"""

import os
import sys


def _prefix():
    rank = os.environ.get("RANK")
    return f"ppy[rank {rank}]" if rank is not None else "ppy"


def quiet():
    return os.environ.get("PPY_QUIET") == "1"


def note(message):
    if not quiet():
        print(f"{_prefix()}: {message}", file=sys.stderr)


def warn(message):
    if not quiet():
        print(f"{_prefix()}: warning: {message}", file=sys.stderr)


def block(text):
    """Prints pre-formatted diagnostics (already `file:line:col: ...`)."""
    if not quiet() and text:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
