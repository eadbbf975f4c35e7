"""Tool protocols are found by name like providers: built-ins, register_protocol() and the
``loopwright.protocols`` entry point group."""

import pytest

import loopwright as lw
from loopwright.model import protocols
from loopwright.model.protocols import _registry


class Loud(protocols.ReActProtocol):
    """A react protocol under another name (what a user registers)."""


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_protocols", _registry._protocols.copy())


def test_builtins_are_listed() -> None:
    assert {"native", "react", "json"} <= set(protocols.protocol_names())


def test_a_registered_protocol_is_used_by_name() -> None:
    assert lw.register_protocol("Loud", Loud) is Loud
    model = lw.get_model("mock", tool_protocol="loud")
    assert type(model.tool_protocol) is Loud
    assert "loud" in protocols.protocol_names()


def test_register_protocol_is_a_decorator_and_takes_a_path() -> None:
    @lw.register_protocol("deco")
    class Deco(protocols.JsonProtocol):
        pass

    lw.register_protocol("bypath", f"{__name__}:Loud")
    assert type(lw.get_model("mock", tool_protocol="deco").tool_protocol) is Deco
    assert type(lw.get_model("mock", tool_protocol="bypath").tool_protocol) is Loud


def test_unknown_protocol_names_the_known_ones() -> None:
    lw.register_protocol("mine", Loud)
    with pytest.raises(lw.ConfigurationError, match="unknown tool_protocol 'nope'") as info:
        lw.get_model("mock", tool_protocol="nope")
    for name in ("native", "react", "json", "mine"):
        assert name in str(info.value)


def test_entry_point_protocols_are_discovered(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    group = protocols.PROTOCOL_ENTRY_POINT_GROUP
    ep = EntryPoint(name="plugin-proto", value=f"{__name__}:Loud", group=group)
    monkeypatch.setattr(
        "importlib.metadata.entry_points", lambda group: [ep] if group == ep.group else []
    )
    monkeypatch.setattr(_registry, "_protocols", _registry._protocols.copy())
    assert group == "loopwright.protocols"
    assert "plugin-proto" in protocols.protocol_names()
    assert type(lw.get_model("mock", tool_protocol="plugin-proto").tool_protocol) is Loud


def test_bad_registrations_are_configuration_errors() -> None:
    with pytest.raises(lw.ConfigurationError, match="is not a ToolProtocol subclass"):
        lw.register_protocol("inst", Loud())  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="is not a ToolProtocol subclass"):
        lw.register_protocol("other", lw.Dataset)  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="not a 'module:attribute' path"):
        lw.register_protocol("nocolon", "json")
    with pytest.raises(lw.ConfigurationError, match="non-empty string"):
        lw.register_protocol("  ", Loud)
    with pytest.raises(lw.ConfigurationError, match="non-empty string"):
        lw.register_protocol(3, Loud)  # type: ignore[arg-type]
    lw.register_protocol("nomodule", "no_such_module_xyz:P")
    with pytest.raises(lw.ConfigurationError, match="cannot import 'no_such_module_xyz'"):
        lw.get_model("mock", tool_protocol="nomodule")
    lw.register_protocol("astring", "json:__name__")  # imports, but is a string
    with pytest.raises(lw.ConfigurationError, match="is not a ToolProtocol subclass"):
        lw.get_model("mock", tool_protocol="astring")


def test_native_needs_a_provider_with_tool_calling() -> None:
    with pytest.raises(lw.ConfigurationError, match=r"no native tool calling.*json"):
        protocols.resolve_tool_protocol("native", supports_tools=False, provider="small")
