"""``_contexts.py``: a context variable set for a ``with`` block, reset after it, on every
path; and the public context managers written with it give what they gave."""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path

import pytest

import loopwright as lw
from loopwright._contexts import var_pushed, var_set
from loopwright.log._specs import current_spec_store, spec_store
from loopwright.model import model_hook
from loopwright.stores import current_store
from loopwright.tools import current_tool_hooks, tool_hook

var: contextvars.ContextVar[str] = contextvars.ContextVar("test_var", default="outer")
stack: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("test_stack", default=())


def test_var_set_sets_for_the_block_and_gives_what_it_was_given() -> None:
    with var_set(var, "inner", 42) as given:
        assert given == 42
        assert var.get() == "inner"
    assert var.get() == "outer"


def test_var_set_resets_when_the_block_raises() -> None:
    with pytest.raises(KeyError), var_set(var, "inner", None):
        raise KeyError("x")
    assert var.get() == "outer"


def test_var_pushed_appends_to_what_the_variable_holds_when_entered() -> None:
    outer = var_pushed(stack, "a")
    inner = var_pushed(stack, "b")
    with outer as a:
        assert a == "a" and stack.get() == ("a",)
        with inner as b:
            assert b == "b" and stack.get() == ("a", "b")
        assert stack.get() == ("a",)
    assert stack.get() == ()
    with inner:  # entered later: what the variable holds then
        assert stack.get() == ("b",)
    assert stack.get() == ()


def test_entering_one_that_is_entered_is_refused_and_changes_nothing() -> None:
    setting = var_set(var, "inner", None)
    pushing = var_pushed(stack, "a")
    with setting, pushing:
        with pytest.raises(RuntimeError, match="already"):
            setting.__enter__()
        with pytest.raises(RuntimeError, match="already"):
            pushing.__enter__()
        assert var.get() == "inner" and stack.get() == ("a",)
    assert var.get() == "outer" and stack.get() == ()
    with setting:  # left: it may be entered again
        assert var.get() == "inner"
    assert var.get() == "outer"


async def test_a_task_started_inside_sees_the_value_and_its_changes_stay_its_own() -> None:
    async def child() -> tuple[str, ...]:
        seen = stack.get()
        with var_pushed(stack, "child"):
            await asyncio.sleep(0)
        return seen

    with var_pushed(stack, "parent"):
        assert await asyncio.create_task(child()) == ("parent",)
        assert stack.get() == ("parent",)
    assert stack.get() == ()


def test_the_public_ones_give_what_they_gave(tmp_path: Path) -> None:
    class Hook:
        def before_generate(self, call: lw.ModelCall) -> None:
            pass

        def after_generate(self, call: lw.ModelCall) -> None:
            pass

    class ToolHook:
        def before_tool(self, ex: lw.ToolExecution) -> None:
            pass

        def after_tool(self, ex: lw.ToolExecution) -> None:
            pass

    hook, th, s = Hook(), ToolHook(), lw.Store()
    with model_hook(hook) as h, tool_hook(th) as t, lw.store_context(s) as got:
        assert h is hook and t is th and got is s
        assert lw.store() is s and current_tool_hooks()[-1] is th
    assert current_store() is None and th not in current_tool_hooks()
    with spec_store(tmp_path) as nothing:
        assert nothing is None and current_spec_store() == tmp_path
    assert current_spec_store() is None
    model = lw.get_model("mock", outputs=["x"])
    with lw.default_model(model) as nothing:
        assert nothing is None and lw.get_model() is model
    assert lw.get_model() is not model


def test_all_of_is_the_context_itself_nothing_or_all_in_order() -> None:
    import contextlib

    from loopwright._contexts import NOTHING, all_of

    order: list[str] = []

    @contextlib.contextmanager
    def named(name: str):  # type: ignore[no-untyped-def]
        order.append(f"enter {name}")
        try:
            yield
        finally:
            order.append(f"exit {name}")

    one = named("a")
    assert all_of([one]) is one and all_of([]) is NOTHING
    with pytest.raises(ValueError), all_of([named("a"), named("b")]):
        raise ValueError
    assert order == ["enter a", "enter b", "exit b", "exit a"]


def test_run_scope_gives_the_new_depth_and_restores_it() -> None:
    from loopwright.limits import _run_depth, run_scope

    before = _run_depth.get()
    with run_scope() as depth:
        assert depth == before + 1 == _run_depth.get()
        with run_scope() as inner:
            assert inner == before + 2
    assert _run_depth.get() == before


def test_var_set_of_the_value_in_force_sets_nothing_and_still_restores_it() -> None:
    value = "outer"  # the variable's default: unset, and in force
    assert var not in contextvars.copy_context()
    with var_set(var, var.get(), None):
        assert var.get() is value
        assert var not in contextvars.copy_context()  # no new version of the context
        var.set("changed in the block, not reset")
    assert var.get() is value  # what a reset would have given
    token = var.set("set")
    try:
        in_force = var.get()
        with var_set(var, in_force, None):
            with var_set(var, "inner", None):
                assert var.get() == "inner"
            assert var.get() is in_force
        assert var.get() is in_force
    finally:
        var.reset(token)
    unset: contextvars.ContextVar[str] = contextvars.ContextVar("test_unset")
    with var_set(unset, "a", None):  # no value, no default: set, and reset to no value
        assert unset.get() == "a"
    with pytest.raises(LookupError):
        unset.get()


def test_var_set_of_the_value_in_force_is_still_refused_when_nested_in_itself() -> None:
    setting = var_set(var, var.get(), None)
    with setting, pytest.raises(RuntimeError, match="already"):
        setting.__enter__()


async def test_nothing_gives_none_and_keeps_no_bound_method() -> None:
    from loopwright._contexts import NOTHING

    with NOTHING as given:
        assert given is None
    async with NOTHING as given_async:
        assert given_async is None
    with pytest.raises(KeyError), NOTHING:  # an error is not swallowed
        raise KeyError("x")
    # what a `with` looks up is the function itself, not a new bound method
    assert NOTHING.__exit__ is NOTHING.__exit__
