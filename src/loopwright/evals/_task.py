"""``Task``: a dataset, the agent that works on it, and how its results are scored."""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, overload

from .._errors import ConfigurationError
from .._imports import import_file
from ..agents import Agent, get_agent, react
from ..limits import (
    Limit,
    cost_limit,
    message_limit,
    step_limit,
    time_limit,
    token_limit,
    working_limit,
)
from ..model import Model
from ._dataset import Dataset, as_dataset
from ._metrics import Metric
from ._sample import Sample
from ._score import ScoreFn, Scorer, as_scorers
from ._task_args import bind_task_args

if TYPE_CHECKING:
    from ..tools import Approver

__all__ = [
    "Task",
    "TaskError",
    "get_task",
    "load_tasks",
    "on_sys_path",
    "registered_tasks",
    "task",
    "task_names",
]

P = ParamSpec("P")

DatasetLike: TypeAlias = Dataset | Iterable[Sample | Mapping[str, Any] | str]
ScorerLike: TypeAlias = Scorer | ScoreFn | Sequence[Scorer | ScoreFn] | None

_LIMIT_FACTORIES: dict[str, Callable[[Any], Limit]] = {
    "step": step_limit,
    "message": message_limit,
    "token": token_limit,
    "cost": cost_limit,
    "time": time_limit,
    "working": working_limit,
}


class TaskError(ConfigurationError):
    """A task could not be found, loaded or built."""


def _default_agent() -> Agent:
    return react(
        prompt=(
            "You are a careful assistant. Work out the answer to the user's task, then "
            "call the submit tool with your final answer and nothing else."
        )
    )


class Task:
    """What an evaluation runs: each sample of ``dataset`` is given to ``agent``, and the
    final state is judged by ``scorer``.

    Args:
        dataset: The samples: a :class:`Dataset`, or a list of samples, records
            (``{"input": ..., "target": ...}``) or input strings; at least one.
        agent: The agent (solver) each sample runs: an :class:`~loopwright.Agent`, the
            name of one registered with ``@lw.agent``, or ``None`` for a standard
            ``react()`` agent that submits its answer.
        scorer: One scorer or several (see :func:`match`, :func:`includes`,
            :func:`pattern`, :func:`model_graded`, :func:`scorer`); ``None``: no scores.
        limits: Limits for each sample (a fresh copy per sample and epoch).
        sandbox: A sandbox backend for each sample (``"bwrap"``, ``"local"``...): a fresh
            sandbox per sample, holding the sample's ``files``; ``None``: none.
        approval: An approval policy for the agent's tool calls (``"ci"``, ``"dev"``,
            ``"prod"``, an approver or a rule list; see ``lw.run``).
        metrics: Metrics for every scorer (default: each scorer's own, which for the
            built-ins is accuracy and stderr).
        epochs: How many times each sample runs (scores are averaged per sample).
        name: The task's name (default: the ``@task`` function's, else the dataset's).
        model: The model for this task when ``eval()`` is given none.
        metadata: Anything to keep with the task's run.
    """

    def __init__(
        self,
        dataset: DatasetLike,
        agent: Agent | str | None = None,
        scorer: ScorerLike = None,
        *,
        limits: Sequence[Limit] = (),
        sandbox: str | None = None,
        approval: str | Approver | Sequence[Any] | None = None,
        metrics: Sequence[Metric] | None = None,
        epochs: int = 1,
        name: str | None = None,
        model: str | Model | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.dataset = as_dataset(dataset)
        if not self.dataset:  # (a streamed dataset reads its first record only)
            where = self.dataset.location or name or self.dataset.name
            raise TaskError(
                f"a task needs at least one sample; the dataset{f' {where!r}' if where else ''} "
                "has none"
            )
        if isinstance(agent, str):
            agent = get_agent(agent)
        if agent is not None and not callable(agent):
            raise TaskError(f"a task's agent must be an Agent, got {type(agent).__name__}")
        self.agent: Agent = agent if agent is not None else _default_agent()
        self.scorer: list[Scorer] = as_scorers(scorer)
        """The scorers given as ``scorer=``, always as a list (empty for none)."""
        if metrics is not None:  # this task's: a scorer given to other tasks keeps its own
            self.scorer = [copy.copy(s) for s in self.scorer]
            for s in self.scorer:
                s.metrics = list(metrics)
        for limit in limits:
            if not isinstance(limit, Limit):
                raise TaskError(
                    f"a task's limits must be Limits (lw.step_limit(10)...), got {limit!r}"
                )
        self.limits = list(limits)
        self.sandbox = sandbox
        self.approval = approval
        if not isinstance(epochs, int) or epochs < 1:
            raise TaskError(f"epochs must be a positive integer, got {epochs!r}")
        self.epochs = epochs
        self.name = name or self.dataset.name or "task"
        self._named = name is not None
        self.model = model
        self.metadata = dict(metadata or {})
        self.params: dict[str, Any] = {}
        """The ``@task`` arguments the task was built with."""
        self._folder: Path | None = None  # a task file's folder, on sys.path as it runs

    def __repr__(self) -> str:
        return f"Task({self.name!r}, {self.dataset!r})"

    def fresh_limits(self) -> list[Limit]:
        """New limits like the task's, for one sample (a limit is used by one scope)."""
        return fresh_limits(self.limits)


def fresh_limits(limits: Sequence[Limit]) -> list[Limit]:
    """New limits like ``limits``, for one run (a limit is used by one scope)."""
    return [_LIMIT_FACTORIES[limit.type](limit.limit) for limit in limits]


TaskFactory: TypeAlias = Callable[..., Task]

_registry: dict[str, TaskFactory] = {}


@overload
def task(fn: Callable[P, Task], /) -> Callable[P, Task]: ...
@overload
def task(*, name: str | None = None) -> Callable[[Callable[P, Task]], Callable[P, Task]]: ...
def task(
    fn: Callable[P, Task] | None = None, /, *, name: str | None = None
) -> Callable[P, Task] | Callable[[Callable[P, Task]], Callable[P, Task]]:
    """Register a function that builds a :class:`Task`, so that ``loopwright eval
    FILE.py@name`` (and :func:`get_task`) can find it. Its parameters become task
    arguments: ``-T key=value`` on the command line, checked against the type hints
    (with pydantic) before the task is built, so ``-T max_steps=abc`` for an ``int`` is
    refused before any sample runs. A task file's folder is on ``sys.path`` while its
    task functions, agents and scorers run, so they can import the file's neighbours::

        @lw.task
        def arithmetic(level: Literal["easy", "hard"] = "easy", max_steps: int = 6) -> lw.Task:
            return lw.Task(dataset=..., scorer=lw.match("numeric"))
    """

    def register(f: Callable[P, Task]) -> Callable[P, Task]:
        task_name = name or f.__name__

        @functools.wraps(f)
        def build(*args: P.args, **kwargs: P.kwargs) -> Task:
            made = f(*args, **kwargs)
            if not isinstance(made, Task):
                raise TaskError(f"@task {task_name!r} returned a {type(made).__name__}, not a Task")
            if not made._named:
                made.name = task_name
            bound = inspect.signature(f).bind_partial(*args, **kwargs)
            made.params = dict(bound.arguments)
            return made

        build.__loopwright_task__ = task_name  # type: ignore[attr-defined]
        _registry[task_name] = build
        return build

    return register(fn) if fn is not None else register


def registered_tasks() -> dict[str, TaskFactory]:
    """Every task registered with :func:`task`, by name."""
    return dict(_registry)


@contextlib.contextmanager
def on_sys_path(folder: Path | None) -> Iterator[None]:
    """``folder`` first on ``sys.path`` inside the block (nothing for ``None``), so that
    code from a task file can import the file's neighbours whenever it runs."""
    if folder is None:
        yield
        return
    entry = str(folder)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def _build(
    name: str, factory: TaskFactory, args: Mapping[str, Any], folder: Path | None = None
) -> Task:
    """The task ``factory`` makes with ``args``, checked against its signature and type
    hints first; ``folder`` (a task file's) is on ``sys.path`` while it runs."""
    try:
        bound = bind_task_args(name, factory, args)
    except ConfigurationError as ex:
        raise TaskError(str(ex)) from None
    with on_sys_path(folder):
        made = factory(**bound)
    made._folder = folder
    return made


def get_task(name: str, /, **args: Any) -> Task:
    """Build the registered task ``name`` with ``args``."""
    factory = _registry.get(name)
    if factory is None:
        known = ", ".join(sorted(_registry)) or "none"
        raise TaskError(f"no task named {name!r}; registered: {known}")
    return _build(name, factory, args)


def load_tasks(spec: str, args: Mapping[str, Any] | None = None) -> list[Task]:
    """Tasks from ``FILE.py`` (every ``@task`` in it), ``FILE.py@name`` (that one), or
    ``name`` (a task registered already), built with ``args``.

    Raises:
        TaskError: No such file or task, or the arguments do not fit.
    """
    args = dict(args or {})
    file, _, name = spec.partition("@")
    if not file.endswith(".py"):
        if name:
            raise TaskError(f"{spec!r}: give a Python file before '@' (FILE.py@task)")
        return [get_task(file, **args)]
    path, found = _file_tasks(file)
    if name:
        if name not in found:
            raise TaskError(f"{file!r} has no task {name!r}; it has: {', '.join(sorted(found))}")
        return [_build(name, found[name], args, path.parent)]
    return [_build(n, f, args, path.parent) for n, f in found.items()]


def task_names(file: str) -> list[str]:
    """The names of the ``@task`` functions ``file`` defines (it is imported; nothing is
    built). The next :func:`load_tasks` of the file in this process takes the module
    imported here instead of importing the file again (its top-level code runs once).

    Raises:
        TaskError: No such file, or it defines no task.
    """
    return list(_file_tasks(file, keep=True)[1])


_probed: dict[Path, ModuleType] = {}  # task files imported by task_names: for the next load


def _file_tasks(file: str, keep: bool = False) -> tuple[Path, dict[str, TaskFactory]]:
    path = Path(file).resolve()
    if not path.is_file():
        raise TaskError(f"no task file at {file!r}")
    module = _probed.pop(path, None)
    if module is None:
        try:
            module = import_file(path, "loopwright_tasks_")
        except ImportError as ex:
            raise TaskError(f"{file}: {ex}") from None
    if keep:
        _probed[path] = module
    found: dict[str, TaskFactory] = {}
    for value in vars(module).values():
        task_name = getattr(value, "__loopwright_task__", None)
        if task_name is not None and getattr(value, "__module__", None) == module.__name__:
            found[task_name] = value
    if not found:
        raise TaskError(f"{file!r} defines no task; decorate a function with @lw.task")
    return path, found
