"""Greedy decoding under a grammar that steps back out of a dead end.

Greedy decoding under a grammar picks each token among those the grammar allows, one
at a time, and cannot see that a token leads where the grammar allows almost nothing
the model wants. The embedded model's thought bans digits (``plain_thought``): after
``The answer is`` the model's likeliest token is a bare space (its tokenizer writes a
number as a space, then digit tokens), and after that space the grammar leaves it
about 0.02 % of its probability; the likeliest of what is left was ``."``, and the
thought read ``The answer is .``.

Here, a token after which the grammar leaves the model less than :data:`DEAD_END` of
its next-token probability is a dead end (unless the grammar is complete there, or the
token was the only one allowed): it is taken back and the next likeliest allowed token
at the same place is tried, at most :data:`MAX_STEPS_BACK` times per value. So
``The answer is the product of the two numbers.``: every token is still the model's
likeliest among those tried, and the text is what it produced (no token is edited or
removed after the fact; a token taken back was never part of the reply or shown).

The cost: one model evaluation per step back (a few per thought at most), plus the
grammar applied to the vocabulary each token, as llama.cpp's own sampler does.
Tokens are passed to ``on_text`` one behind the decoding (only the last token can be
taken back).
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DEAD_END", "MAX_STEPS_BACK", "FreeText", "greedy_steps_back"]

DEAD_END = 0.01
"""A token after which the grammar leaves the model less than this share of its
next-token probability is taken back (if another is allowed at its place)."""
MAX_STEPS_BACK = 8
"""The most single tokens taken back while writing one value."""
MAX_RESTARTS = 3
"""The most times one value is begun again at its first word."""


@dataclass(frozen=True, slots=True)
class FreeText:
    """The grammar of a free-text value (a string, not an enum or a constant), written
    with :func:`greedy_steps_back` when decoding is greedy."""

    gbnf: str

    @staticmethod
    def of(schema: Any) -> bool:
        """Whether a value of ``schema`` is free text."""
        return (
            isinstance(schema, dict)
            and schema.get("type") == "string"
            and not any(k in schema for k in ("enum", "const", "anyOf", "oneOf", "$ref"))
        )


def _log_softmax(llm: Any) -> Any:
    import numpy as np

    logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
    logits = logits.astype(np.float64)
    top = logits.max()
    return logits - top - np.log(np.exp(logits - top).sum())


class _Grammar:
    """A llama.cpp grammar sampler: the tokens it allows, a token accepted, a copy."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @classmethod
    def parse(cls, llm: Any, gbnf: str) -> _Grammar | None:
        from llama_cpp import llama_cpp

        handle = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, gbnf.encode("utf-8"), b"root"
        )
        return cls(handle) if handle else None

    def copy(self) -> _Grammar:
        from llama_cpp import llama_cpp

        return _Grammar(llama_cpp.llama_sampler_clone(self.handle))

    def accept(self, token: int) -> None:
        from llama_cpp import llama_cpp

        llama_cpp.llama_sampler_accept(self.handle, token)

    def free(self) -> None:
        from llama_cpp import llama_cpp

        if self.handle:
            llama_cpp.llama_sampler_free(self.handle)
            self.handle = None


class _Masker:
    """Log-probabilities with the tokens a grammar forbids set to -inf."""

    def __init__(self, n_vocab: int) -> None:
        from llama_cpp import _internals

        self.array = _internals.LlamaTokenDataArray(n_vocab=n_vocab)

    def __call__(self, logprobs: Any, grammar: _Grammar) -> Any:
        import numpy as np
        from llama_cpp import llama_cpp

        self.array.copy_logits(logprobs.astype(np.single))
        llama_cpp.llama_sampler_apply(grammar.handle, ctypes.byref(self.array.candidates))
        out = self.array.candidates_data.logit.astype(np.float64)
        out[~np.isfinite(out)] = -math.inf
        return out


def greedy_steps_back(
    llm: Any,
    prompt: Sequence[int],
    gbnf: str,
    max_tokens: int,
    cancel: threading.Event,
    on_text: Callable[[str], None] | None,
    stops: Sequence[str] = (),
) -> tuple[str, str] | None:
    """The greedy completion of ``prompt`` under ``gbnf`` (module documentation), with
    its finish reason (``stop`` or ``length``); None when llama.cpp refuses the grammar
    (the caller then generates as usual)."""
    import numpy as np
    from llama_cpp import Llama, llama_cpp

    parsed = _Grammar.parse(llm, gbnf)
    if parsed is None:
        return None
    grammar: _Grammar = parsed
    vocab = llm._model.vocab
    eos = int(llm.token_eos())
    mask = _Masker(int(llm.n_vocab()))
    floor = math.log(DEAD_END)
    cached = llm.input_ids[: llm.n_tokens].tolist()
    llm.n_tokens = min(Llama.longest_token_prefix(cached, list(prompt)), len(prompt) - 1)
    llm.eval(list(prompt[llm.n_tokens :]))
    base = len(prompt)
    tokens: list[int] = []
    # per place written: the tokens allowed there (less those taken back) and the
    # grammar before it
    places: list[tuple[Any, _Grammar]] = []
    allowed = mask(_log_softmax(llm), grammar)
    steps_back, restarts = MAX_STEPS_BACK, MAX_RESTARTS
    finish = "length"

    def text_of(ids: list[int]) -> str:
        return bytes(llm.detokenize(ids)).decode("utf-8", errors="ignore")

    def back_to(place: int) -> None:  # the tokens from ``place`` on taken back
        nonlocal grammar, allowed
        grammar.free()
        for _, later in places[place + 1 :]:
            later.free()
        allowed, grammar = places[place]
        allowed[tokens[place]] = -math.inf
        del tokens[place:], places[place:]
        llm.n_tokens = base + place

    try:
        while len(tokens) < max_tokens and not cancel.is_set():
            token = int(np.argmax(allowed))
            if allowed[token] == -math.inf or llama_cpp.llama_vocab_is_eog(vocab, token):
                finish = "stop"  # the grammar's end (or a grammar without one)
                break
            places.append((allowed, grammar.copy()))
            tokens.append(token)
            grammar.accept(token)
            llm.eval([token])
            allowed = mask(_log_softmax(llm), grammar)
            finite = allowed[np.isfinite(allowed)]
            left = float(np.logaddexp.reduce(finite)) if finite.size else -math.inf
            if left >= floor or (eos >= 0 and allowed[eos] > -math.inf):
                if any(s and s in text_of(tokens) for s in stops):
                    finish = "stop"
                    break
                continue
            # a dead end: the value begun again at its first word, else this token
            first = next((i for i, t in enumerate(tokens) if _wordy(text_of([t]))), None)
            if first is not None and restarts > 0 and _others(places[first][0], tokens[first]):
                restarts -= 1
                back_to(first)
            elif steps_back > 0 and _others(places[-1][0], token):
                steps_back -= 1
                back_to(len(tokens) - 1)
    finally:
        grammar.free()
        for _, saved in places:
            saved.free()
    text = text_of(tokens)
    for stop in stops:
        if stop and stop in text:
            text = text[: text.index(stop)]
    if on_text is not None and text:
        on_text(text)
    return text, finish


def _wordy(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _others(allowed: Any, token: int) -> bool:
    """Whether a token other than ``token`` is allowed at its place."""
    import numpy as np

    return int(np.isfinite(allowed).sum()) - bool(np.isfinite(allowed[token])) > 0
