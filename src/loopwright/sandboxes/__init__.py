"""Sandboxes: run untrusted commands where they cannot hurt the host.

``use_sandbox()`` starts a fresh sandbox for a run (``bwrap`` on Linux: bubblewrap
namespaces, no network, a private ``/workspace``), makes it what :func:`sandbox`
returns in that context, and always cleans it up. Every command runs under
:class:`SandboxLimits`. Backends: ``bwrap``, ``local`` (unisolated, explicit only), and
third-party ones registered under the ``loopwright.sandboxes`` entry point group.
"""

from ._context import max_sandboxes, sandbox, set_max_sandboxes, use_sandbox
from ._environment import SandboxEnvironment
from ._local import UnisolatedSandboxWarning
from ._registry import (
    SANDBOX_ENTRY_POINT_GROUP,
    default_sandbox_backend,
    register_sandbox,
    sandbox_backend,
    sandbox_backends,
)
from ._types import (
    ExecResult,
    ExecTimeoutError,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
)

__all__ = [
    "SANDBOX_ENTRY_POINT_GROUP",
    "ExecResult",
    "ExecTimeoutError",
    "SandboxEnvironment",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailableError",
    "UnisolatedSandboxWarning",
    "default_sandbox_backend",
    "max_sandboxes",
    "register_sandbox",
    "sandbox",
    "sandbox_backend",
    "sandbox_backends",
    "set_max_sandboxes",
    "use_sandbox",
]
