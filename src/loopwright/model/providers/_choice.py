"""The embedded model's first choice: which branch of a reply's schema, by its likelihood.

A response schema whose top-level object has a property that is an ``anyOf`` of objects
told apart by a ``const`` string (the json protocol's ``action``: ``{"name": {"const":
"multiply"}, "arguments": ...}``) is a choice among named options. Greedy decoding under
a grammar makes that choice token by token, after whatever the schema puts first (a
thought), and a small model mostly copies the worked example it saw last. Here the
choice is made first, as a whole:

- each option's score is the model's log-likelihood of the reply starting with it
  (``{"action": {"name": "multiply"``), every token of the name counted;
- for the first choice (the task is the one user turn, no tool result yet), calibrated
  against the same conversation with the task replaced by a content-free one (``N/A``):
  the option the task makes likelier than no task does, not the option the prompt
  favours whatever is asked (contextual calibration, Zhao et al. 2021, "Calibrate Before
  Use"). That conversation does not depend on the task, so its scores are computed once
  per prompt and tool set;
- the reply is then generated under the schema with that one branch, so the thought and
  the arguments are still the model's, written knowing the choice.

The model chooses: nothing here reads the question's words. Only the embedded model
does this (``LocalModelAPI(choose_first=...)``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTENT_FREE",
    "MAX_NAME_TOKENS",
    "MAX_OPTIONS",
    "ChoicePoint",
    "choice_point",
    "content_free",
    "pick",
]

CONTENT_FREE = "N/A"
"""The task's text in the calibrating conversation."""
MAX_OPTIONS = 64
"""A choice among more options than this is left to the grammar."""
MAX_NAME_TOKENS = 32
"""So is a choice with a name longer than this many tokens: scoring costs one model
evaluation per token of each name (shared first tokens once)."""


@dataclass(frozen=True, slots=True)
class ChoicePoint:
    """A top-level property of a schema whose value is one of named branches."""

    prop: str
    key: str
    branches: dict[str, Any]
    """Each option's name and the branch schema that has it."""

    @property
    def prefix(self) -> str:
        """The reply's start that the options' names follow."""
        return "{" + json.dumps(self.prop) + ": {" + json.dumps(self.key) + ': "'

    def restrict(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """``schema`` with the choice made: the property is the ``name`` branch only."""
        props = dict(schema["properties"])
        props[self.prop] = self.branches[name]
        return {**schema, "properties": props}


def _const_name(branch: Any, key: str) -> str | None:
    if not isinstance(branch, dict) or branch.get("type", "object") != "object":
        return None
    value = (branch.get("properties") or {}).get(key)
    if not isinstance(value, dict) or not isinstance(value.get("const"), str):
        return None
    required = branch.get("required") or []
    return value["const"] if key in required else None


def choice_point(schema: dict[str, Any] | None) -> ChoicePoint | None:
    """The first top-level property of ``schema`` that is a choice among named branches
    (an ``anyOf`` of objects whose first property is a required string ``const``), or
    None."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    for prop, value in props.items():
        branches = value.get("anyOf") if isinstance(value, dict) else None
        if not isinstance(branches, list) or not 1 < len(branches) <= MAX_OPTIONS:
            continue
        first = branches[0].get("properties") if isinstance(branches[0], dict) else None
        if not isinstance(first, dict) or not first:
            continue
        key = next(iter(first))
        names = [_const_name(b, key) for b in branches]
        if all(n is not None and n.strip() for n in names) and len(set(names)) == len(names):
            return ChoicePoint(prop, key, {n: b for n, b in zip(names, branches, strict=True) if n})
    return None


def content_free(messages: list[dict[str, str]]) -> list[dict[str, str]] | None:
    """``messages`` with the task (their one user turn) replaced by :data:`CONTENT_FREE`,
    or None when there is no user turn or more than one (tool results come back as user
    turns in a text protocol: after one, the choice is not calibrated)."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if len(users) != 1:
        return None
    out = list(messages)
    out[users[0]] = {**messages[users[0]], "content": CONTENT_FREE}
    return out


def pick(scores: dict[str, float], prior: dict[str, float] | None) -> str:
    """The option with the best score, less its prior score when there is one (ties: the
    first offered)."""
    names = list(scores)
    if prior is None:
        return max(names, key=lambda n: scores[n])
    return max(names, key=lambda n: scores[n] - prior[n])
