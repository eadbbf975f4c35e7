"""Rule lists, the ``ci``/``dev``/``prod`` presets and ``get_approval_policy``."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from .._errors import ConfigurationError
from ..model import ChatMessage, ToolCall
from ..tools._approval import Approval, ApprovalDecision, Approver
from ._auto import auto_approver
from ._human import human_approver
from ._record import recorded

__all__ = [
    "SENSITIVE_TOOLS",
    "ApprovalRule",
    "RuleLike",
    "approval_policy",
    "ci_policy",
    "defer_policy",
    "dev_policy",
    "get_approval_policy",
    "prod_policy",
    "sensitive_rules",
]

_DECISIONS: tuple[ApprovalDecision, ...] = ("approve", "reject", "escalate", "terminate", "defer")


@dataclass(frozen=True)
class ApprovalRule:
    """One rule of an :func:`approval_policy`.

    Attributes:
        tools: Tool-name glob pattern(s) the rule applies to (``"*"``, ``"bash"``,
            ``"file_*"``, or several).
        approver: Who decides: an approver, or ``"approve"``, ``"reject"``,
            ``"escalate"``, ``"terminate"``, ``"defer"`` (the run waits for a decision
            made later, see :func:`defer_approval`), ``"human"`` (asks in the terminal)
            or ``"auto"`` (same as ``"approve"``).
        when: A predicate on the call's arguments; the rule applies only when it
            returns true (e.g. ``lambda args: args.get("command") != "view"``).
        explanation: Why, for the fixed decisions (shown to the model on reject).
    """

    tools: str | Sequence[str] = "*"
    approver: Approver | str = "approve"
    when: Callable[[dict[str, Any]], bool] | None = None
    explanation: str | None = None

    def applies_to(self, call: ToolCall) -> bool:
        """Whether the tool name matches (the predicate is checked separately)."""
        patterns = [self.tools] if isinstance(self.tools, str) else self.tools
        return any(fnmatch.fnmatchcase(call.function, p) for p in patterns)


RuleLike: TypeAlias = ApprovalRule | tuple[str | Sequence[str], Approver | str]
"""A rule, or ``(tool pattern(s), approver)`` for short."""


def _fixed(decision: ApprovalDecision, explanation: str | None, name: str) -> Approver:
    async def fixed(call: ToolCall, messages: Sequence[ChatMessage]) -> Approval:
        why = explanation
        if why is None and decision in ("reject", "terminate"):
            why = f"tool {call.function!r} is not allowed by the {name!r} approval policy"
        elif why is None and decision == "defer":
            why = f"the {name!r} approval policy waits for a person's decision"
        return Approval(decision=decision, explanation=why, approver=name)

    return fixed


def _resolve(approver: Approver | str, explanation: str | None, name: str) -> Approver:
    if not isinstance(approver, str):
        if not callable(approver):
            raise ConfigurationError(f"an approval rule's approver must be callable: {approver!r}")
        return approver
    if approver == "auto":
        approver = "approve"
    if approver in _DECISIONS:
        return _fixed(approver, explanation, name)
    if approver == "human":
        return human_approver()
    raise ConfigurationError(
        f"unknown approver {approver!r}; use an approver function or one of "
        f"{', '.join([*_DECISIONS, 'human', 'auto'])}"
    )


def _rule(rule: RuleLike) -> ApprovalRule:
    if isinstance(rule, ApprovalRule):
        return rule
    if isinstance(rule, tuple) and len(rule) == 2:
        return ApprovalRule(tools=rule[0], approver=rule[1])
    raise ConfigurationError(
        f"bad approval rule {rule!r}: use ApprovalRule(...) or (tool pattern, approver)"
    )


def approval_policy(rules: Sequence[RuleLike], *, name: str = "policy") -> Approver:
    """An approver that walks a list of rules.

    For each call, the rules whose tool pattern matches (and whose ``when`` predicate
    holds) are asked in order; the first answer that is not ``escalate`` is the
    decision. When every matching rule escalates, or none matches, the policy answers
    ``escalate`` (which ``execute_tools`` treats as a rejection, unless an enclosing
    policy decides). A predicate that raises rejects the call (fail closed).

    Example::

        policy = lw.approval_policy([
            ("think", "approve"),
            lw.ApprovalRule("bash", "human", when=lambda a: "rm " in a.get("cmd", "")),
            ("bash", "approve"),
            ("*", "reject"),
        ])
        with lw.approver(policy):
            ...

    Args:
        rules: :class:`ApprovalRule`\\ s, or ``(pattern, approver)`` pairs.
        name: The policy's name in decisions and transcripts.
    """
    if isinstance(rules, ApprovalRule | tuple) or not isinstance(rules, Sequence):
        raise ConfigurationError("approval_policy takes a list of rules")
    checked = [_rule(r) for r in rules]
    steps = [(r, _resolve(r.approver, r.explanation, name)) for r in checked]

    async def policy(call: ToolCall, messages: Sequence[ChatMessage]) -> Approval:
        escalated: list[str] = []
        for rule, decide in steps:
            if not rule.applies_to(call):
                continue
            if rule.when is not None:
                try:
                    applies = bool(rule.when(call.arguments))
                except Exception as e:
                    return Approval(
                        decision="reject",
                        explanation=(
                            f"the approval rule for {call.function!r} could not check the "
                            f"arguments ({type(e).__name__}: {e})"
                        ),
                        approver=name,
                    )
                if not applies:
                    continue
            approval = await decide(call, messages)
            if approval.decision != "escalate":
                return approval
            escalated.append(approval.approver or "?")
        why = (
            f"every matching rule escalated ({', '.join(escalated)})"
            if escalated
            else f"no rule of the {name!r} approval policy covers tool {call.function!r}"
        )
        return Approval(decision="escalate", explanation=why, approver=name)

    return recorded(name, policy)


SENSITIVE_TOOLS = ("bash", "python")
"""Tools that run code; writes by ``text_editor`` and ``files`` are sensitive too."""


def sensitive_rules(approver: Approver | str, explanation: str | None = None) -> list[ApprovalRule]:
    """Rules sending the sensitive calls to ``approver``: ``bash``, ``python``, and the
    writing commands of ``text_editor`` (all but ``view``) and ``files`` (``write``)."""
    return [
        ApprovalRule(SENSITIVE_TOOLS, approver, explanation=explanation),
        ApprovalRule(
            "text_editor",
            approver,
            when=lambda args: args.get("command") != "view",
            explanation=explanation,
        ),
        ApprovalRule(
            "files",
            approver,
            when=lambda args: args.get("action") not in ("read", "list"),
            explanation=explanation,
        ),
    ]


def ci_policy() -> Approver:
    """The ``ci`` preset: approve every call (tests and trusted automation)."""
    return approval_policy([ApprovalRule("*", "approve")], name="ci")


def dev_policy(human: Approver | None = None) -> Approver:
    """The ``dev`` preset: ask a person about sensitive calls (running code, writing
    files), approve the rest.

    Args:
        human: Who to ask (default: :func:`human_approver` on the terminal).
    """
    ask = human if human is not None else human_approver()
    return approval_policy([*sensitive_rules(ask), ApprovalRule("*", "approve")], name="dev")


def prod_policy() -> Approver:
    """The ``prod`` preset: reject sensitive calls (running code, writing files),
    approve the rest."""
    return approval_policy([*sensitive_rules("reject"), ApprovalRule("*", "approve")], name="prod")


def defer_policy() -> Approver:
    """The ``defer`` preset: defer sensitive calls (running code, writing files) until a
    person decides, later and from anywhere (``loopwright runs approve``); approve the
    rest. See :func:`~loopwright.approval.defer_approval` for other tools."""
    return approval_policy([*sensitive_rules("defer"), ApprovalRule("*", "approve")], name="defer")


_PRESETS: dict[str, Callable[..., Approver]] = {
    "ci": ci_policy,
    "dev": dev_policy,
    "prod": prod_policy,
    "defer": defer_policy,
    "auto": auto_approver,
    "human": human_approver,
}


def get_approval_policy(
    policy: str | Approver | Sequence[RuleLike] | None, **kwargs: Any
) -> Approver | None:
    """Turn a policy as users write it into an approver (decisions are recorded).

    Args:
        policy: ``"ci"``, ``"dev"``, ``"prod"``, ``"defer"``, ``"auto"``, ``"human"``; an approver
            function (wrapped so that its decisions are recorded); a list of rules (see
            :func:`approval_policy`); or ``None`` (no approval: every call runs).
        **kwargs: Passed to the preset (e.g. ``human=`` for ``dev``).

    Raises:
        ConfigurationError: An unknown preset name, or a malformed rule list.
    """
    if policy is None:
        return None
    if isinstance(policy, str):
        preset = _PRESETS.get(policy)
        if preset is None:
            raise ConfigurationError(
                f"unknown approval policy {policy!r}; presets: {', '.join(_PRESETS)}, or "
                "pass an approver function or a list of rules"
            )
        return preset(**kwargs)
    if kwargs:
        raise ConfigurationError("options are only for the named presets")
    if callable(policy):
        return recorded(getattr(policy, "__name__", "approver"), policy)
    return approval_policy(policy)
