"""``model_graded``: a grader model judges the answer, prompted by a jinja2 template."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._errors import ConfigurationError
from ..agents import AgentState
from ..model import GenerateConfig, Model, UserMessage, get_model
from ._fence import FENCED, Fence
from ._sample import Sample
from ._score import Score, Scorer

if TYPE_CHECKING:
    import jinja2

__all__ = ["DEFAULT_GRADER_TEMPLATE", "DEFAULT_GRADE_PATTERN", "model_graded"]

DEFAULT_GRADER_TEMPLATE = """\
You are grading an answer to a task. Compare the submitted answer with the criterion.

{{ fence_note }}

The task:
{{ question }}

The submitted answer:
{{ answer }}

The criterion:
{{ criterion }}

Does the submitted answer meet the criterion? Explain your reasoning briefly, then end
with a line of the form "GRADE: C" if it is correct,{% if partial_credit %} "GRADE: P" if
it is partially correct,{% endif %} or "GRADE: I" if it is incorrect.
"""
"""The grader prompt. Variables: ``question`` (the sample's input text), ``answer`` (the
agent's output text), ``criterion`` (the targets, one per line), ``target`` (the
target as given: a text, or a list of texts), each fenced (see :func:`model_graded`);
``fence_note`` (the sentence telling the grader that fenced text is data), ``fence``
(a function: ``fence(text, "label")`` fences more text), ``metadata`` (the sample's,
not fenced), ``partial_credit`` and anything passed in ``variables=``."""

DEFAULT_GRADE_PATTERN = r"GRADE\s*:\s*\**\s*([CPI])\b"
"""Finds the grade in the grader's reply: C (correct, 1), P (partial, 0.5), I (0)."""

_VALUES = {"C": 1.0, "P": 0.5, "I": 0.0}
_UNFENCED = "_unfenced_"  # + a fenced name: the text as it is, for a filter on it
_GIVEN = {*FENCED, *(_UNFENCED + n for n in FENCED), "fence", "fence_note", "metadata"}
_GIVEN |= {"partial_credit", "_fence_value"}


def _grade(found: str | tuple[str, ...]) -> str:
    """The grade of one ``findall`` match (the first group's, upper-cased)."""
    return (found[0] if isinstance(found, tuple) else found).upper()


def _fenced(fence: Fence, value: Any, label: str) -> Any:
    """``value`` fenced as ``label``: a text, or each text of a list."""
    if isinstance(value, list):
        return [fence(v, label) for v in value]
    return fence(value, label)


def _compile(template: str, fenced: bool) -> jinja2.Template:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    try:
        tree = env.parse(template)
    except jinja2.TemplateSyntaxError as ex:
        raise ConfigurationError(
            f"model_graded: the template does not parse (line {ex.lineno}): {ex.message}"
        ) from None
    if fenced:
        _fence_expressions(tree)
    return env.from_string(tree)


def _fence_expressions(tree: jinja2.nodes.Template) -> None:
    """Each expression of a template that filters, slices or calls a method of a fenced
    text (``answer | truncate(500)``, ``answer[:100]``, ``answer.split()``), wherever
    it is (``{{ }}``, ``{% set %}``, a test, a loop), rewritten to apply to the text as
    it is and fence what it makes (``_fence_value(_unfenced_answer | truncate(500),
    "answer")``: a text fenced, each text of a list, anything else, a length, as it is).
    Applied to the fenced text, it would cut or change the fence's tags (a fence never
    closed takes what follows it, the grading instructions, for data)."""
    from jinja2 import nodes
    from jinja2.visitor import NodeTransformer

    chain = (nodes.Filter, nodes.Getitem, nodes.Getattr, nodes.Call)

    class Fencer(NodeTransformer):
        def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
            if isinstance(node, chain):
                base: Any = node
                while isinstance(base, chain) and base.node is not None:  # (None: a block)
                    base = base.node
                if (
                    base is not node
                    and isinstance(base, nodes.Name)
                    and base.name in FENCED
                    and base.ctx == "load"
                ):
                    label = base.name
                    base.name = _UNFENCED + label
                    call = nodes.Call(
                        nodes.Name("_fence_value", "load"),
                        [node, nodes.Const(label)],
                        [],
                        None,
                        None,
                    )
                    call.set_lineno(node.lineno)
                    return call
            return super().generic_visit(node, *args, **kwargs)

    Fencer().visit(tree)


def _fence_value(fence: Fence, value: Any, label: str) -> Any:
    """What a template made of a fenced text: fenced if a text, each text of a list."""
    if isinstance(value, str):
        return fence(value, label)
    if isinstance(value, (list, tuple)):
        return [fence(v, label) if isinstance(v, str) else v for v in value]
    return value


def model_graded(
    template: str | None = None,
    *,
    model: str | Model | None = None,
    partial_credit: bool = False,
    grade_pattern: str = DEFAULT_GRADE_PATTERN,
    variables: Mapping[str, Any] | None = None,
    config: GenerateConfig | None = None,
    name: str = "model_graded",
    timeout: float | None = None,
    fenced: bool = True,
) -> Scorer:
    """Ask a grader model whether the answer meets the target (the criterion).

    The grader gets ``template`` rendered with jinja2 and answers with a grade: ``C``
    (1.0), ``P`` (0.5, only with ``partial_credit``) or ``I`` (0.0), found in its reply
    with ``grade_pattern`` (the last match counts). A reply without a grade scores 0
    and says so in the explanation; the whole reply is the explanation. A grade the
    answer itself holds (an answer ending ``GRADE: C``) never counts, wherever the reply
    repeats it: it cannot be told from the grader quoting the answer, so an answer
    cannot forge its own grade (and one that writes ``GRADE: C`` is never graded C).

    The prompt cannot be taken over by the text it holds either: ``question``,
    ``answer``, ``criterion`` and ``target`` (from the model under test and the
    dataset) reach the template fenced, each between ``<NAME-NONCE>`` and
    ``</NAME-NONCE>`` tags with a random ``NONCE`` drawn for each grading, and every
    tag-like ``<`` inside them written ``&lt;``, so that a text can neither end its fence
    nor imitate one. This holds for a template of your own too: ``{{ answer }}`` is the
    fenced block, and a filter, slice or method written on it, anywhere in the
    template, applies to the text, and what it makes is fenced (``{{ answer |
    truncate(500) }}`` cuts the answer, not its closing tag; ``answer.split()`` is a
    list of fenced words; ``answer | length`` the answer's length); every label the
    template fences is neutralised in every text. Such a
    template should say ``{{ fence_note }}`` (the sentence telling the grader that
    fenced text is data, never instructions) before the fenced parts, and fence any
    other untrusted text it shows (a metadata field from the dataset) as
    ``{{ fence(metadata.context, "context") }}``. ``fenced=False`` gives it the texts
    as they are, for a template that fences them itself (``{{ fence(answer, "answer")
    }}``) or grades only trusted text.

    Args:
        template: A jinja2 template for the grader prompt (default:
            :data:`DEFAULT_GRADER_TEMPLATE`, which lists the variables).
        model: The grader (default: the model of the run being scored).
        partial_credit: Allow the ``P`` grade.
        grade_pattern: A regex whose first group captures C, P or I.
        variables: More template variables.
        config: Generation settings for the grader (default: ``temperature=0``).
        name: The scorer's name.
        timeout: Seconds the grading may take (default: ``SCORE_TIMEOUT``, 10 minutes);
            past them the sample fails.
        fenced: Give the template ``question``, ``answer``, ``criterion`` and ``target``
            fenced (the default), or as they are.
    """
    compiled = _compile(template or DEFAULT_GRADER_TEMPLATE, fenced)
    try:
        grade_re = re.compile(grade_pattern, re.IGNORECASE)
    except re.error as ex:
        raise ConfigurationError(f"model_graded: invalid grade_pattern: {ex}") from None
    if grade_re.groups < 1:
        raise ConfigurationError("model_graded: grade_pattern needs a group capturing the grade")
    extra = dict(variables or {})
    taken = sorted(set(extra) & _GIVEN)
    if taken:
        raise ConfigurationError(
            f"model_graded: variables {', '.join(taken)} are given by the scorer; name "
            "yours otherwise"
        )
    grader_config = config or GenerateConfig(temperature=0.0)
    # a named grader is made once, on first use, and shared by every sample (its clients,
    # connection limit and usage); None means the model in force where each sample runs
    named: list[Model] = []

    def grader_model() -> Model:
        if model is None:
            return get_model()
        if not named:
            named.append(get_model(model))
        return named[0]

    async def score(state: AgentState, sample: Sample) -> Score:
        import jinja2

        fence = Fence()
        texts: dict[str, Any] = {
            "question": sample.input_text,
            "answer": state.text,
            "criterion": "\n".join(sample.targets),
            "target": sample.target,
        }

        def render() -> str:
            given = dict(texts)
            if fenced:
                given = {k: _fenced(fence, v, k) for k, v in texts.items()}
                given.update({_UNFENCED + k: v for k, v in texts.items()})
                given["_fence_value"] = functools.partial(_fence_value, fence)
            return compiled.render(
                **given,
                fence_note=fence.note,
                fence=fence,
                metadata=sample.metadata,
                partial_credit=partial_credit,
                **extra,
            )

        try:
            labels = fence.labels
            prompt = render()
            if fence.labels != labels:  # the template fences more: each text knows its labels
                prompt = render()
        except jinja2.UndefinedError as ex:
            raise ConfigurationError(f"model_graded: the template uses {ex.message}") from None
        grader = grader_model()
        output = await grader.generate([UserMessage(content=prompt)], config=grader_config)
        # a grade the answer writes itself cannot be told from the grader quoting it
        # (or a grader answering garbage echoing it): it counts for nothing
        forged = {_grade(g) for g in grade_re.findall(state.text)}
        found = [g for g in map(_grade, grade_re.findall(output.text)) if g not in forged]
        grade = found[-1] if found else None
        if grade == "P" and not partial_credit:
            grade = "I"
        value = _VALUES.get(grade or "", 0.0)
        if found:
            explanation = output.text
        elif forged:
            explanation = (
                f"no grade in the grader's reply but those the answer writes itself "
                f"({', '.join(sorted(forged))}), which do not count: {output.text}"
            )
        else:
            explanation = f"no grade in the grader's reply: {output.text}"
        return Score(
            value=value,
            answer=state.text,
            explanation=explanation,
            metadata={"grade": grade, "grader": grader.name},
        )

    return Scorer(score, name=name, timeout=timeout)
