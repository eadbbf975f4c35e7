"""Approval of tool calls: policies that see each call before it runs.

A policy answers approve, reject (the model is told why), modify, escalate (to the
next policy) or terminate (the run ends). Install one with ``lw.approver(policy)``;
build one with :func:`auto_approver`, :func:`human_approver`, :func:`approval_policy`
(rules by tool-name pattern and argument predicates), or take a preset with
:func:`get_approval_policy` (``"ci"``, ``"dev"``, ``"prod"``). Decisions are recorded in
the transcript as ``ApprovalEvent``\\ s.
"""

from ._auto import auto_approver
from ._human import human_approver
from ._policy import (
    SENSITIVE_TOOLS,
    ApprovalRule,
    RuleLike,
    approval_policy,
    ci_policy,
    dev_policy,
    get_approval_policy,
    prod_policy,
    sensitive_rules,
)
from ._record import record_decision

__all__ = [
    "SENSITIVE_TOOLS",
    "ApprovalRule",
    "RuleLike",
    "approval_policy",
    "auto_approver",
    "ci_policy",
    "dev_policy",
    "get_approval_policy",
    "human_approver",
    "prod_policy",
    "record_decision",
    "sensitive_rules",
]
