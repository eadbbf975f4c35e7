"""``resume()``: continue a run that stopped unfinished, from its last recorded step.

A run whose process was killed, crashed or was cancelled left its steps in the run
store. ``resume`` reads where it stopped (``log/_resume_point.py``) and runs the agent
again through :func:`run` as the *same* run (``_in_force.reopening``: same id and row,
``running`` again, its ``resumes`` counted, a ``resume`` info event first):

- the conversation is the input of the last model call that answered, and the first
  model call of the resumed run is answered with that call's recorded output
  (:class:`ResumeModel`) — no model is asked, nothing is counted twice — so the agent's
  own loop goes on exactly where it was (a ``submit`` among the calls still ends it);
- each tool call of that step whose result was recorded is answered with it
  (``tools/_answer.py``: the tool does not run again); a call that was in flight (or
  failed by an exception) when the run stopped runs again, and its tool event says so;
- the store has its recorded state, the run's cost goes on from its recorded cost, and
  the limits of the run and of its agent count what the earlier parts consumed (steps,
  tokens, dollars, time, working time) from the first model call on.

The same mechanism continues an eval's samples (``evals/_runner.py``): :func:`continuing`
gives the agent, the input and the context for a sample's resume point.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ConfigurationError
from ..agents import Agent, AgentState, Hooks
from ..agents._version import run_versions
from ..limits import Limit, active_limits
from ..limits import _run_depth as run_depth
from ..log._approvals import claimed_holder
from ..log._db import hostname
from ..log._info import _alive as alive
from ..log._resume_point import FINISHED, RESUME_SOURCE, ResumePoint, resume_mark, resume_point
from ..model import (
    ChatMessage,
    GenerateConfig,
    Model,
    ModelOutput,
    ToolCall,
    ToolMessage,
    UserMessage,
    get_model,
)
from ..model._step import in_step
from ..model.providers.replay import ReplayModelAPI
from ..tools import Tool
from ..tools._answer import answer_tool_calls
from ..transcripts import current_transcript
from ._approve import continuation_approver, released_on_failure
from ._in_force import current_recording, reopening
from ._run import run
from ._scope import RunScope

if TYPE_CHECKING:
    from ..sandboxes import SandboxEnvironment
    from ..tools import Approver

__all__ = [
    "ResumeModel",
    "check_not_running",
    "check_resumable",
    "continue_sample",
    "continuing",
    "prune_sandbox_folders",
    "resume",
]


class ResumeModel(Model):
    """The model of a resumed run: its first call that is the agent loop's step (when
    the recorded step was marked as one: ``model/_step.py``) offering the tools the
    recorded step offered is answered with the output recorded for the step the run
    stopped in; every other call (a history policy's summary, a hook's) goes to
    ``live``. At its first call, the limits of the run (and of its agent) are charged
    with what the earlier parts consumed."""

    def __init__(self, point: ResumePoint, live: Model) -> None:
        outputs = [point.last.output] if point.last is not None else []
        super().__init__(ReplayModelAPI(point.run_id, outputs), live.config, live.tool_protocol)
        self.point, self.live = point, live
        self.charged = self.answered = False
        self._depth = run_depth.get()

    @property
    def name(self) -> str:
        return self.live.name

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[Any] = (),
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        if not self.charged:
            self.charged = True
            self._charge()
        last = self.point.last
        if self.answered or last is None:  # (None: nothing answered; it starts over)
            return await self.live.generate(messages, tools, config)
        offered = sorted(str(getattr(t, "name", "")) for t in tools)
        if (last.step and not in_step()) or offered != sorted(t.name for t in last.tools):
            # not the agent's step (a history policy's summary, say): a live call
            return await self.live.generate(messages, tools, config)
        self.answered = True
        return last.output

    def _charge(self) -> None:
        """The limits of the resumed run (and of its agent) count the earlier parts."""
        used = self.point.consumed
        amounts = {
            "step": used.steps,
            "token": used.tokens,
            "cost": used.cost,
            "time": used.time,
            "working": used.working,
        }
        for limit in active_limits():
            if limit.depth > self._depth and limit.type in amounts:  # (the run's)
                limit.carry(amounts[limit.type])


class _Answers:
    """Answers the interrupted step's tool calls whose results were recorded (once
    each); the others run, and those in flight when the run stopped say so."""

    def __init__(self, point: ResumePoint) -> None:
        last = point.last
        self.results: dict[str, ToolMessage] = dict(last.results) if last is not None else {}
        self.again = {c.id for c in last.in_flight} if last is not None else set()
        self.waited = point.status == "waiting"  # (deferred calls: asked about again)

    async def __call__(self, call: ToolCall) -> ToolMessage | None:
        found = self.results.pop(call.id, None)
        if found is not None:
            return found
        if call.id in self.again:
            self.again.discard(call.id)
            t = current_transcript()
            if t is not None:
                why = (
                    "waited for approval: the approval policy is asked again"
                    if self.waited
                    else "was in flight when the run stopped: it runs again"
                )
                t.info(f"The call {call.function} ({call.id}) {why}.", source="resume")
        return None


def check_resumable(point: ResumePoint, what: str, *, force: bool = False) -> None:
    """Refuse a run (or sample) that finished, or that still runs."""
    if point.finished:
        raise ConfigurationError(
            f"{what} finished ({point.status}): only a run that stopped unfinished "
            "(interrupted, cancelled, error) can be resumed"
        )
    check_not_running(point.status, point.holder[1], point.holder[2], what, force=force)


def check_not_running(
    status: str, host: str | None, pid: int | None, what: str, *, force: bool = False
) -> None:
    """Refuse a run whose row says it still runs (``status``, ``host``, ``pid`` as read):
    unless ``force``, and even then when its process is alive on this machine (``force``
    is for a process on another machine, which this one cannot see)."""
    if status != "running":
        return
    if host == hostname() and pid is not None and pid != os.getpid() and alive(pid):
        raise ConfigurationError(
            f"{what} is still running, in process {pid} on this machine: it cannot be "
            "resumed while that process is alive, not even with force=True (--force is for "
            "a run whose process was on another machine); stop that process first"
        )
    if not force:
        raise ConfigurationError(
            f"{what} is still running (or its process is on another machine); resume it "
            "once it stopped, or pass force=True (--force) if its process is gone"
        )


def _check_tools(point: ResumePoint, agent: Agent, tools: Sequence[Any] | None) -> None:
    """Refuse an agent whose tools are not those the run was recorded with."""
    versions = point.metadata.get("versions")
    if not isinstance(versions, Mapping) or not dataclasses.is_dataclass(agent):
        return  # (the first model call compares the tools offered)
    recorded = sorted(k[5:] for k in versions if isinstance(k, str) and k.startswith("tool:"))
    extra = [t for t in tools or () if isinstance(t, Tool)]
    mine = sorted(k[5:] for k in run_versions(agent, extra) if k.startswith("tool:"))
    if recorded != mine:
        raise ConfigurationError(
            f"resume: run {point.run_id!r} was recorded with the tools {recorded}; this "
            f"agent has {mine}. Resume it with the agent (and tools) that ran it"
        )


@contextlib.contextmanager
def continuing(
    point: ResumePoint, agent: Agent, model: str | Model | None
) -> Iterator[tuple[Agent, AgentState | str, ResumeModel]]:
    """The agent (its model the resume model), the input and the context that continue
    ``point`` inside a run: a ``ReactAgent``'s ``model`` field is replaced; any other
    agent must get its model from the run (pass the ``ResumeModel`` as ``run(model=)``)."""
    own = getattr(agent, "model", None)
    live = get_model(model if model is not None else own)
    resumed = ResumeModel(point, live)
    if dataclasses.is_dataclass(agent) and not isinstance(agent, type) and own is not None:
        agent = dataclasses.replace(agent, model=resumed)
    given: AgentState | str
    if point.last is not None:
        messages = list(point.last.messages)
        nudged = getattr(agent, "nudge", None) is not None
        if nudged and messages and isinstance(messages[-1], UserMessage):
            messages.pop()  # the nudge the request carried, never kept (the Nudge hook)
        given = AgentState(messages=messages)
    elif isinstance(point.input, str):
        given = point.input
    elif isinstance(point.input, list):
        from pydantic import TypeAdapter

        given = AgentState(messages=TypeAdapter(list[ChatMessage]).validate_python(point.input))
    else:
        raise ConfigurationError(
            f"resume: run {point.run_id!r} recorded no input and no step to go on from"
        )
    with answer_tool_calls(_Answers(point)):
        yield agent, given, resumed


@contextlib.contextmanager
def continue_sample(
    point: ResumePoint, agent: Agent, scope: RunScope, *, kept: Agent | None = None
) -> Iterator[tuple[Agent, AgentState, ResumeModel]]:
    """Continue an eval sample left in flight (``point``) in the sample ``scope`` of a new
    run: its recorded store, its sandbox's folder if it kept one (then ``kept`` is the
    agent: the sample's files are in it already), a ``resume`` mark first, then
    :func:`continuing`."""
    for key, value in point.store.items():
        scope.store.set(key, value)
    if scope.db_path is not None:
        from ..sandboxes._folders import adopt_folder, run_folder

        old = run_folder(scope.db_path, point.run_id, point.sample)
        if adopt_folder(old, run_folder(scope.db_path, scope.run_id, scope.key)):
            agent = kept if kept is not None else agent
    scope.transcript.info(resume_mark(point), source=RESUME_SOURCE)
    with continuing(point, agent, None) as (agent2, given, model):
        if isinstance(given, str):
            given = AgentState(messages=[UserMessage(content=given)])
        yield agent2, given, model


async def resume(
    run_id: str,
    *,
    agent: Agent,
    db: str | os.PathLike[str] | None = None,
    model: str | Model | None = None,
    limits: Sequence[Limit] = (),
    tools: Sequence[Any] | None = None,
    sandbox: str | SandboxEnvironment | None = None,
    approval: str | Approver | Sequence[Any] | None = None,
    hooks: Sequence[Hooks] = (),
    raise_on_limit: bool = False,
    force: bool = False,
) -> AgentState:
    """Continue run ``run_id``, which stopped unfinished, from its last recorded step.

    The run goes on as the same run in the run store (``running`` again, then its real
    ending; ``metadata["resumes"]`` counts the resumes and a ``resume`` info event marks
    where each part begins), and can be resumed again if it stops again. Its
    conversation, store, cost and what its limits consumed are those recorded; the tool
    calls of the step it stopped in whose results were recorded are not run again, and
    those in flight run again (their tool events say so). Give the same agent, tools and
    limits the run had (``run()`` does not record Python objects): a dataclass agent
    (``ReactAgent``) with other tools than the recorded ones is refused (another agent
    whose calls offer other tools than the recorded step's goes on live from the
    recorded conversation); limits count from what the earlier parts used, so a
    ``step_limit(10)`` holds across all the parts.

    Args:
        run_id: The run (an id or a unique prefix).
        agent: The agent that ran it (a ``ReactAgent``'s model is kept; see ``model``).
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).
        model: The model for the rest of the run (default: the agent's own, else the
            current default).
        limits, tools, sandbox, approval, hooks, raise_on_limit: as in :func:`run`.
        force: Resume a run recorded as still ``running`` whose process this machine
            cannot see (another host) — when you know it is gone. A run whose process
            is alive on this machine is refused even with ``force``.

    Returns:
        The final state, as :func:`run` returns it (``state.run_id`` is ``run_id``).

    Raises:
        ConfigurationError: The run finished (``success``, ``limit``, ``stopped``), still
            runs, or was recorded with other tools.
        RunStoreError: No such run (or store).
    """
    if current_recording() is not None:
        raise ConfigurationError(
            "resume: a run is resumed on its own, not inside another run (its agent's tool)"
        )
    point = resume_point(run_id, db)
    if point.samples:
        raise ConfigurationError(
            f"resume: run {point.run_id!r} is an eval's ({point.samples} samples): resume it "
            f"with lw.eval(..., resume={point.run_id!r}) or `loopwright runs resume`"
        )
    check_resumable(point, f"run {point.run_id!r}", force=force)
    _check_tools(point, agent, tools)
    # deferred approval: the decisions recorded about its deferred calls apply (a waiting
    # run's claim of them sets its row running here: no decision lands after the claim)
    waiting = point.status == "waiting"
    unanswered = [c.id for c in point.last.in_flight] if point.last is not None else []
    approval = continuation_approver(
        point.run_id, approval, db, waiting=waiting, unanswered=unanswered
    )
    if waiting:
        point = dataclasses.replace(point, holder=claimed_holder())
    with (
        released_on_failure(db, point, claimed=waiting),
        continuing(point, agent, model) as (agent2, given, resumed),
        reopening(point),
    ):
        return await run(
            agent2,
            given,
            model=resumed,
            limits=limits,
            tools=tools,
            raise_on_limit=raise_on_limit,
            name=point.name,
            db=db,
            sandbox=sandbox,
            approval=approval,
            hooks=hooks,
        )


def prune_sandbox_folders(db: str | os.PathLike[str] | None = None) -> list[str]:
    """Remove the sandbox folders kept for the runs of the run store ``db`` that
    finished or are no longer in it (``sandboxes/_folders.py``); returns them. A run
    whose row cannot be read (listed ``damaged``) keeps its folder: it may not have
    finished."""
    from ..log import list_runs, resolve_db
    from ..sandboxes._folders import prune_folders, release_root
    from ..sandboxes._tempdir import remove_root

    path = resolve_db(db)
    status = {r.id: r.status for r in list_runs(path)}

    def keep(run_id: str) -> bool:
        return run_id in status and status[run_id] not in FINISHED

    def remove(folder: str) -> bool:
        release_root(folder)
        return remove_root(folder)

    return prune_folders(path, keep, remove)
