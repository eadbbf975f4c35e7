"""Approval of tool calls: policies that see each call before it runs.

A policy answers approve, reject (the model is told why), modify, escalate (to the
next policy), terminate (the run ends) or defer (the run stops and waits for a
person's decision, made later from any process: :func:`defer_approval`). Install one
with ``lw.approver(policy)``; build one with :func:`auto_approver`,
:func:`human_approver`, :func:`approval_policy` (rules by tool-name pattern and
argument predicates), or take a preset with :func:`get_approval_policy` (``"ci"``,
``"dev"``, ``"prod"``, ``"defer"``). Decisions are recorded in the transcript as
``ApprovalEvent``\\ s.
"""

from ._auto import auto_approver
from ._deferred import Decided, defer_approval, with_decisions
from ._human import human_approver
from ._policy import (
    SENSITIVE_TOOLS,
    ApprovalRule,
    RuleLike,
    approval_policy,
    ci_policy,
    defer_policy,
    dev_policy,
    get_approval_policy,
    prod_policy,
    sensitive_rules,
)
from ._record import record_decision

__all__ = [
    "SENSITIVE_TOOLS",
    "ApprovalRule",
    "Decided",
    "RuleLike",
    "approval_policy",
    "auto_approver",
    "ci_policy",
    "defer_approval",
    "defer_policy",
    "dev_policy",
    "get_approval_policy",
    "human_approver",
    "prod_policy",
    "record_decision",
    "sensitive_rules",
    "with_decisions",
]
