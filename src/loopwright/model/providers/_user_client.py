"""A user's own HTTP client (``http_client=``), with the protections of ours.

The SDK providers' own HTTP client follows no redirect and reads a reply up to a bound
(:mod:`._sdk_clients`, :mod:`._http_bounds`). A client the user gives (an
``httpx.AsyncClient``, for a proxy, certificates, a transport of their own) would have
neither: a redirect to another host carries the headers and the conversation there, and
a reply is read whole, however large. Changing the user's client (its
``follow_redirects``, its event hooks) would change it for their other uses too, so the
SDK gets :func:`guarded`, a thin client of the same ``httpx`` that builds and sends each
request with the user's client (its transport and pool, proxies, default headers,
cookies, auth, event hooks and timeout all apply, as if it sent the request itself), but
with ``follow_redirects=False`` for that request, and the reply's body read through the
same bound as ours. Closing it (when the model is closed) closes the user's client, as
the SDK itself does with a client it is given.
"""

from __future__ import annotations

import sys
from typing import Any

from ._http_bounds import bound_response

__all__ = ["guarded"]


def _guard_class(module: Any) -> type:
    cached = getattr(module, "_loopwright_guarded_client", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]

    class GuardedClient(module.AsyncClient):  # type: ignore[misc]
        """Sends with ``inner``, following no redirect, reading up to ``limit`` bytes."""

        def __init__(self, inner: Any, limit: int) -> None:
            # (its own transport is never used: every request goes through ``inner``)
            super().__init__(
                transport=module.AsyncBaseTransport(), timeout=inner.timeout, trust_env=False
            )
            self._inner, self._limit = inner, limit

        def build_request(self, *args: Any, **kwargs: Any) -> Any:
            return self._inner.build_request(*args, **kwargs)

        async def send(self, request: Any, *, stream: bool = False, **kwargs: Any) -> Any:
            kwargs["follow_redirects"] = False
            response = await self._inner.send(request, stream=True, **kwargs)
            try:
                bound_response(response, self._limit)
                if not stream:
                    await response.aread()
            except BaseException:
                await response.aclose()
                raise
            return response

        @property
        def is_closed(self) -> bool:
            return bool(self._inner.is_closed)

        async def aclose(self) -> None:
            await self._inner.aclose()

    module._loopwright_guarded_client = GuardedClient
    return GuardedClient


def guarded(client: Any, limit: int) -> Any:
    """``client`` (the user's ``httpx.AsyncClient``, or the ``httpx2`` one) as the SDK
    gets it: see the module documentation. Anything else is returned as it is (the SDK
    refuses what is no async client, with its own message)."""
    for cls in type(client).__mro__:  # (a subclass, e.g. the SDK's DefaultAsyncHttpxClient)
        module = sys.modules.get(cls.__module__.split(".")[0])
        if cls.__name__ == "AsyncClient" and getattr(module, "AsyncClient", None) is cls:
            return _guard_class(module)(client, limit)
    return client
