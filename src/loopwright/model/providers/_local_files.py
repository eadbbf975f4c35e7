"""The local models installed: the embedded model's file and the GGUF files of a folder.

The folder is ``$LOOPWRIGHT_MODELS``, else ``~/.cache/loopwright/models``. A file there
runs as ``local:/its/path.gguf``, or by its bare name (``local:qwen2.5-1.5b.gguf``).
Nothing here loads a model or imports llama.cpp.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..._errors import MissingDependencyError
from ._llama_engine import DEFAULT_MODEL_FILE, DEFAULT_MODEL_PACKAGE, default_model_path

__all__ = [
    "MAX_LISTED",
    "MODELS_ENV",
    "LocalModelFile",
    "find_in_folder",
    "installed",
    "models_dir",
]

MODELS_ENV = "LOOPWRIGHT_MODELS"
"""The environment variable naming the folder of GGUF files."""
MAX_LISTED = 200
"""At most this many files of the folder are listed (by name)."""


@dataclass(frozen=True, slots=True)
class LocalModelFile:
    """One installed local model."""

    model: str
    """The name to pass to ``get_model`` / ``--model``."""
    path: str
    size: int
    """Bytes."""
    source: str
    """Where it comes from: the embedded model's package, or the models folder."""


def models_dir() -> Path:
    """The folder searched for GGUF files."""
    named = os.environ.get(MODELS_ENV, "").strip()
    return Path(named).expanduser() if named else Path.home() / ".cache" / "loopwright" / "models"


def find_in_folder(name: str) -> str | None:
    """The path of the models folder's file called ``name`` (a bare file name), or None."""
    if not name or os.sep in name or (os.altsep and os.altsep in name) or name in (".", ".."):
        return None
    path = models_dir() / name
    return str(path) if path.is_file() else None


def installed() -> tuple[list[LocalModelFile], str | None]:
    """The installed local models, and why the embedded one is missing (None if it is not)."""
    found: list[LocalModelFile] = []
    missing = None
    try:
        path = default_model_path()
        found.append(
            LocalModelFile("local", path, os.path.getsize(path), f"{DEFAULT_MODEL_PACKAGE} package")
        )
    except (MissingDependencyError, OSError) as ex:
        missing = f"{DEFAULT_MODEL_FILE} ({DEFAULT_MODEL_PACKAGE}): {ex}"
    folder = models_dir()
    try:
        with os.scandir(folder) as scan:
            entries = sorted(
                (e for e in scan if e.name.lower().endswith(".gguf") and e.is_file()),
                key=lambda e: e.name,
            )
    except OSError:  # no folder, not a folder, not readable: nothing there
        entries = []
    for entry in entries[:MAX_LISTED]:
        with_path = os.path.abspath(entry.path)
        found.append(
            LocalModelFile(
                f"local:{with_path}", with_path, entry.stat().st_size, f"{folder} (${MODELS_ENV})"
            )
        )
    return found, missing
