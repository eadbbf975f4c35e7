"""``python -m loopwright.cli``."""

import sys

from ._main import main

sys.exit(main())
