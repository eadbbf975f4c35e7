"""``python -m loopwright``: the ``loopwright`` command."""

import sys

from .cli import main

sys.exit(main())
