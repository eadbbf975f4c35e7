"""Tasks: construction, the @task registry, loading from files, task arguments."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.evals import parse_task_args

TASK_FILE = """
import loopwright as lw
from helper import TARGET  # a neighbour of the task file

@lw.task
def first(n: int = 2, word: str = "x") -> lw.Task:
    return lw.Task([{"input": word, "target": TARGET}] * 1, scorer=lw.match(), epochs=n)

@lw.task(name="second_task")
def second() -> lw.Task:
    return lw.Task([{"input": "a"}, {"input": "b"}], name="explicit")

@lw.task
def not_a_task() -> str:
    return "oops"
"""


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    (tmp_path / "helper.py").write_text("TARGET = 'yes'\n")
    path = tmp_path / "tasks.py"
    path.write_text(textwrap.dedent(TASK_FILE))
    return path


def test_task_defaults() -> None:
    task = lw.Task([{"input": "a"}])
    assert task.name == "task" and task.epochs == 1 and task.scorer == []
    assert callable(task.agent)  # a standard react agent
    named = lw.Task(lw.as_dataset([{"input": "a"}], name="qa"))
    assert named.name == "qa"


def test_the_scorer_passed_is_the_scorer_read() -> None:
    match = lw.match()
    assert lw.Task([{"input": "a"}], scorer=match).scorer == [match]
    both = lw.Task([{"input": "a"}], scorer=[match, lw.includes()])
    assert [s.name for s in both.scorer] == ["match", "includes"]
    assert not hasattr(both, "scorers")  # one name: what you pass is what you read


def test_task_validates_its_arguments() -> None:
    with pytest.raises(lw.TaskError, match="epochs"):
        lw.Task([{"input": "a"}], epochs=0)
    with pytest.raises(lw.TaskError, match="Limits"):
        lw.Task([{"input": "a"}], limits=[10])  # type: ignore[list-item]
    with pytest.raises(lw.ConfigurationError, match="no agent named"):
        lw.Task([{"input": "a"}], agent="no-such-agent")


def test_fresh_limits_are_new_objects_of_the_same_kind() -> None:
    limits = [lw.step_limit(3), lw.time_limit(2.5), lw.token_limit(100)]
    task = lw.Task([{"input": "a"}], limits=limits)
    fresh = task.fresh_limits()
    assert [(f.type, f.limit) for f in fresh] == [("step", 3), ("time", 2.5), ("token", 100)]
    assert all(f is not old for f, old in zip(fresh, limits, strict=True))


def test_load_every_task_of_a_file(task_file: Path) -> None:
    with pytest.raises(lw.TaskError, match="returned a str"):
        lw.load_tasks(str(task_file))  # not_a_task is in it


def test_load_one_task_with_arguments(task_file: Path) -> None:
    [task] = lw.load_tasks(f"{task_file}@first", {"n": 3, "word": "hi"})
    assert task.name == "first" and task.epochs == 3
    assert task.params == {"n": 3, "word": "hi"}
    assert task.dataset[0].input == "hi" and task.dataset[0].target == "yes"
    [second] = lw.load_tasks(f"{task_file}@second_task")
    assert second.name == "explicit"  # an explicit Task name wins


def test_registered_tasks_by_name(task_file: Path) -> None:
    lw.load_tasks(f"{task_file}@first")
    assert "first" in lw.registered_tasks()
    assert lw.get_task("first", n=1).epochs == 1
    assert lw.load_tasks("first")[0].name == "first"


def test_load_errors(task_file: Path) -> None:
    with pytest.raises(lw.TaskError, match="no task file"):
        lw.load_tasks("missing.py")
    with pytest.raises(lw.TaskError, match="has no task 'nope'; it has: first"):
        lw.load_tasks(f"{task_file}@nope")
    with pytest.raises(lw.TaskError, match=r"no parameter 'size'.*n, word"):
        lw.load_tasks(f"{task_file}@first", {"size": 3})
    with pytest.raises(lw.TaskError, match="no task named 'unknown-task'"):
        lw.load_tasks("unknown-task")
    empty = task_file.parent / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(lw.TaskError, match="defines no task"):
        lw.load_tasks(str(empty))


def test_parse_task_args() -> None:
    assert parse_task_args(["n=3", "word=hello", "flag=true", "xs=[1, 2]", "s=a=b"]) == {
        "n": 3,
        "word": "hello",
        "flag": True,
        "xs": [1, 2],
        "s": "a=b",
    }
    with pytest.raises(lw.ConfigurationError, match="key=value"):
        parse_task_args(["novalue"])


def test_task_args_read_json_values_and_files(tmp_path: Path) -> None:
    (tmp_path / "cfg.json").write_text('{"level": "hard"}')
    args = parse_task_args(["n=3", "name=x", f"cfg=@{tmp_path / 'cfg.json'}"])
    assert args == {"n": 3, "name": "x", "cfg": {"level": "hard"}}
    with pytest.raises(lw.ConfigurationError, match="expected key=value"):
        parse_task_args(["n"])
    with pytest.raises(lw.ConfigurationError, match="cannot read"):
        parse_task_args([f"cfg=@{tmp_path / 'missing.json'}"])
