"""`python -m ppy` is the `ppy` command. Imports `cli` only."""

import sys

from ppy.cli import main

sys.exit(main())
