"""``loopwright eval --json`` prints strict JSON whatever the task holds: task
arguments that are no JSON type (a path, an enum) once checked against their hints, a
metric that is infinite; and no task argument that looks like a secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._cli import cli

TASKS = """
import enum
from pathlib import Path
import loopwright as lw

class Level(enum.Enum):
    easy = "easy"

@lw.task
def typed(where: Path = Path("."), level: Level = Level.easy, api_key: str = "") -> lw.Task:
    return lw.Task(
        [{"id": "q1", "input": "2+2", "target": "4"}],
        agent=lw.react(submit=False),
        scorer=lw.scorer(name="s", metrics=[lw.Metric("ratio", lambda v: float("inf"))])(
            lambda state, sample: 1.0
        ),
        model=lw.get_model("mock", outputs=lambda m, t, c: "It is 4."),
    )
"""


def strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_json_output_of_typed_arguments_and_an_infinite_metric(tmp_path: Path) -> None:
    (tmp_path / "tasks.py").write_text(TASKS)
    r = cli(
        "eval", "tasks.py", "-T", "where=/tmp/data", "-T", "level=easy",
        "-T", "api_key=sk-live-123", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0, r.err
    [row] = strict(r.out)["tasks"]
    assert row["params"] == {"where": "/tmp/data", "level": "easy"}
    assert "sk-live-123" not in r.out
    assert row["metrics"] == {"s": {"ratio": None}}
    assert (row["scored"], row["errors"]) == (1, 0)


def test_json_rows_leave_out_a_secret_held_in_a_typed_argument() -> None:
    # a task argument that is an object (a dataclass, a pydantic model) holding a field
    # named like a secret: once made JSON, that field is left out as any other
    import dataclasses
    from datetime import UTC, datetime

    import pydantic

    from loopwright.evals import EvalResult
    from loopwright.evals._progress import summary_rows

    @dataclasses.dataclass
    class Creds:
        user: str
        api_key: str

    class Config(pydantic.BaseModel):
        token: str
        region: str

    result = EvalResult(task="t", model="mock", started=datetime.now(UTC))
    result.params = {
        "creds": Creds("me", "sk-live-123"),
        "config": Config(token="tk-9", region="eu"),
    }
    [row] = summary_rows([result])
    text = json.dumps(row)
    assert "sk-live-123" not in text and "tk-9" not in text
    assert row["params"] == {"creds": {"user": "me"}, "config": {"region": "eu"}}
