"""The viewer's web application: the page, its assets, and a JSON API over one run store.

Every answer comes from a bounded, indexed query (``loopwright.log``'s pages): the server
never holds a whole run. The run store is the one file given to :func:`create_app`; no
request names a file. Handlers are plain functions, run in Starlette's thread pool, each
opening the store read-only for its one request.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import math
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._terminal import as_typed
from ..log import (
    RunLog,
    RunStoreError,
    event_at,
    event_bounds,
    event_page,
    load_run,
    runs_page,
    samples_page,
    store_at,
    usage_totals,
)
from ..transcripts import ModelEvent
from ._data import Depths, event_json, message_json, pending_json, run_json, sample_json

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["STATIC", "create_app"]

STATIC = Path(__file__).parent / "static"

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_PAGE = 100
_MAX_REFRESH = 100


class _BadRequest(Exception):
    pass


def _int(request: Request, name: str, default: int | None = None) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise _BadRequest(f"{name} must be a whole number") from None


def create_app(db: str | os.PathLike[str], *, token: str | None = None) -> Starlette:
    """The viewer for the run store ``db``. With ``token``, every request must carry it
    (``?token=``, which the page then keeps as a cookie, or an ``Authorization: Bearer``
    header)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    path = Path(db)
    stats_cache: dict[tuple[str, str], dict[str, int]] = {}

    @contextlib.contextmanager
    def opened(run_id: str) -> Iterator[RunLog]:
        # an exact id only: a prefix or a path would let a request pick another run or file
        with load_run(_exact(run_id), path) as log:
            if log.run_id != run_id:
                raise RunStoreError(f"no run {run_id!r}")
            yield log

    def api(fn: Callable[[Request], Any]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return Response(
                    _dumps(fn(request)),
                    media_type="application/json",
                    headers={"Cache-Control": "no-store"},
                )
            except _BadRequest as ex:
                return JSONResponse({"error": str(ex)}, status_code=400)
            except RunStoreError as ex:
                text = str(ex)
                missing = text.startswith("no run ") and not text.startswith("no run store")
                status = 404 if missing or " has no " in text else 500
                return JSONResponse({"error": str(ex)}, status_code=status)

        return endpoint

    def runs(request: Request) -> Any:
        q = request.query_params
        offset = _int(request, "offset", 0) or 0
        limit = min(_int(request, "limit", 50) or 50, 200)
        page = runs_page(
            path,
            offset=offset,
            limit=limit + 1,
            status=q.get("status") or None,
            model=q.get("model") or None,
            name=q.get("name") or None,
            search=q.get("q") or None,
        )
        return {
            "runs": [run_json(r) for r in page[:limit]],
            "offset": offset,
            "more": len(page) > limit,
        }

    def run(request: Request) -> Any:
        sample = request.query_params.get("sample", "")
        with opened(request.path_params["run"]) as log:
            data = run_json(log.info)
            if sample:
                found = samples_page(log, limit=1, key=sample)
                if not found:
                    raise RunStoreError(f"run {log.run_id!r} has no sample {sample!r}")
                data["sample"] = sample_json(found[0])
            bounds = event_bounds(log, sample)
            data["first_seq"], data["last_seq"] = bounds if bounds else (None, None)
            if data["status"] == "waiting" and log.info.samples:
                # an eval's samples wait: a resume of the eval goes on with them (no
                # decision is kept for a sample: `runs approve` refuses an eval's run)
                data["resume"] = f"loopwright runs resume {as_typed(log.run_id)}"
            elif data["status"] == "waiting":  # the calls it waits for (deferred approval)
                data["pending"] = pending_json(path, log.run_id)
            return data

    def stats(request: Request) -> Any:
        run_id, sample = request.path_params["run"], request.query_params.get("sample", "")
        hit = stats_cache.get((run_id, sample))
        if hit is not None:
            return hit
        with opened(run_id) as log:
            steps, tokens = usage_totals(log, sample or None)
            result = {"model_calls": steps, "tokens": tokens}
            if log.info.status not in ("running",):  # a finished run no longer changes
                stats_cache[(run_id, sample)] = result
            return result

    def samples(request: Request) -> Any:
        q = request.query_params
        offset = _int(request, "offset", 0) or 0
        limit = min(_int(request, "limit", 50) or 50, 200)
        score = q.get("score")
        try:
            value = float(score) if score else None
        except ValueError:
            raise _BadRequest("score must be a number") from None
        with opened(request.path_params["run"]) as log:
            page = samples_page(
                log, offset=offset, limit=limit + 1, status=q.get("status") or None, score=value
            )
            return {
                "samples": [sample_json(s) for s in page[:limit]],
                "offset": offset,
                "more": len(page) > limit,
            }

    def events(request: Request) -> Any:
        q = request.query_params
        sample = q.get("sample", "")
        limit = min(_int(request, "limit", _PAGE) or _PAGE, 500)
        with opened(request.path_params["run"]) as log:
            # the status and the bounds are read before the page: a run going may write
            # meanwhile, and the page is then at least as new as they are
            status = log.info.status
            around = q.get("event")
            after, before = _int(request, "after"), _int(request, "before")
            if around:  # the page that holds this event, from a few events before it
                row = event_at(log, around)
                if row is None:
                    raise RunStoreError(f"run {log.run_id!r} has no event {around!r}")
                sample = row.sample
                bounds = event_bounds(log, sample)
                rows = event_page(log, sample, before=row.seq, limit=5)
                rows += event_page(log, sample, after=row.seq - 1, limit=limit - len(rows))
            else:
                bounds = event_bounds(log, sample)
                rows = event_page(log, sample, after=after, before=before, limit=limit)
            depths = Depths(log)
            page = [event_json(log, r, depths) for r in rows]
            refreshed = []
            for id in (q.get("refresh") or "").split(",")[:_MAX_REFRESH]:
                found = event_at(log, id) if id else None
                if found is not None:
                    refreshed.append(event_json(log, found, depths))
            return {
                "events": page,
                "refreshed": refreshed,
                "sample": sample,
                "first_seq": bounds[0] if bounds else None,
                "last_seq": bounds[1] if bounds else None,
                "status": status,
            }

    def model_input(request: Request) -> Any:
        with opened(request.path_params["run"]) as log:
            row = event_at(log, request.path_params["event"])
            if row is None or not isinstance(row.event, ModelEvent):
                raise RunStoreError(f"run {log.run_id!r} has no model event there")
            return {"messages": [message_json(m) for m in log.model_input(row.event)]}

    def conversation(request: Request) -> Any:
        sample = request.query_params.get("sample", "")
        offset = _int(request, "offset", 0) or 0
        limit = min(_int(request, "limit", 200) or 200, 500)
        with opened(request.path_params["run"]) as log:
            messages = log.messages(sample or None)
            return {
                "messages": [message_json(m) for m in messages[offset : offset + limit]],
                "offset": offset,
                "total": len(messages),
            }

    def store(request: Request) -> Any:
        sample = request.query_params.get("sample", "")
        with opened(request.path_params["run"]) as log:
            return {"store": store_at(log, sample, _int(request, "upto"))}

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    class Guard(BaseHTTPMiddleware):
        async def dispatch(
            self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            given = request.query_params.get("token") or request.cookies.get("lw_token")
            auth = request.headers.get("authorization", "")
            if auth.startswith("Bearer "):
                given = auth[7:]
            if token is not None and not hmac.compare_digest(
                (given or "").encode(), token.encode()
            ):
                return PlainTextResponse("a token is needed: open the URL printed", 401)
            response = await call_next(request)
            response.headers["Content-Security-Policy"] = _CSP
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["Referrer-Policy"] = "no-referrer"
            if token is not None and request.query_params.get("token"):
                response.set_cookie("lw_token", token, httponly=True, samesite="strict")
            return response

    routes = [
        Route("/", index),
        Route("/api/runs", api(runs)),
        Route("/api/runs/{run}", api(run)),
        Route("/api/runs/{run}/stats", api(stats)),
        Route("/api/runs/{run}/samples", api(samples)),
        Route("/api/runs/{run}/events", api(events)),
        Route("/api/runs/{run}/events/{event}/input", api(model_input)),
        Route("/api/runs/{run}/conversation", api(conversation)),
        Route("/api/runs/{run}/store", api(store)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(Guard)])
    app.state.db = path
    return app


def _dumps(content: Any) -> bytes:
    """JSON the page's ``JSON.parse`` reads: ASCII (a lone surrogate a run holds becomes
    an escape, not an encoding error), with ``NaN`` and infinities (which a run store may
    hold; JSON has none) as ``null``."""
    try:
        return json.dumps(content, ensure_ascii=True, allow_nan=False).encode()
    except ValueError:
        return json.dumps(_finite(content), ensure_ascii=True, allow_nan=False).encode()


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _exact(run_id: str) -> str:
    """A run id as a request gives it, refused unless it can only be an id (``load_run``
    reads a path or a ``.json`` file as an export)."""
    if not run_id or len(run_id) > 200 or "/" in run_id or "\\" in run_id or "." in run_id:
        raise RunStoreError(f"no run {run_id!r}")
    return run_id
