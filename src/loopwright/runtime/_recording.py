"""``recording()``: open a run's scope from any loop, its arguments checked when given."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .._errors import ConfigurationError
from ..agents._checks import check_count, check_db, check_flag, check_text
from ..model import Model
from ..transcripts import EventSubscriber
from ._scope import RunScope

__all__ = ["recording"]


def recording(
    *,
    name: str | None = None,
    model: str | Model | None = None,
    input: Any = None,
    db: str | os.PathLike[str] | Literal[False] | None = None,
    metadata: Mapping[str, Any] | None = None,
    log_level: int = logging.INFO,
    subscribers: Sequence[EventSubscriber] = (),
    new_run: bool = False,
    record_calls: bool = True,
) -> RunScope:
    """Open a run: ``async with recording(...) as rec:``.

    Within the block the run's new :class:`~loopwright.Store` and
    :class:`~loopwright.Transcript` are the current ones, model and tool calls are
    recorded, and every event and message streams to the run store by a background
    thread (batched transactions; the event loop never waits for the disk). Leaving the
    block records how the run ended and waits for the writes to finish.

    Inside another recording (a run within a run, e.g. an agent used as a tool) no new
    run is opened unless ``new_run=True``: the block is a span of the outer run and shares
    its store.

    Args:
        name: A name for the run (e.g. the agent's).
        model: The model (name) the run uses, for listings.
        input: What the run was given (JSON-serialisable, e.g. the prompt).
        db: The run store file; ``None``: ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``;
            ``False``: keep the run in memory only.
        metadata: Anything JSON-serialisable to keep with the run.
        log_level: Python log records at or above this level are recorded.
        subscribers: Also called with every event (see ``Transcript.subscribe``).
        new_run: Open a new run even inside another recording.
        record_calls: ``False``: record no model calls, tool calls or store changes in
            the transcript (see ``Transcript``); only with ``db=False``. A recording
            inside another records as the outer one does.

    If the run store fails while the block runs (the disk is full, the file is taken
    away), the run is stopped at once, at its next ``await``: the task that entered the
    block is cancelled (as a time limit does) and leaving the block raises
    :class:`RunStoreError`. What was committed before stays readable, and the run's end
    is recorded if the file still takes it.

    Raises:
        RunStoreError: (on entering) the run store cannot be written; (on leaving) it
            failed while the run was going.
        ConfigurationError: (on entering) ``record_calls=False`` with a run store.
    """
    _check_recording(name, model, db, metadata, log_level, subscribers, new_run, record_calls)
    return RunScope(
        name=name,
        model=model,
        input=input,
        db=db,
        metadata=metadata,
        log_level=log_level,
        subscribers=subscribers,
        new_run=new_run,
        record_calls=record_calls,
    )


def _check_recording(
    name: object,
    model: object,
    db: object,
    metadata: object,
    log_level: object,
    subscribers: object,
    new_run: object,
    record_calls: object,
) -> None:
    """Refuse what ``recording()`` cannot use, when it is given."""
    who = "recording"
    check_text(name, "name", who, optional=True)
    if model is not None and not isinstance(model, str | Model):
        raise ConfigurationError(f"{who}: model must be a name, a Model or None, got {model!r}")
    check_db(db, who)
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ConfigurationError(f"{who}: metadata must be a dict or None, got {metadata!r}")
    check_count(log_level, "log_level", who)
    if isinstance(subscribers, str | bytes) or not isinstance(subscribers, Sequence):
        raise ConfigurationError(f"{who}: subscribers must be a list of functions")
    for subscriber in subscribers:
        if not callable(subscriber):
            raise ConfigurationError(
                f"{who}: every subscriber must be a function called with each event, "
                f"got {subscriber!r}"
            )
    check_flag(new_run, "new_run", who)
    check_flag(record_calls, "record_calls", who)
