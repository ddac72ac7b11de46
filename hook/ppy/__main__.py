"""`python -m ppy` is the `ppy` command."""

import sys

from ppy.cli import main

sys.exit(main())
