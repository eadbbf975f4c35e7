"""The ``replay`` provider's factory: a recorded run's model outputs, replayed.

The registry names ``loopwright.log._replay:replay_model`` for ``replay``: reading the
outputs a run recorded is the run store's job, and ``log/`` may import ``model/`` (it is
below), so the replaying :class:`~loopwright.model.providers.replay.ReplayModelAPI` stays
in ``model/`` without ``model/`` importing ``log/``.
"""

from __future__ import annotations

import os

from .._errors import ConfigurationError
from ..model import ModelOutput
from ..model.providers.replay import ReplayModelAPI
from ._reader import load_run

__all__ = ["recorded_outputs", "replay_model"]


def recorded_outputs(
    run: str | os.PathLike[str],
    db: str | os.PathLike[str] | None = None,
    sample: str | None = None,
) -> list[ModelOutput]:
    """The model outputs ``run`` recorded, in the order the calls began.

    Args:
        run: An id (or unique prefix) in the run store, or the path of a JSON export.
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).
        sample: This sample's outputs (a sample key or id) instead of the run's own.
    """
    with load_run(run, db) as log:
        return log.model_outputs(sample)


def replay_model(
    model_name: str = "",
    run: str | os.PathLike[str] | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    sample: str | None = None,
) -> ReplayModelAPI:
    """The ``replay`` provider: ``get_model("replay", run=..., db=..., sample=...)`` or
    ``get_model("replay/RUN_ID", db=...)``. The run is read on the first model call.

    Args:
        model_name: The run id, if ``run`` is not given.
        run: The run: an id (or unique prefix) in the run store, or the path of a JSON
            export.
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).
        sample: Replay this sample's model calls (a sample key or id) instead of the
            run's own.
    """
    source = run if run is not None else (model_name or None)
    if source is None:
        raise ConfigurationError(
            "replay model: say which run to replay, e.g. get_model('replay', run=RUN_ID) "
            "or get_model('replay', run='run.json')"
        )
    return ReplayModelAPI(str(source), lambda: recorded_outputs(source, db, sample))
