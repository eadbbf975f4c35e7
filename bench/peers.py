"""Per-step overhead of peer agent frameworks, beside loopwright and the floor.

The same work as ``_per_step.py``: an agent of N steps (50) whose scripted model asks for
``add(a=i, b=1)`` one call per turn, N - 1 times, and then ends the run, so that it makes
exactly N model calls; the tool is a trivial async function. Every run counts the model's
calls and the tool's calls and fails unless they are N and N - 1 (a figure cannot come
from a run that stopped early). Each configuration runs once per round; rounds interleave
the configurations in a rotating order, and each figure is the median over the rounds
after the warm-up ones. The floor (``_scenarios.floor_agent``) and loopwright's native
configuration, without and with the run store (one file for every run, as a process
that makes many runs has), run in the same process; every ratio is against the floor.
The target (issue 22): loopwright native with the run store on at least 10x cheaper per
step, in CPU time, than the fastest peer of the run.

Peers (each skipped, with the reason printed, when it cannot be imported):

- pydantic-ai: ``Agent.run`` with a ``FunctionModel`` whose function returns the scripted
  ``ModelResponse`` (usage given, as a provider gives it; a second row lets the test
  model estimate usage from the messages, as it does when none is given).
- inspect-ai: a basic tool loop (a custom ``@agent`` made of the public ``Model.generate``
  and ``execute_tools``) run by ``inspect_ai.agent.run``, with ``mockllm/model`` and
  ``custom_outputs``; and ``react()``, which runs only inside a sample, hence inside
  ``eval_async`` (one sample; it writes an ``.eval`` log to a temporary folder).
- openai-agents: ``Runner.run`` with a custom ``Model`` returning scripted
  ``ModelResponse`` objects; tracing disabled, and tracing on with no trace processor
  (the default one exports to the network, so it is removed).

Install and run (a venv of its own; never loopwright's dev venv; only PyPI is needed)::

    python3.11 -m venv /tmp/peers-venv
    /tmp/peers-venv/bin/pip install -e . pydantic-ai-slim inspect-ai openai-agents psutil
    /tmp/peers-venv/bin/python bench/peers.py [--rounds 15] [--steps 50] [--no-eval]

Run with pydantic-ai-slim 2.68.0, inspect-ai 0.3.285 and openai-agents 0.24.0 on
Python 3.11.7 (the versions are printed with the figures). Markdown goes to
``bench/results/peers.md``.
"""

import argparse
import asyncio
import atexit
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from _report import Report
from _scenarios import Config, Runner, time_floor

HERE = Path(__file__).resolve().parent
TASK = "Add the numbers."
FLOOR = "floor (bare asyncio, dicts)"
STORE = "loopwright native + run store"


@dataclass
class Calls:
    """What the current run did: model calls and ``add`` calls."""

    model: int = 0
    tool: int = 0


CALLS = Calls()


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    cpu1: list[float] = field(default_factory=list)


Go = Callable[[], Awaitable[None]]


class Subject(ABC):
    """One configuration to measure."""

    name: str
    version: str = ""
    driven: str = ""

    @abstractmethod
    async def time_one(self, steps: int) -> tuple[float, float]:
        """Wall and CPU seconds of one run of ``steps`` steps."""


class Peer(Subject):
    """A peer framework: ``prepare`` builds a run (untimed), then it is timed and checked."""

    @abstractmethod
    def prepare(self, steps: int) -> Go:
        """A run of ``steps`` steps, ready to start; it checks its own result."""

    async def time_one(self, steps: int) -> tuple[float, float]:
        """Wall and CPU seconds of one run of ``steps`` steps."""
        go = self.prepare(steps)
        CALLS.model = CALLS.tool = 0
        cpu, start = time.process_time(), time.perf_counter()
        await go()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        if (CALLS.model, CALLS.tool) != (steps, steps - 1):
            raise RuntimeError(
                f"{self.name}: {CALLS.model} model calls and {CALLS.tool} tool calls "
                f"for {steps} steps (expected {steps} and {steps - 1})"
            )
        return wall, cpu


class Floor(Subject):
    name = FLOOR
    driven = "`_scenarios.floor_agent` (20 runs per sample)"

    async def time_one(self, steps: int) -> tuple[float, float]:
        return await time_floor(steps, 20)  # asserts the length of the conversation


class Loopwright(Subject):
    name = "loopwright native"
    driven = "`lw.run(lw.react(tools=[add]))`, mock model (`_scenarios.Runner`)"

    def __init__(self, store: bool = False) -> None:
        db = os.path.join(tempfile.mkdtemp(prefix="lw-peers-"), "runs.db") if store else None
        if store:
            self.name = STORE
            self.driven = self.driven + ", `db=` one run store file for every run"
        self.runner = Runner(Config(self.name, store=store), db)
        self.version = metadata.version("loopwright")

    async def time_one(self, steps: int) -> tuple[float, float]:
        return await self.runner.time_one(steps)  # checks that the run ended with submit


# --- pydantic-ai --------------------------------------------------------------------------
def pydantic_ai_subjects() -> list[Subject]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    version = metadata.version("pydantic-ai-slim")

    async def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number.
        """
        CALLS.tool += 1
        return a + b

    agent = Agent(tools=[add])

    class PydanticAI(Peer):
        def __init__(self, usage: bool) -> None:
            self.usage = usage
            self.version = version
            self.name = "pydantic-ai" + ("" if usage else ", FunctionModel estimates usage")
            self.driven = "`Agent.run(model=FunctionModel(f))`, f returns the scripted response"

        def prepare(self, steps: int) -> Go:
            replies: list[ModelResponse] = []
            for i in range(steps):
                part = (
                    ToolCallPart("add", {"a": i, "b": 1}, tool_call_id=f"c{i}")
                    if i < steps - 1
                    else TextPart("done")
                )
                replies.append(ModelResponse(parts=[part]))
                if self.usage:
                    replies[-1].usage = RequestUsage(input_tokens=1, output_tokens=1)

            async def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
                CALLS.model += 1
                return replies[CALLS.model - 1]

            model = FunctionModel(reply)
            limits = UsageLimits(request_limit=steps + 1)

            async def go() -> None:
                result = await agent.run(TASK, model=model, usage_limits=limits)
                assert result.output == "done", result.output
                assert result.usage.requests == steps, result.usage

            return go

    return [PydanticAI(usage=True), PydanticAI(usage=False)]


# --- inspect-ai ---------------------------------------------------------------------------
def inspect_ai_subjects(with_eval: bool) -> list[Subject]:
    from inspect_ai.agent import Agent, AgentState, agent, react, run
    from inspect_ai.model import (
        ChatMessage,
        GenerateConfig,
        Model,
        ModelOutput,
        ModelUsage,
        execute_tools,
        get_model,
    )
    from inspect_ai.tool import Tool, ToolChoice, ToolInfo, tool

    version = metadata.version("inspect-ai")

    @tool
    def add() -> Tool:
        async def execute(a: int, b: int) -> int:
            """Add two integers.

            Args:
                a: The first number.
                b: The second number.
            """
            CALLS.tool += 1
            return a + b

        return execute

    def scripted(steps: int, last: str) -> Model:
        """``mockllm/model`` whose outputs are the script (usage given: no token counting)."""
        outputs: list[ModelOutput] = []
        for i in range(steps):
            if i < steps - 1:
                out = ModelOutput.for_tool_call("mockllm/model", "add", {"a": i, "b": 1})
            elif last == "submit":
                out = ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "done"})
            else:
                out = ModelOutput.from_content("mockllm/model", "done")
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            outputs.append(out)

        def reply(
            input: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice, c: GenerateConfig
        ) -> ModelOutput:
            CALLS.model += 1
            return outputs[CALLS.model - 1]

        return get_model("mockllm/model", custom_outputs=reply, memoize=False)

    @agent
    def tool_loop(model: Model) -> Agent:
        tools = [add()]

        async def execute(state: AgentState) -> AgentState:
            while True:
                state.output = await model.generate(state.messages, tools)
                state.messages.append(state.output.message)
                if not state.output.message.tool_calls:
                    return state
                messages, _ = await execute_tools(state.messages, tools)
                state.messages.extend(messages)

        return execute

    class InspectLoop(Peer):
        name = "inspect-ai, tool loop"
        driven = "`agent.run()` of a `Model.generate` + `execute_tools` loop, `mockllm/model`"

        def __init__(self) -> None:
            self.version = version

        def prepare(self, steps: int) -> Go:
            loop = tool_loop(scripted(steps, "text"))

            async def go() -> None:
                state = await run(loop, TASK)
                assert state.output.completion == "done", state.output.completion
                assert len(state.messages) == 2 * steps, len(state.messages)

            return go

    subjects: list[Subject] = [InspectLoop()]
    if not with_eval:
        return subjects

    from inspect_ai import Task, eval_async
    from inspect_ai.dataset import Sample
    from inspect_ai.util._display import init_display_type  # no public way to turn it off

    init_display_type("none")  # eval_async otherwise prints a "plain" progress display
    log_dir = tempfile.mkdtemp(prefix="peers-inspect-logs-")
    atexit.register(shutil.rmtree, log_dir, ignore_errors=True)

    class InspectEval(Peer):
        name = "inspect-ai, react() in eval_async (writes a log)"
        driven = "`eval_async(Task(1 sample, solver=react(tools=[add])))`, `mockllm/model`"

        def __init__(self) -> None:
            self.version = version

        def prepare(self, steps: int) -> Go:
            model = scripted(steps, "submit")
            task = Task(dataset=[Sample(input=TASK)], solver=react(tools=[add()]), name="peers")

            async def go() -> None:
                (log,) = await eval_async(
                    task,
                    model=model,
                    log_dir=log_dir,
                    log_samples=False,
                    log_realtime=False,
                    score=False,
                )
                assert log.status == "success", log.error

            return go

    return [*subjects, InspectEval()]


# --- openai-agents ------------------------------------------------------------------------
def openai_agents_subjects() -> list[Subject]:
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    from openai.types.responses.response_prompt_param import ResponsePromptParam

    from agents import (
        Agent,
        AgentOutputSchemaBase,
        Handoff,
        Model,
        ModelResponse,
        ModelSettings,
        ModelTracing,
        RunConfig,
        Runner,
        Tool,
        TResponseInputItem,
        Usage,
        function_tool,
        set_trace_processors,
    )

    version = metadata.version("openai-agents")
    set_trace_processors([])  # the default processor exports traces over the network

    @function_tool
    async def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number.
        """
        CALLS.tool += 1
        return a + b

    class Scripted(Model):
        """A model that returns the next scripted response, whatever it is asked."""

        def __init__(self, replies: list[ModelResponse]) -> None:
            self.replies = replies

        async def get_response(
            self,
            system_instructions: str | None,
            input: str | list[TResponseInputItem],
            model_settings: ModelSettings,
            tools: list[Tool],
            output_schema: AgentOutputSchemaBase | None,
            handoffs: list[Handoff],
            tracing: ModelTracing,
            *,
            previous_response_id: str | None,
            conversation_id: str | None,
            prompt: ResponsePromptParam | None,
        ) -> ModelResponse:
            CALLS.model += 1
            return self.replies[CALLS.model - 1]

        def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise NotImplementedError

    agent: Agent[None] = Agent(name="adder", instructions="Add the numbers.", tools=[add])

    class OpenAIAgents(Peer):
        def __init__(self, tracing: bool) -> None:
            self.tracing = tracing
            self.version = version
            self.name = "openai-agents, " + (
                "tracing on (no processor)" if tracing else "no tracing"
            )
            self.driven = "`Runner.run(agent, run_config=RunConfig(model=Scripted(...)))`"

        def prepare(self, steps: int) -> Go:
            replies: list[ModelResponse] = []
            for i in range(steps):
                item: Any = (
                    ResponseFunctionToolCall(
                        arguments=json.dumps({"a": i, "b": 1}),
                        call_id=f"c{i}",
                        name="add",
                        type="function_call",
                    )
                    if i < steps - 1
                    else ResponseOutputMessage(
                        id="m",
                        content=[
                            ResponseOutputText(annotations=[], text="done", type="output_text")
                        ],
                        role="assistant",
                        status="completed",
                        type="message",
                    )
                )
                usage = Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2)
                replies.append(ModelResponse(output=[item], usage=usage, response_id=None))
            config = RunConfig(model=Scripted(replies), tracing_disabled=not self.tracing)

            async def go() -> None:
                result = await Runner.run(agent, TASK, max_turns=steps + 1, run_config=config)
                assert result.final_output == "done", result.final_output
                assert result.context_wrapper.usage.requests == steps

            return go

    return [OpenAIAgents(tracing=False), OpenAIAgents(tracing=True)]


# --- measuring ----------------------------------------------------------------------------
def subjects(with_eval: bool) -> list[Subject]:
    found: list[Subject] = [Floor(), Loopwright(), Loopwright(store=True)]
    makers: list[tuple[str, Callable[[], list[Subject]]]] = [
        ("pydantic-ai", pydantic_ai_subjects),
        ("inspect-ai", lambda: inspect_ai_subjects(with_eval)),
        ("openai-agents", openai_agents_subjects),
    ]
    for peer, make in makers:
        try:
            found.extend(make())
        except ImportError as e:
            print(f"skipped {peer}: not importable ({e})", flush=True)
    return found


async def measure(subs: list[Subject], steps: int, rounds: int, warmup: int) -> dict[str, Samples]:
    samples = {s.name: Samples() for s in subs}
    for r in range(warmup + rounds):
        k = r % len(subs)
        for s in subs[k:] + subs[:k]:
            wall, cpu = await s.time_one(steps)
            _, cpu1 = await s.time_one(1)
            if r >= warmup:
                samples[s.name].wall.append(wall)
                samples[s.name].cpu.append(cpu)
                samples[s.name].cpu1.append(cpu1)
        print(f"  round {r + 1}/{warmup + rounds}", file=sys.stderr, flush=True)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="measured rounds")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up rounds")
    parser.add_argument("--steps", type=int, default=50, help="steps (model calls) per run")
    parser.add_argument("--no-eval", action="store_true", help="leave out inspect's eval row")
    parser.add_argument("--out", default=str(HERE / "results" / "peers.md"))
    args = parser.parse_args()
    if args.steps < 2:
        parser.error("--steps must be at least 2")

    subs = subjects(with_eval=not args.no_eval)
    report = Report()
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    report.line(
        f"Per-step overhead of peer frameworks: {args.steps}-step agent, median of "
        f"{args.rounds} rounds after {args.warmup} warm-up; Python {platform.python_version()}, "
        f"load average {load} at the start."
    )
    samples = asyncio.run(measure(subs, args.steps, args.rounds, args.warmup))

    med = statistics.median
    n = args.steps
    floor_cpu = med(samples[FLOOR].cpu) / n
    floor_wall = med(samples[FLOOR].wall) / n
    rows = []
    for s in subs:
        x = samples[s.name]
        cpu, wall = med(x.cpu) / n, med(x.wall) / n
        beyond = (med(x.cpu) - med(x.cpu1)) / (n - 1)
        rows.append(
            [
                s.name,
                s.version or "-",
                f"{cpu * 1e6:,.1f}",
                f"{wall * 1e6:,.1f}",
                f"{cpu / floor_cpu:,.0f}x",
                f"{wall / floor_wall:,.0f}x",
                f"{beyond * 1e6:,.1f}",
            ]
        )
    report.table(
        f"Per-step overhead ({n}-step agent; µs per step)",
        [
            "configuration",
            "version",
            "CPU µs/step",
            "wall µs/step",
            "CPU / floor",
            "wall / floor",
            "CPU µs/step beyond a 1-step run",
        ],
        rows,
    )
    peers = [s for s in subs if isinstance(s, Peer)]
    if peers:
        fastest = min(peers, key=lambda s: med(samples[s.name].cpu))
        ours, theirs = med(samples[STORE].cpu), med(samples[fastest.name].cpu)
        report.target(
            "native with the run store on at least 10x cheaper per step (CPU) than the "
            f"fastest peer ({fastest.name}) (issue 22)",
            f"{theirs / ours:.1f}x cheaper ({ours / n * 1e6:,.1f} vs {theirs / n * 1e6:,.1f} µs)",
            theirs / ours >= 10,
        )
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    report.line(f"\nLoad average at the end: {load}.")
    report.line("\nHow each was driven:\n")
    for s in subs:
        report.line(f"- {s.name}: {s.driven}")

    report.finish()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.markdown())
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
