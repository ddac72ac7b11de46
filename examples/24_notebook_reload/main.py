"""A notebook session, as cells: write a kernel, import it, edit it, reload it.

    python main.py
    PPY_IMPORT=python python main.py

The kernel file lives in a scratch folder (a notebook would keep it beside
itself). After each edit, `importlib.reload(features)` rebuilds the module
from its new source and rebinds the names in the module, as Python does for a
.py file; a function captured before the reload keeps its old code, also as in
Python. Names that the new source no longer defines stay in the module, as
they do after a reload in Python.
"""

import array
import importlib
import os
import shutil
import sys
import tempfile

import ppy  # noqa: F401  (cell 1: first, as in any program)

VERSION_1 = '''
from ppy import Buffer


def score(xs: Buffer[float]) -> float:
    s: float = 0.0
    for x in xs:
        s += x
    return s
'''

VERSION_2 = '''
from ppy import Buffer


def score(xs: Buffer[float]) -> float:
    s: float = 0.0
    for x in xs:
        s += x * x
    return s


def count_above(xs: Buffer[float], limit: float) -> int:
    n: int = 0
    for x in xs:
        if x > limit:
            n += 1
    return n
'''

folder = tempfile.mkdtemp(prefix="ppy-notebook-")
path = os.path.join(folder, "features.ppy")
sys.path.insert(0, folder)


def write(source):
    with open(path, "w") as f:
        f.write(source)


data = array.array("d", [0.5 * i for i in range(10)])

# Cell 2: write the first version and import it.
write(VERSION_1)
import features  # noqa: E402

old_score = features.score
print("v1 score:", features.score(data), "| has count_above:", hasattr(features, "count_above"))

# Cell 3: edit the file, reload, call again.
write(VERSION_2)
features = importlib.reload(features)
print("v2 score:", features.score(data), "| count_above(2.0):", features.count_above(data, 2.0))
print("captured before the reload, still v1:", old_score(data))

# Cell 4: back to the first version; reload again.
write(VERSION_1)
importlib.reload(features)
print("v1 again:", features.score(data), "| count_above left over from v2:", hasattr(features, "count_above"))

shutil.rmtree(folder)  # the scratch folder, with its .ppy-cache
