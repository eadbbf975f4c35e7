"""Sandbox backends by name: built-ins, :func:`register_sandbox` and entry points."""

from __future__ import annotations

import sys
from typing import Any

from .._errors import ConfigurationError
from .._registry import LazyRegistry
from ._environment import SandboxEnvironment
from ._types import SandboxUnavailableError

__all__ = [
    "SANDBOX_ENTRY_POINT_GROUP",
    "default_sandbox_backend",
    "register_sandbox",
    "sandbox_backend",
    "sandbox_backends",
]

SANDBOX_ENTRY_POINT_GROUP = "loopwright.sandboxes"
"""Third-party packages register backends under this entry point group: the entry
point's name is the backend name, its object a :class:`SandboxEnvironment` subclass.
For example, in the backend package's ``pyproject.toml``::

    [project.entry-points."loopwright.sandboxes"]
    docker = "loopwright_docker:DockerSandbox"
"""

_BUILTIN: dict[str, str] = {
    "bwrap": "loopwright.sandboxes._bwrap:BwrapSandbox",
    "local": "loopwright.sandboxes._local:LocalSandbox",
}
_backends: LazyRegistry[type[SandboxEnvironment]] = LazyRegistry(
    "sandbox backend",
    SANDBOX_ENTRY_POINT_GROUP,
    _BUILTIN,
    lambda b: isinstance(b, type) and issubclass(b, SandboxEnvironment),
    "a SandboxEnvironment subclass",
)


def register_sandbox(name: str, backend: type[SandboxEnvironment] | str | None = None) -> Any:
    """Register a sandbox backend under ``name``.

    ``backend`` is a :class:`SandboxEnvironment` subclass, or its ``"module:Class"``
    path to import lazily. Usable as a class decorator::

        @lw.register_sandbox("docker")
        class DockerSandbox(lw.SandboxEnvironment): ...
    """
    if not name or not isinstance(name, str):
        raise ConfigurationError(f"sandbox backend name must be a non-empty string: {name!r}")

    def add(b: type[SandboxEnvironment] | str) -> type[SandboxEnvironment] | str:
        _backends.add(name, b)
        return b

    return add if backend is None else add(backend)


def sandbox_backends() -> list[str]:
    """The names of every registered sandbox backend, entry points included."""
    return _backends.names()


def default_sandbox_backend() -> str:
    """``"bwrap"`` on Linux. Elsewhere there is no isolating default: raises
    :class:`SandboxUnavailableError` asking for an explicit choice."""
    if sys.platform.startswith("linux"):
        return "bwrap"
    raise SandboxUnavailableError(
        f"no isolating sandbox backend for {sys.platform}; name one explicitly, e.g. "
        "use_sandbox('local') for trusted code (unisolated) or a third-party backend "
        f"(installed: {', '.join(sandbox_backends())})"
    )


def sandbox_backend(name: str) -> type[SandboxEnvironment]:
    """The backend class registered as ``name``.

    Raises:
        ConfigurationError: No backend of that name is registered.
    """
    backend = _backends.get(name)
    if backend is None:
        raise ConfigurationError(
            f"unknown sandbox backend {name!r}; known: {', '.join(sandbox_backends())}. "
            "Third-party backends register under the 'loopwright.sandboxes' entry point group"
        )
    return backend
