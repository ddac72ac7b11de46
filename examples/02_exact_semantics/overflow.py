"""Where ppy refuses rather than differ: 21! needs more than 64 bits.

    python overflow.py                     # under ppy: OverflowError
    PPY_IMPORT=python python overflow.py   # plain Python: the big integer

This is the one place the two paths print different things, so it lives in
its own script (the checked output of semantics.ppy stays identical).
"""

import ppy  # noqa: F401  (first: .ppy modules import natively)

import semantics

for n in (20, 21):
    try:
        print(f"factorial({n}) = {semantics.factorial(n)}")
    except OverflowError as error:
        print(f"factorial({n}) -> OverflowError: {error}")
