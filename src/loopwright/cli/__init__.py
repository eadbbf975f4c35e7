"""The ``loopwright`` command: ``run``, ``eval``, ``runs``, ``models``.

Not imported by ``import loopwright`` (it pulls in click); the console script calls
:func:`main`, and ``python -m loopwright`` (or ``python -m loopwright.cli``) works too.
"""

from ._main import cli, main

__all__ = ["cli", "main"]
