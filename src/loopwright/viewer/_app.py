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
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..log import (
    RunLog,
    RunStoreError,
    event_at,
    event_bounds,
    event_page,
    last_messages,
    load_run,
    runs_page,
    samples_page,
    store_at,
    usage_totals,
)
from ..transcripts import ModelEvent
from ._bounds import Cut, finite
from ._data import (
    Depths,
    damaged_event,
    event_json,
    message_json,
    pending_json,
    run_json,
    sample_json,
)

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["STATIC", "create_app"]

STATIC = Path(__file__).parent / "static"

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_PAGE = 100
_MAX_REFRESH = 100
_MAX_INPUT = 200  # a model call's input messages sent at a time
_MAX_CACHED = 4096  # runs' totals kept
_MAX_INT = 1 << 62  # (SQLite's integers are 64-bit)
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
"""The names a request without a token may give in its Host header: this machine's own
(any other is a page elsewhere whose DNS name was pointed at 127.0.0.1)."""


class _BadRequest(Exception):
    pass


def _int(request: Request, name: str, default: int | None = None) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise _BadRequest(f"{name} must be a whole number") from None
    if not -_MAX_INT <= number <= _MAX_INT:
        raise _BadRequest(f"{name} is out of range")
    return number


def create_app(db: str | os.PathLike[str], *, token: str | None = None) -> Starlette:
    """The viewer for the run store ``db``. With ``token``, every request must carry it
    (``?token=``, which the page then keeps as a cookie, or an ``Authorization: Bearer``
    header); without, every request must name this machine (``LOOPBACK_NAMES``) as its
    ``Host``: another site's page cannot read the runs by pointing its name at 127.0.0.1
    (DNS rebinding)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    path = Path(db)
    stats_cache: dict[tuple[str, str, str, str | None, int], dict[str, int]] = {}
    cache_lock = threading.Lock()

    @contextlib.contextmanager
    def opened(run_id: str) -> Iterator[RunLog]:
        # an exact id only: a prefix or a path would let a request pick another run or file
        with load_run(_exact(run_id), path) as log:
            if log.run_id != run_id:
                raise RunStoreError(f"no run {run_id!r}")
            yield log

    def api(fn: Callable[[Request], Any], download: str = "") -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            headers = {"Cache-Control": "no-store"}
            if download:  # (the whole of an item a page cut: a file, never shown in it)
                headers["Content-Disposition"] = f'attachment; filename="{download}.json"'
            try:
                return Response(_dumps(fn(request)), media_type="application/json", headers=headers)
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
            if data["status"] == "waiting":  # the calls it waits for (deferred approval)
                data["pending"] = pending_json(path, log.run_id)
            return data

    def stats(request: Request) -> Any:
        run_id, sample = request.path_params["run"], request.query_params.get("sample", "")
        with opened(run_id) as log:
            info = log.info
            # a run's totals change while it runs, and again if it is resumed (its row then
            # says so: running, then another end and another count of resumes)
            key = (run_id, sample, info.status, _time(info.finished), info.resumes)
            hit = stats_cache.get(key)
            if hit is not None:
                return hit
            if sample and not samples_page(log, limit=1, key=sample):
                raise RunStoreError(f"run {log.run_id!r} has no sample {sample!r}")
            steps, tokens = usage_totals(log, sample or None)
            result = {"model_calls": steps, "tokens": tokens}
            if info.status != "running":  # a run that ended changes no more (till resumed)
                with cache_lock:  # (handlers run in a thread pool)
                    while len(stats_cache) >= _MAX_CACHED:
                        del stats_cache[next(iter(stats_cache))]
                    stats_cache[key] = result
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
                row = event_at(log, around, damaged_event)
                if row is None:
                    raise RunStoreError(f"run {log.run_id!r} has no event {around!r}")
                sample = row.sample
                bounds = event_bounds(log, sample)
                rows = event_page(log, sample, before=row.seq, limit=5, damaged=damaged_event)
                rows += event_page(
                    log, sample, after=row.seq - 1, limit=limit - len(rows), damaged=damaged_event
                )
            else:
                bounds = event_bounds(log, sample)
                rows = event_page(
                    log, sample, after=after, before=before, limit=limit, damaged=damaged_event
                )
            depths = Depths(log)
            page = [event_json(log, r, depths) for r in rows]
            refreshed = []
            for id in (q.get("refresh") or "").split(",")[:_MAX_REFRESH]:
                found = event_at(log, id, damaged_event) if id else None
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
            ids = log.model_input_ids(row.event)
            offset = max(0, _int(request, "offset", 0) or 0)
            page = ids[offset : offset + _MAX_INPUT]  # (a page of them: a call may have many)
            return {
                "messages": [message_json(log.message(i)) for i in page],
                "offset": offset,
                "total": len(ids),
            }

    def whole_event(request: Request) -> Any:
        with opened(request.path_params["run"]) as log:
            row = event_at(log, request.path_params["event"])
            if row is None:
                raise RunStoreError(f"run {log.run_id!r} has no event there")
            return event_json(log, row, Depths(log), whole=True)

    def whole_message(request: Request) -> Any:
        with opened(request.path_params["run"]) as log:
            return message_json(log.message(request.path_params["message"]), whole=True)

    def conversation(request: Request) -> Any:
        sample = request.query_params.get("sample", "")
        offset = max(0, _int(request, "offset", 0) or 0)
        limit = max(1, min(_int(request, "limit", 200) or 200, 500))
        with opened(request.path_params["run"]) as log:
            ids = log.info.message_ids
            if sample:
                found = samples_page(log, limit=1, key=sample)
                if not found:
                    raise RunStoreError(f"run {log.run_id!r} has no sample {sample!r}")
                ids = found[0].message_ids
            if ids is not None:  # the messages it ended with: read only this page's
                total, page = len(ids), [log.message(i) for i in ids[offset : offset + limit]]
            else:  # (a run still going: its last model call's, read from the stream's end)
                messages = last_messages(log, sample)
                total, page = len(messages), messages[offset : offset + limit]
            return {
                "messages": [message_json(m) for m in page],
                "offset": offset,
                "total": total,
            }

    def store(request: Request) -> Any:
        sample = request.query_params.get("sample", "")
        with opened(request.path_params["run"]) as log:
            cut = Cut()
            data = cut(store_at(log, sample, _int(request, "upto")))
            return {"store": data, "cut": cut.cut}

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    class Guard(BaseHTTPMiddleware):
        async def dispatch(
            self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            if token is None and request.url.hostname not in LOOPBACK_NAMES:
                return PlainTextResponse("this viewer answers to 127.0.0.1 only", 403)
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
            response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
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
        Route("/api/runs/{run}/events/{event}/whole", api(whole_event, "event")),
        Route("/api/runs/{run}/messages/{message}/whole", api(whole_message, "message")),
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
        return json.dumps(finite(content), ensure_ascii=True, allow_nan=False).encode()


def _time(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _exact(run_id: str) -> str:
    """A run id as a request gives it, refused unless it can only be an id (``load_run``
    reads a path or a ``.json`` file as an export)."""
    if not run_id or len(run_id) > 200 or "/" in run_id or "\\" in run_id or "." in run_id:
        raise RunStoreError(f"no run {run_id!r}")
    return run_id
