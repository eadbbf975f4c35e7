"""Importing a user's Python file by path (task files, ``--tool file.py:attr``)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["import_file"]


def import_file(path: Path, prefix: str) -> ModuleType:
    """Import the file at ``path`` as a module named ``prefix`` + a hash of the path.

    The file's folder is on ``sys.path`` while it runs, so it may import its neighbours;
    a file that fails leaves no half-made module behind.

    Raises:
        ImportError: ``path`` cannot be imported as Python.
        Exception: Whatever the file raises while it runs.
    """
    name = f"{prefix}{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {str(path)!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    return module
