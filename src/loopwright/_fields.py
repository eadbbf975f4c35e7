"""Fields a library fills in after a pydantic model is made, set without growing the
instance's fields-set table."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["fill_in"]


def fill_in(record: BaseModel, /, **values: Any) -> None:
    """Set fields of ``record`` (a pydantic model) that loopwright fills in after it was
    made (a call's time, a pending event's outcome). The fields are plain ones: not
    validated on assignment, not frozen, as on every model this is used with.

    pydantic's ``setattr`` also adds each name to the instance's fields-set table
    (``model_fields_set``), a set whose table moves from its 8 inline slots (216 bytes)
    to one of its own (728 bytes) at its fifth name: for the records a live run keeps
    per step (its model outputs, its model and tool events) that was most of what filling
    them in cost (bench/README.md, "Ten thousand agents"). What loopwright fills in was
    not set by whoever made the model, so it is written to the instance's ``__dict__``
    (as ``model_copy`` writes an update), and ``model_fields_set`` keeps listing what
    was given when it was made.

    Raises:
        AttributeError: A name is not a field of the model.
    """
    data = record.__dict__  # (it holds every field, and nothing else)
    for name, value in values.items():
        if name not in data:
            raise AttributeError(f"{type(record).__name__} has no field {name!r}")
        data[name] = value
