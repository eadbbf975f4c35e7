"""One SDK client per event loop, shared by the SDK-based providers."""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from ..._errors import ConfigurationError
from ._http_bounds import bound_response
from ._user_client import guarded

__all__ = ["MAX_RESPONSE_BYTES", "PerLoopClients"]

MAX_RESPONSE_BYTES = 64 * 2**20
"""The most bytes of a server's reply read, decoded: a body, or one event of a stream
(:mod:`._http_bounds`). A reply of 1,000,000 characters (the default
``max_output_chars``) is well below it, even with every character escaped."""


def _check_client_args(make: Callable[..., Any], client_args: Mapping[str, Any]) -> None:
    """Refuse arguments the SDK client does not take when the model is made (else the
    first call fails, with the SDK's own message)."""
    try:
        params = inspect.signature(make).parameters
    except (TypeError, ValueError):  # no signature to check against
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(client_args) - set(params))
    if unknown:
        known = ", ".join(sorted(k for k in params if not k.startswith("_")))
        raise ConfigurationError(
            f"{getattr(make, '__name__', 'the SDK client')} takes no argument "
            f"{', '.join(map(repr, unknown))}; it takes: {known}"
        )


class _Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class PerLoopClients(Generic[C]):
    """SDK clients by event loop: a client's connection pool belongs to the loop it was
    made on, so each loop (e.g. each ``run_sync``) gets its own.

    ``make(**kwargs)`` builds a client (the SDK class); every client gets ``max_retries=0``
    (``Model`` retries, with its own policy and accounting) and a plain HTTP client from
    ``http_client()``: the SDK's default one closes itself at garbage collection by
    scheduling a task on whatever loop runs then, which fails noisily once a loop ended.
    That HTTP client follows no redirect (the SDKs' follows them): httpx drops only the
    ``Authorization`` header on the way to another host, so the extra headers (an
    ``api-key`` header, say) and the conversation would go with it. A redirect is an
    HTTP error that names where it points (:func:`._http_errors.status_error`). What the
    server sends is read up to :data:`MAX_RESPONSE_BYTES` (:mod:`._http_bounds`). A
    client the user gives (``http_client=``) gets the same two protections without
    being changed itself (:mod:`._user_client`).
    """

    def __init__(
        self,
        make: Callable[..., C],
        http_client: Callable[..., Any],
        *,
        api_key: str,
        base_url: str,
        headers: Mapping[str, str] | None,
        client_args: Mapping[str, Any],
    ) -> None:
        self._make, self._http_client = make, http_client
        _check_client_args(make, client_args)
        self._kwargs = dict(client_args)
        self._kwargs.update(
            api_key=api_key, base_url=base_url, max_retries=0, default_headers=headers
        )
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, C] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> C:
        """The running loop's client (made on first use)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            kwargs = dict(self._kwargs)
            limit = MAX_RESPONSE_BYTES
            if "http_client" in kwargs:  # the user's: sent through, with our protections
                kwargs["http_client"] = guarded(kwargs["http_client"], limit)
            else:

                async def bound(response: Any) -> None:
                    bound_response(response, limit)

                kwargs["http_client"] = self._http_client(
                    follow_redirects=False, event_hooks={"response": [bound]}
                )
            client = self._clients[loop] = self._make(**kwargs)
        return client

    async def aclose(self) -> None:
        """Close the running loop's client; clients of other loops are just dropped."""
        clients = list(self._clients.items())
        self._clients.clear()
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            return
        for loop, client in clients:
            if loop is current:
                await client.close()
