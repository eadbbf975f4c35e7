"""An eval task: the calculator agent over 20 arithmetic questions shipped in the repo.

    loopwright eval examples/arithmetic.py                       # the embedded model
    loopwright eval examples/arithmetic.py -T level=easy --limit 5
    loopwright eval examples/arithmetic.py -m openai/gpt-4o-mini --max-samples 10

or from Python: ``lw.eval(arithmetic(), model="openai/gpt-4o-mini")``. Answers are
scored by the last number in them, within 0.01% of the target (so 7219.47 counts for
95297 / 13.2). Each sample may take ``max_steps`` model calls (``-T max_steps=10``) and
two minutes. The embedded model is tiny: expect it to run, not to score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from calculator import calculator  # noqa: F401 - registers the "calculator" agent

import loopwright as lw

DATA = Path(__file__).parent / "data" / "arithmetic.jsonl"


@lw.task
def arithmetic(level: Literal["all", "easy", "hard"] = "all", max_steps: int = 6) -> lw.Task:
    """The arithmetic questions; ``level`` is easy (one operation), hard, or all. The
    type hints are checked: ``-T level=medium`` or ``-T max_steps=abc`` is refused
    before any sample runs."""
    dataset = lw.json_dataset(DATA)
    if level != "all":
        dataset = dataset.filter(lambda s: s.metadata.get("level") == level)
    return lw.Task(
        dataset=dataset,
        agent=lw.get_agent("calculator", max_steps=max_steps),
        scorer=lw.match("numeric", rel_tolerance=1e-4),
        limits=[lw.time_limit(120)],
    )


if __name__ == "__main__":
    with lw.RichProgress() as progress:
        lw.eval(arithmetic(), progress=progress)
