"""``replay()``: run an agent again on a recorded run, offline and without side effects.

The recorded run's steps (``log/_recorded.py``) answer the agent: each model call gets
the output recorded at that step, each tool call the result recorded for it at that step
(matched by order, name and arguments: the tool does not run and the approval policy is
not asked, ``tools/_answer.py``). Before each model call is answered, the agent's request
— its messages, the tools it offers, the generation config — is compared with the one
recorded; the first difference is the replay's divergence and ends the replayed run (a
``StopRun``: status ``stopped``). ``until=K`` answers the first K steps (and their tool
calls) from the store, noting a difference without stopping on it, then lets the agent go
on live with the model it is given and its tools: a fork of the run at step K. Either way
the replay is a new run, whose metadata names its origin (``replay_of``, ``until``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter

from .._errors import ConfigurationError
from .._ids import new_id
from ..agents import Agent, AgentState, StopRun
from ..agents._version import run_versions
from ..limits import Limit
from ..log._recorded import RecordedRun, RecordedStep, recorded_run
from ..model import (
    ChatMessage,
    GenerateConfig,
    Model,
    ModelCall,
    ModelOutput,
    SystemMessage,
    ToolCall,
    ToolInfo,
    ToolMessage,
    get_model,
    model_hook,
)
from ..model.providers.replay import ReplayModelAPI
from ..tools._answer import answer_tool_calls
from ._run import run

if TYPE_CHECKING:
    from ..sandboxes import SandboxEnvironment

__all__ = ["ReplayDivergence", "ReplayResult", "replay"]

DifferenceKind = Literal["messages", "tools", "config", "tool_call", "steps"]

_SHOWN = 2000  # characters of each side kept in a difference


@dataclass(frozen=True)
class ReplayDivergence:
    """Where the agent's request first differed from the recorded one.

    Attributes:
        step: The step (1-based: the Nth model call) whose request differs.
        kind: ``messages``, ``tools`` (the tool list), ``config``, ``tool_call`` (a call
            with no recorded result at that step) or ``steps`` (one side has more steps).
        recorded: What the recorded run had (bounded text).
        replayed: What the agent asked for (bounded text).
    """

    step: int
    kind: DifferenceKind
    recorded: str
    replayed: str

    def describe(self) -> str:
        what = {
            "messages": "the messages differ",
            "tools": "the tool list differs",
            "config": "the generation config differs",
            "tool_call": "a tool call has no recorded result",
            "steps": "the number of steps differs",
        }[self.kind]
        return f"step {self.step}: {what}"


@dataclass(frozen=True)
class ReplayResult:
    """A replay's outcome. ``run_id`` is the new run; ``divergence`` the first difference
    (``None``: every request was the recorded one)."""

    run_id: str
    replay_of: str
    until: int | None
    state: AgentState
    divergence: ReplayDivergence | None
    replayed_steps: int
    """Model calls answered from the store."""
    recorded_steps: int
    live_calls: int
    """Model calls made live after the fork."""

    @property
    def same(self) -> bool:
        return self.divergence is None


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN // 2] + " … " + text[-_SHOWN // 2 :]


def _message_shape(m: ChatMessage) -> dict[str, Any]:
    """A message as compared: everything but its id (and the name of the model that
    wrote an assistant message)."""
    return m.model_dump(mode="json", exclude={"id", "model"}, exclude_none=True)


def _show_message(index: int, shape: dict[str, Any] | None) -> str:
    if shape is None:
        return f"message {index + 1}: (none)"
    rest = {k: v for k, v in shape.items() if k not in ("role", "content")}
    extra = f" {json.dumps(rest, sort_keys=True)}" if rest else ""
    return f"message {index + 1} ({shape.get('role')}): {shape.get('content', '')}{extra}"


def _message_difference(
    recorded: Sequence[ChatMessage], asked: Sequence[ChatMessage], same: list[Any]
) -> tuple[DifferenceKind, str, str] | None:
    """The first message that differs. ``same`` is ``[recorded, asked, k]`` of the step
    before (its first k messages equal), updated here: the prefix both sides still share
    with it is compared as lists (object identity first, at C speed), so a step costs
    its new messages (a message changed in place is compared as equal to itself)."""
    before_recorded, before_asked, k = same or ([], [], 0)
    k = min(k, len(recorded), len(asked))
    if not (recorded[:k] == before_recorded[:k] and asked[:k] == before_asked[:k]):
        k = 0
    for i in range(k, min(len(recorded), len(asked))):
        left, right = _message_shape(recorded[i]), _message_shape(asked[i])
        if left != right:
            return "messages", _show_message(i, left), _show_message(i, right)
    same[:] = [list(recorded), list(asked), min(len(recorded), len(asked))]
    if len(recorded) != len(asked):
        i = min(len(recorded), len(asked))
        a = _message_shape(recorded[i]) if i < len(recorded) else None
        b = _message_shape(asked[i]) if i < len(asked) else None
        return "messages", _show_message(i, a), _show_message(i, b)
    return None


def _difference(
    step: RecordedStep,
    messages: Sequence[ChatMessage],
    tools: list[ToolInfo],
    cfg: GenerateConfig,
    same: list[Any],
) -> tuple[DifferenceKind, str, str] | None:
    """The first way the request differs from the recorded one: messages, then the
    tool list, then the config."""
    found = _message_difference(step.messages, messages, same)
    if found is not None:
        return found
    recorded = {t.name: t.model_dump(mode="json") for t in step.tools}
    asked = {t.name: t.model_dump(mode="json") for t in tools}
    if recorded != asked:
        if set(recorded) != set(asked):
            return "tools", ", ".join(sorted(recorded)), ", ".join(sorted(asked))
        name = next(n for n in sorted(recorded) if recorded[n] != asked[n])
        return "tools", json.dumps(recorded[name]), json.dumps(asked[name])
    old = step.config.model_dump(mode="json", exclude_none=True)
    new = cfg.model_dump(mode="json", exclude_none=True)
    if old != new:
        keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        return (
            "config",
            json.dumps({k: old.get(k) for k in keys}),
            json.dumps({k: new.get(k) for k in keys}),
        )
    return None


class _Replayer:
    """One replay's progress: which step the agent is at, what it has been answered, and
    whether it went live."""

    def __init__(self, recorded: RecordedRun, until: int | None, live: Model | None) -> None:
        self.recorded, self.until, self.live_model = recorded, until, live
        self.steps = recorded.steps
        self.calls = 0  # model calls answered from the store
        self.live_calls = 0
        self.live = until == 0
        self.divergence: ReplayDivergence | None = None
        self.used: set[tuple[int, int]] = set()  # (step, tool event) answered
        # the messages of the step before found equal (see _message_difference)
        self.same: list[Any] = []

    def differ(self, step: int, kind: DifferenceKind, recorded: str, replayed: str) -> None:
        """Note a difference; a replay (not a fork) stops on it."""
        if self.divergence is None:
            self.divergence = ReplayDivergence(step, kind, _cut(recorded), _cut(replayed))
        if self.until is None:
            raise StopRun(f"replay: {self.divergence.describe()}")

    def next_step(self) -> RecordedStep | None:
        """The recorded step answering the next model call; ``None``: go live."""
        n = self.calls
        if self.until is not None and n >= min(self.until, len(self.steps)):
            self.live = True
            return None
        if n >= len(self.steps):
            self.differ(
                n + 1,
                "steps",
                f"the recorded run ended after {len(self.steps)} steps",
                f"the agent asked for step {n + 1}",
            )
        return self.steps[n]

    async def answer(self, call: ToolCall) -> ToolMessage | None:
        """A tool call's recorded result (``None``: run it, after the fork)."""
        if self.live:
            return None
        index = self.calls - 1
        events = self.steps[index].tool_events if index >= 0 else []
        found = next(
            (
                k
                for k, ev in enumerate(events)
                if (index, k) not in self.used
                and ev.call.function == call.function
                and ev.call.arguments == call.arguments
            ),
            None,
        )
        if found is None:  # (an approval policy may have changed what ran: same id)
            found = next(
                (
                    k
                    for k, ev in enumerate(events)
                    if (index, k) not in self.used and ev.call.id == call.id
                ),
                None,
            )
        recorded = events[found].result if found is not None else None
        if found is None or recorded is None:
            if self.until is not None:
                self.live = True  # nothing recorded to answer with: the fork goes live here
                return None
            why = "no recorded call like it" if found is None else events[found].failure or ""
            shown = [f"{ev.call.function}({json.dumps(ev.call.arguments)})" for ev in events]
            self.differ(
                index + 1,
                "tool_call",
                "; ".join(shown) + (f" ({why})" if found is not None else ""),
                f"{call.function}({json.dumps(call.arguments)}): {why}",
            )
            return None
        self.used.add((index, found))
        return recorded.model_copy(update={"id": new_id(), "tool_call_id": call.id})


class _ReplayModel(Model):
    """Answers model calls from the store (after comparing each request with the
    recorded one), then, once the fork went live, passes them to the live model."""

    def __init__(self, replayer: _Replayer, config: GenerateConfig) -> None:
        outputs = [s.output for s in replayer.steps]
        super().__init__(ReplayModelAPI(replayer.recorded.run_id, outputs), config, "native")
        self._replayer = replayer

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[Any] = (),
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        r = self._replayer
        step = None if r.live else r.next_step()
        if step is None:
            if r.live_model is None:
                raise ConfigurationError(
                    "replay: the fork went live but no model was given (replay(..., model=...))"
                )
            r.live_calls += 1
            return await r.live_model.generate(messages, tools, config)
        # the config Model.generate sends and records: the defaults, the model's, the call's
        cfg = self._base_config.merge(config) if config is not None else self._base_config
        infos = [t if isinstance(t, ToolInfo) else t.info for t in tools]
        found = _difference(step, messages, infos, cfg, r.same)
        if found is not None:
            r.differ(r.calls + 1, *found)
        r.calls += 1
        return await super().generate(messages, tools, config)


class _Offline:
    """A model hook: while replaying, a call to any model but the replay's is refused
    (an agent with a model of its own that replay could not replace)."""

    def __init__(self, replayer: _Replayer, model: Model) -> None:
        self._replayer, self._model = replayer, model

    def before_generate(self, call: ModelCall) -> None:
        if not self._replayer.live and call.model is not self._model:
            raise ConfigurationError(
                f"replay: the agent called the model {call.model.name!r} itself, which would "
                "not be offline; give it its model through the run (run(model=...)) or as a "
                "dataclass field `model`"
            )

    def after_generate(self, call: ModelCall) -> None:
        pass


def _input(recorded: RecordedRun) -> str | list[ChatMessage]:
    """What the recorded run was given: its input as recorded (a string, or messages),
    else its first request without the agent's system prompt."""
    given = recorded.input
    if isinstance(given, str):
        return given
    if isinstance(given, list):
        return TypeAdapter(list[ChatMessage]).validate_python(given)
    if not recorded.steps:
        raise ConfigurationError(
            f"replay: run {recorded.run_id!r} recorded no input and no step to start from"
        )
    first = list(recorded.steps[0].messages)
    if first and isinstance(first[0], SystemMessage):
        first = first[1:]
    return [m.model_copy(update={"id": new_id()}) for m in first]


async def replay(
    run_id: str,
    *,
    agent: Agent,
    db: str | os.PathLike[str] | None = None,
    until: int | None = None,
    model: str | Model | None = None,
    sample: str | None = None,
    input: str | Sequence[ChatMessage] | None = None,
    sandbox: str | SandboxEnvironment | None = None,
    limits: Sequence[Limit] = (),
) -> ReplayResult:
    """Run ``agent`` again on the recorded run ``run_id``, offline, as a new run.

    Every model call is answered with the output recorded at that step and every tool
    call with the result recorded for it (no tool runs, so nothing outside the run is
    touched); the run stops at the first step whose request (messages, tool list,
    generation config) differs from the recorded one, reported in
    :attr:`ReplayResult.divergence`. With ``until=K``, the first K steps are answered
    from the store (a difference is reported but does not stop it) and the agent then
    goes on live with ``model`` (default: the agent's own, else the current default)
    and its tools: a fork of the run at step K, e.g. with another prompt.

    Args:
        run_id: The recorded run: an id, a unique id prefix, or a JSON export's path.
        agent: The agent to replay (a ``ReactAgent`` has its ``model`` replaced; any
            other agent must get its model from the run).
        db: The run store read, and written to (default ``$LOOPWRIGHT_DB`` or
            ``./loopwright-runs.db``).
        until: Replay this many steps, then continue live (``None``: replay all).
        model: The model for the live part of a fork (its config also under the
            replayed steps' config, so a recorded model-level config compares equal).
        sample: Replay this sample (a sample id or key) of an eval's run.
        input: The input (default: the recorded run's).
        sandbox: A sandbox for the run, as in :func:`run` (used by the live part only).
        limits: Limits for the run.
    """
    if until is not None and (isinstance(until, bool) or not isinstance(until, int) or until < 0):
        raise ConfigurationError(f"replay: until must be a whole number >= 0, got {until!r}")
    recorded = recorded_run(run_id, db, sample)
    own = getattr(agent, "model", None)
    live: Model | None = None
    if model is not None or until is not None:
        live = get_model(model if model is not None else own)
    base = live if live is not None else own if isinstance(own, Model) else None
    replayer = _Replayer(recorded, until, live)
    replaying = _ReplayModel(replayer, base.config if base is not None else GenerateConfig())
    metadata: dict[str, Any] = {"replay_of": recorded.run_id, "until": until}
    if dataclasses.is_dataclass(agent) and not isinstance(agent, type) and own is not None:
        # the versions recorded are the agent's as given, not those of its copy
        metadata["versions"] = run_versions(agent)
        agent = dataclasses.replace(agent, model=replaying)
    if sample is not None:
        metadata["sample"] = sample
    with model_hook(_Offline(replayer, replaying)), answer_tool_calls(replayer.answer):
        given: str | list[ChatMessage]
        if input is None:
            given = _input(recorded)
        else:
            given = input if isinstance(input, str) else list(input)
        state = await run(
            agent,
            given,
            model=replaying,
            db=db,
            metadata=metadata,
            sandbox=sandbox,
            limits=limits,
        )
    ended_early = replayer.calls < len(recorded.steps) and state.completed != "stopped"
    if replayer.divergence is None and until is None and ended_early:
        replayer.divergence = ReplayDivergence(
            replayer.calls + 1,
            "steps",
            f"{len(recorded.steps)} steps",
            f"the agent ended after {replayer.calls} steps",
        )
    return ReplayResult(
        run_id=state.run_id or "",
        replay_of=recorded.run_id,
        until=until,
        state=state,
        divergence=replayer.divergence,
        replayed_steps=replayer.calls,
        recorded_steps=len(recorded.steps),
        live_calls=replayer.live_calls,
    )
