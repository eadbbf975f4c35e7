"""``run()`` and ``run_sync()``: run an agent on an input within a run's scope.

``run()`` checks its arguments, settles the configuration, opens a :class:`RunScope`
(``_scope.py``: store, transcript, run-store recording, or a span of the run around) and
puts the run's context in force around the agent: the model, the approval policy, the
run's hooks, the limits, the sandbox. Then it says how the run ended, once: completed,
on one of its own limits (a limit of a run around it passes on), stopped by a hook, or
an error (recorded by the scope as it leaves).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._contexts import NOTHING, all_of
from .._errors import ConfigurationError
from ..agents import Agent, AgentState, Hooks, StopRun
from ..agents._checks import (
    check_agent,
    check_approver,
    check_db,
    check_flag,
    check_limits,
    check_sandbox,
    check_text,
    check_tool_list,
)
from ..agents._lifecycle import check_hooks, finish, run_hooks, stop_run, tell_error
from ..agents._steps import check_tools
from ..limits import Limit, LimitExceededError, run_scope
from ..log import RunStatus, RunStoreError
from ..log._resume_point import FINISHED
from ..log._specs import spec_store
from ..model import ChatMessage, Model, UserMessage, default_model, get_model
from ..tools import approver
from ._approve import park
from ._scope import RunScope
from ._versions import run_metadata

if TYPE_CHECKING:
    from ..sandboxes import SandboxEnvironment
    from ..tools import Approver

__all__ = ["run", "run_sync"]


def _initial_state(input: str | Sequence[ChatMessage] | AgentState) -> AgentState:
    if isinstance(input, AgentState):
        return input
    if isinstance(input, str):
        return AgentState(messages=[UserMessage(content=input)])
    if isinstance(input, Sequence):
        return AgentState(messages=list(input))
    raise ConfigurationError(
        "run: input must be a string, a list of messages or an AgentState, not "
        f"{type(input).__name__}"
    )


async def run(
    agent: Agent,
    input: str | Sequence[ChatMessage] | AgentState,
    *,
    model: str | Model | None = None,
    limits: Sequence[Limit] = (),
    tools: Sequence[Any] | None = None,
    raise_on_limit: bool = False,
    name: str | None = None,
    db: str | os.PathLike[str] | Literal[False] | None = None,
    sandbox: str | SandboxEnvironment | None = None,
    approval: str | Approver | Sequence[Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    transcript: bool = True,
    hooks: Sequence[Hooks] = (),
) -> AgentState:
    """Run ``agent`` on ``input`` and return its final state.

    ``run`` opens the run's context: the default model (``get_model()`` inside the agent
    returns ``model``), the limits, the run's store and transcript (recorded to the run
    store as they happen), a sandbox and an approval policy when asked for. When one of
    the run's limits (or a limit entered outside any run) ends it, ``run`` returns the
    state so far with ``state.limit`` set and ``state.completed == "limit"``; pass
    ``raise_on_limit=True`` to get :class:`LimitExceededError` instead. Errors that are
    not limits are recorded and propagate. When the run store fails (the disk is full),
    the run is stopped at once and :class:`RunStoreError` is raised, with the state so far
    in its ``state``. ``state.run_id`` names the run in the run store:
    ``lw.load_run(state.run_id, db=db)`` opens it. An argument of the wrong kind
    (an agent that is not one, a limit, tool or approver that is not one...) raises
    :class:`~loopwright.ConfigurationError` before the run starts.

    Args:
        agent: The agent to run.
        input: The task: a string (a user message), messages, or a state to continue.
        model: The model for the run (a name or a :class:`Model`); default: the current
            default (``$LOOPWRIGHT_MODEL``, else ``local``).
        limits: Limits for the whole run.
        tools: Extra tools offered to the agent beside its own (``state.extra_tools``).
        raise_on_limit: Raise instead of returning when a limit ends the run.
        name: The run's name in the run store (default: the agent's name).
        db: The run store file; ``None``: ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``;
            ``False``: do not persist. A run inside another run (an agent used as a
            tool) is recorded as a span of the outer run.
        sandbox: ``"bwrap"``, ``"local"`` or a :class:`SandboxEnvironment`: a fresh
            sandbox for this run, cleaned up at the end (default: none). Waiting for a
            free sandbox slot counts against the run's time limits.
        approval: An approval policy for tool calls: ``"ci"``, ``"dev"``, ``"prod"``,
            an approver function, or a rule list (default: every call runs).
        metadata: JSON-serialisable data kept with the run.
        transcript: ``False``: record no model calls, tool calls or store changes (the
            run's transcript keeps only what code records itself: ``info``, spans, log
            records). For bulk runs that keep only their final state (rollouts, data
            generation), where recording every call is much of the loop's own cost
            (``bench/``). Needs ``db=False``; a console display then shows nothing, and
            the working time of what is recorded counts model calls' waits as work. A run
            inside another run records as the outer run does.
        hooks: :class:`~loopwright.Hooks` of the run: they hear its start, end, limit
            and error once, and the steps, model calls and tool calls of every agent in
            it (agents used as tools included), before the agents' own hooks; a run
            inside another run adds its hooks after the outer run's. A hook that raises
            :class:`~loopwright.StopRun` ends the run: the state so far comes back with
            ``state.completed == "stopped"`` and the reason in ``state.error``.
    """
    # every argument is checked before anything starts: a mistake is a usage error,
    # refused here, never an AttributeError in the middle of the run
    check_agent(agent)
    limits = check_limits(limits)
    if tools is not None:
        tools = check_tool_list(tools, "run")
        check_tools(tools, "run(tools=...)")
    check_text(name, "name", "run", optional=True)
    check_sandbox(sandbox)
    check_db(db)
    check_approver(approval)
    check_flag(raise_on_limit, "raise_on_limit", "run")
    check_flag(transcript, "transcript", "run")
    own_hooks = check_hooks(hooks, "run")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ConfigurationError(f"run: metadata must be a dict or None, got {metadata!r}")
    state = _initial_state(input)
    if tools is not None:
        state.extra_tools = list(tools)
    chosen = get_model(model) if model is not None else None
    # settle the configuration before the run is recorded: a mistake here is a usage
    # error, not a failed run
    policy = None
    if approval is not None:
        from ..approval import get_approval_policy

        policy = get_approval_policy(approval)
    if isinstance(sandbox, str):
        from ..sandboxes import sandbox_backend

        sandbox_backend(sandbox)
    run_name = name or getattr(agent, "name", None) or getattr(agent, "__name__", None)
    # versions, and tool specs a model writes: before the run opens (runtime/_versions.py)
    metadata = await run_metadata(agent, tools, metadata, model=chosen, db=db)
    # the run's contexts, each left in reverse order of entering: plain `with` statements
    # (an ExitStack and its callbacks would be kept alive by every live run)
    with run_scope() as depth, default_model(chosen) if chosen is not None else NOTHING:
        try:
            async with RunScope(
                name=run_name,
                model=chosen,
                input=_describe_input(input),
                db=db,
                metadata=metadata,
                record_calls=transcript,
                depth=depth,
            ) as scope:
                state.run_id = scope.run_id
                with (
                    spec_store(scope.db_path),  # (agents/_specs.py)
                    approver(policy) if policy is not None else NOTHING,
                    run_hooks(own_hooks) if own_hooks else NOTHING,
                ):
                    # a sandbox is started within the limits, and cleaned up outside them
                    sandboxes = contextlib.AsyncExitStack() if sandbox is not None else None
                    async with sandboxes if sandboxes is not None else NOTHING:
                        limit_error: LimitExceededError | None = None
                        try:
                            # limits exit inside the try: a time limit turns its
                            # cancellation into LimitExceededError on exit
                            with all_of(limits):
                                if sandboxes is not None:
                                    assert sandbox is not None
                                    await _start_sandbox(sandboxes, sandbox, scope)
                                for hook in own_hooks:
                                    await hook.on_run_start(state)
                                state = await agent(state)
                        except LimitExceededError as ex:
                            if not scope.owns(ex):
                                raise  # a limit of a run around this one: that run ends on it
                            state.limit, state.completed = ex.info, "limit"
                            state.cost = scope.cost.dollars
                            state.unpriced_calls = scope.cost.unpriced_calls
                            limit_error = ex
                            if raise_on_limit:
                                scope.finish(messages=state.messages, limit=ex)
                                if own_hooks:
                                    await finish(own_hooks, state, ex.info)
                                raise
                        except StopRun as ex:
                            stop_run(state, ex, record=True)
                        except Exception as ex:
                            if own_hooks:
                                await tell_error(own_hooks, ex)
                            raise  # the scope records the error as it leaves
                        await _close(scope, state, own_hooks, limit_error)
                        return state
        except RunStoreError as ex:
            if ex.state is None:  # the run store failed: the state goes with the error
                ex.state = state
                state.error = state.error or str(ex)
            raise


async def _close(
    scope: RunScope,
    state: AgentState,
    own_hooks: tuple[Hooks, ...],
    limit_error: LimitExceededError | None,
) -> None:
    """Say how the run ended, once: the run's hooks hear it, a run with deferred calls
    is parked, and the scope records its end."""
    if own_hooks:
        ended = state.limit if state.completed == "limit" else None
        await finish(own_hooks, state, ended)
    state.run_id = scope.run_id  # (an agent may return another state than it got)
    state.cost, state.unpriced_calls = scope.cost.dollars, scope.cost.unpriced_calls
    status: RunStatus | None = "stopped" if state.completed == "stopped" else None
    if state.completed == "waiting":  # deferred calls wait for a person
        await park(scope, state)  # (runtime/_approve.py)
        status = "waiting"
    scope.finish(
        output=state.output.text if state.output is not None else None,
        messages=state.messages,
        limit=limit_error or state.limit,
        status=status,
    )


async def _start_sandbox(
    stack: contextlib.AsyncExitStack, sandbox: str | SandboxEnvironment, scope: RunScope
) -> None:
    """Start the run's sandbox within the run's limits, clean it up outside them.

    Waiting for a sandbox slot (``max_sandboxes``) and starting the sandbox are part of
    the run, so a time limit counts them and can end the run while it waits. The cleanup
    is left to ``stack``, which outlives the limits: a limit never cuts it short. A run
    of its own in a run store (or an eval sample) keeps its sandbox's folder by its id
    until it finishes (``sandboxes/_folders.py``: a resumed run finds it again), also
    when it finishes (on its time limit) while the sandbox starts."""
    from ..sandboxes import use_sandbox

    sample = scope.within if scope.nested else None  # (an eval sample's: by its key)
    if not isinstance(sandbox, str) or scope.db_path is None or (scope.nested and not sample):
        await stack.enter_async_context(use_sandbox(sandbox))
        return
    from ..sandboxes._folders import release_root, run_folder, sandbox_folder

    folder = run_folder(scope.db_path, scope.run_id, sample.key if sample else None)
    try:
        with sandbox_folder(folder):
            await stack.enter_async_context(use_sandbox(sandbox))
    except BaseException:
        # the start did not end (the run's time limit, Ctrl-C, an error): the sandbox
        # removed what it made but the kept folder, which goes if the run finishes
        stack.push_async_callback(_remove_unstarted, scope, folder)
        raise

    def finished(*_: object) -> None:
        if scope.status in FINISHED:  # its folder goes with the sandbox
            release_root(folder)

    stack.push(finished)


async def _remove_unstarted(scope: RunScope, folder: str | os.PathLike[str]) -> None:
    """Remove the folder of a run's sandbox that did not start, if the run finished
    (ended on its limit while the sandbox started): to its end, even when cancelled."""
    if scope.status not in FINISHED:  # (an error, a cancellation: kept for a resume)
        return
    from ..sandboxes._folders import release_root
    from ..sandboxes._settle import to_the_end
    from ..sandboxes._tempdir import remove_root

    release_root(folder)
    _, cancelled = await to_the_end(asyncio.to_thread(remove_root, os.fspath(folder)))
    if cancelled is not None:
        raise cancelled


def _describe_input(input: str | Sequence[ChatMessage] | AgentState) -> Any:
    if isinstance(input, str):
        return input
    messages = input.messages if isinstance(input, AgentState) else input
    last_user = [m.text for m in messages if isinstance(m, UserMessage)][-1:]
    return last_user[0] if last_user else None


def run_sync(
    agent: Agent,
    input: str | Sequence[ChatMessage] | AgentState,
    **kwargs: Any,
) -> AgentState:
    """:func:`run` for scripts: runs the event loop until the agent is done.

    Not for use inside a running event loop (``await run(...)`` there).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop running: the normal case
    else:
        raise ConfigurationError("run_sync() called inside a running event loop; use await run()")
    # outside the except block: an error of the run must not be chained onto the
    # "no running event loop" RuntimeError ("During handling of the above exception...")
    return asyncio.run(run(agent, input, **kwargs))
