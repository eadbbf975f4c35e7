"""Lifecycle hooks: cap what a run may spend, and redact secrets from tool output.

    python examples/hooks.py                           # a scripted model, offline
    python examples/hooks.py --model openai/gpt-4o-mini --max-usd 0.01

A hook is a subclass of ``lw.Hooks`` that overrides the methods it needs (every method
is an async no-op by default). ``run(..., hooks=[...])`` registers hooks for the whole
run, every agent in it included; ``lw.react(..., hooks=[...])`` for one agent.

- ``SpendCap`` adds up each model call's usage in ``after_model`` and, past the budget,
  raises ``lw.StopRun``: the run ends cleanly, ``state.completed == "stopped"`` and
  ``state.error`` says why.
- ``RedactSecrets`` rewrites each tool result in ``after_tool``: the redacted result is
  the only one the model, the state, the transcript and the run store ever see.
- ``OnlyFiles`` vetoes tool calls in ``before_tool``: a call to read a file that is not
  on its list is not run, and the model gets the returned message as the call's result.
  It is registered on one agent (``lw.react(..., hooks=[...])``), so it guards that
  agent wherever it runs.

The run store records how the run ended: a run a hook stopped is listed with the status
``stopped`` (``loopwright runs list --status stopped``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import loopwright as lw


class SpendCap(lw.Hooks):
    """End the run once its model calls cost more than ``max_usd``.

    Prices are per million tokens. One instance per run: it counts what it has seen.
    """

    def __init__(
        self, max_usd: float, usd_per_m_input: float = 0.15, usd_per_m_output: float = 0.60
    ) -> None:
        self.max_usd = max_usd
        self.prices = (usd_per_m_input, usd_per_m_output)
        self.spent = 0.0

    async def after_model(self, output: lw.ModelOutput) -> None:
        usage = output.usage
        if usage is not None:
            per_input, per_output = self.prices
            self.spent += (usage.input_tokens * per_input + usage.output_tokens * per_output) / 1e6
        if self.spent > self.max_usd:
            raise lw.StopRun(f"spent ${self.spent:.4f}, over the cap of ${self.max_usd:.4f}")


SECRET_PATTERNS = [
    r"sk-[A-Za-z0-9_-]{16,}",  # OpenAI-style API keys
    r"AKIA[0-9A-Z]{16}",  # AWS access key ids
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
]


class RedactSecrets(lw.Hooks):
    """Replace secrets in every tool result with ``[REDACTED]``: what matches
    ``patterns``, and the values of ``secrets`` (e.g. this process's API keys)."""

    def __init__(self, secrets: Iterable[str] = (), patterns: Iterable[str] = SECRET_PATTERNS):
        known = [re.escape(s) for s in secrets if len(s) >= 8]  # short values: false hits
        alternatives = [*known, *patterns]
        # (?!) matches nothing: with no secrets and no patterns, nothing is redacted
        self.pattern = re.compile("|".join(alternatives) if alternatives else "(?!)")

    def redact(self, text: str) -> str:
        return self.pattern.sub("[REDACTED]", text)

    async def after_tool(self, call: lw.ToolCall, result: lw.ToolMessage) -> lw.ToolMessage | None:
        content = self.redact(result.content)
        if content == result.content:
            return None  # nothing to hide: keep the result as it is
        update: dict[str, Any] = {"content": content}
        if result.error is not None:  # an error's text is shown to the model too
            error = result.error.model_copy(update={"message": self.redact(result.error.message)})
            update["error"] = error
        return result.model_copy(update=update)


class OnlyFiles(lw.Hooks):
    """Deny ``read_config`` calls for files not in ``allowed``, with a message to the
    model (the call is not run; the run goes on)."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = frozenset(allowed)
        self.denied: list[str] = []

    async def before_tool(self, call: lw.ToolCall) -> str | None:
        name = call.arguments.get("name")
        if call.function != "read_config" or name in self.allowed:
            return None  # let the call run
        self.denied.append(str(name))
        return f"reading {name!r} is not allowed; the files you may read: {sorted(self.allowed)}"


def secrets_from_environment() -> list[str]:
    """The values of environment variables whose names say they are secret."""
    secret = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
    return [value for name, value in os.environ.items() if secret.search(name)]


@lw.tool
def read_config(name: str) -> str:
    """Read a configuration file of the deployment.

    Args:
        name: The file's name, e.g. "app.env".
    """
    return f"# {name}\nREGION=eu-west-1\nOPENAI_API_KEY=sk-demo-9f8e7d6c5b4a3f2e1d0c\nDEBUG=0"


def scripted_model() -> lw.Model:
    """A model that reads the config over and over (each call "costs" 50k tokens)."""
    usage = lw.Usage(input_tokens=40_000, output_tokens=10_000, total_tokens=50_000)
    reply = lw.ModelOutput.for_tool_call("read_config", {"name": "app.env"})
    return lw.get_model("mock", outputs=[replace(reply, usage=usage)], repeat=True)


async def main(
    model: str | lw.Model | None = None, max_usd: float = 0.03, db: Any = False
) -> lw.AgentState:
    agent = lw.react(
        prompt="Find the deployment's region in its configuration, then submit it.",
        tools=[read_config],
    )
    hooks = [SpendCap(max_usd), RedactSecrets(secrets_from_environment())]
    return await lw.run(
        agent,
        "Which region is the deployment in?",
        model=model or scripted_model(),
        hooks=hooks,
        db=db,
    )


async def guarded(model: str | lw.Model | None = None, db: Any = False) -> lw.AgentState:
    """An agent that may read ``app.env`` only, under the same spend cap."""
    only = OnlyFiles(["app.env"])
    agent = lw.react(
        prompt="Find the deployment's region in its configuration, then submit it.",
        tools=[read_config],
        hooks=[only],  # the agent's own hook: it guards this agent wherever it runs
    )
    script = [
        lw.ModelOutput.for_tool_call("read_config", {"name": "../../etc/shadow"}),
        lw.ModelOutput.for_tool_call("read_config", {"name": "app.env"}),
        lw.ModelOutput.for_tool_call("submit", {"answer": "eu-west-1"}),
    ]
    return await lw.run(
        agent,
        "Which region is the deployment in?",
        model=model or lw.get_model("mock", outputs=script),
        hooks=[SpendCap(0.03), RedactSecrets(secrets_from_environment())],
        db=db,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="a model name (default: scripted)")
    parser.add_argument("--max-usd", type=float, default=0.03, help="the spend cap, in USD")
    args = parser.parse_args()
    state = asyncio.run(main(args.model, args.max_usd))
    print(f"completed: {state.completed}  {state.error or state.text}")
    for message in state.messages:
        if isinstance(message, lw.ToolMessage):
            print(f"tool {message.function}: {message.content!r}")
