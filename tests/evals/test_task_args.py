"""Task arguments are checked against the @task function's signature and type hints
before the task is built; a task file's code can import its neighbours; a task needs
at least one sample."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

import pytest

import loopwright as lw
from loopwright.evals import TaskArgText, parse_task_args

DATA = [{"input": "a", "target": "a"}]


@lw.task
def typed(
    max_steps: int = 10,
    level: Literal["easy", "hard"] = "easy",
    name: str = "x",
    tags: list[str] | None = None,
    ratio: float = 0.5,
    strict: bool = False,
) -> lw.Task:
    return lw.Task(DATA, name="typed")


@lw.task
def needs(n: int) -> lw.Task:
    return lw.Task(DATA)


def text(**kwargs: str) -> dict[str, TaskArgText]:
    return {k: TaskArgText(v) for k, v in kwargs.items()}


def test_text_values_are_read_by_the_type_hint() -> None:
    task = lw.get_task(
        "typed",
        **text(max_steps="3", level="hard", name="007", tags='["a", "b"]', ratio="1e-1"),
        **text(strict="true"),
    )
    assert task.params == {
        "max_steps": 3,
        "level": "hard",
        "name": "007",  # a str stays the text typed, not the number 7
        "tags": ["a", "b"],
        "ratio": 0.1,
        "strict": True,
    }
    assert lw.get_task("typed", **text(tags="null")).params == {"tags": None}


def test_bad_values_are_refused_naming_the_parameter_and_type() -> None:
    with pytest.raises(lw.TaskError, match=r"max_steps='abc' is not a valid int"):
        lw.get_task("typed", **text(max_steps="abc"))
    with pytest.raises(
        lw.TaskError, match=r"level='medium' is not a valid Literal\['easy', 'hard'\]"
    ):
        lw.get_task("typed", **text(level="medium"))
    with pytest.raises(lw.TaskError, match=r"tags='\[1, \{\}\]' is not a valid"):
        lw.get_task("typed", **text(tags="[1, {}]"))
    # Python values are checked too ("3" converts like a form field would; 3.5 does not)
    assert lw.get_task("typed", max_steps="3").params == {"max_steps": 3}
    with pytest.raises(lw.TaskError, match=r"max_steps=3\.5 is not a valid int"):
        lw.get_task("typed", max_steps=3.5)
    huge = "x" * 10_000
    with pytest.raises(lw.TaskError) as info:
        lw.get_task("typed", **text(max_steps=huge))
    assert len(str(info.value)) < 400  # the value is cut in the message


def test_unknown_and_missing_arguments() -> None:
    with pytest.raises(lw.TaskError, match="has no parameter 'size'"):
        lw.get_task("typed", size=3)
    with pytest.raises(lw.TaskError, match=r"needs a value for 'n' \(-T n=VALUE\)"):
        lw.get_task("needs")
    assert lw.get_task("needs", **text(n="1")).params == {"n": 1}


def test_unhinted_parameters_take_json_or_text(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        "import loopwright as lw\n"
        "@lw.task\n"
        "def loose(a=1, b='x', **rest):\n"
        "    return lw.Task([{'input': 'q'}])\n"
    )
    args = parse_task_args(["a=[1, 2]", "b=hello", "c=3"], as_text=True)
    assert all(isinstance(v, TaskArgText) for v in args.values())
    [task] = lw.load_tasks(str(tmp_path / "t.py"), args)
    assert task.params == {"a": [1, 2], "b": "hello", "rest": {"c": 3}}


def test_an_unresolvable_hint_leaves_only_its_parameter_unchecked(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        textwrap.dedent(
            """
            from __future__ import annotations
            from typing import TYPE_CHECKING
            import loopwright as lw
            if TYPE_CHECKING:
                from somewhere_else import Config

            @lw.task
            def partly(cfg: Config | None = None, n: int = 1) -> lw.Task:
                return lw.Task([{"input": "q"}])
            """
        )
    )
    path = str(tmp_path / "t.py")
    [task] = lw.load_tasks(path, parse_task_args(["cfg=anything", "n=2"], as_text=True))
    assert task.params == {"cfg": "anything", "n": 2}
    with pytest.raises(lw.TaskError, match="n='x' is not a valid int"):
        lw.load_tasks(path, parse_task_args(["n=x"], as_text=True))


def test_a_task_function_can_import_its_neighbours(tmp_path: Path) -> None:
    (tmp_path / "neighbour_for_eval.py").write_text("ANSWER = '42'\n")
    (tmp_path / "lazy_neighbour_for_eval.py").write_text("def grade(s): return 1.0\n")
    (tmp_path / "t.py").write_text(
        textwrap.dedent(
            """
            import loopwright as lw

            def score(state, sample):
                from lazy_neighbour_for_eval import grade  # imported while a sample runs
                return grade(state)

            @lw.task
            def inner() -> lw.Task:
                from neighbour_for_eval import ANSWER  # imported when the task is built
                return lw.Task([{"input": "q", "target": ANSWER}], scorer=lw.scorer(score),
                               agent=lw.react(submit=False))
            """
        )
    )
    [task] = lw.load_tasks(str(tmp_path / "t.py"))
    assert task.dataset[0].target == "42"
    assert str(tmp_path) not in __import__("sys").path  # only while the task's code runs
    [result] = lw.eval(task, model=lw.get_model("mock", outputs=["ok"]), db=False)
    assert result.errors == 0 and result.metrics["score"]["accuracy"] == 1.0


def test_a_task_needs_samples(tmp_path: Path) -> None:
    with pytest.raises(lw.TaskError, match="at least one sample"):
        lw.Task([])
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(
        lw.TaskError, match=r"at least one sample; the dataset '.*empty.jsonl' has none"
    ):
        lw.Task(lw.json_dataset(tmp_path / "empty.jsonl"))
    with pytest.raises(lw.ConfigurationError, match="limit must be at least 1"):
        lw.eval(lw.Task(DATA), limit=0, db=False)
