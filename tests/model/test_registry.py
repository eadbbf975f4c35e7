from collections.abc import Sequence

import pytest

import loopwright as lw
from loopwright.model._registry import split_model_name


def test_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(lw.ProviderNotFoundError) as info:
        lw.get_model("nosuchprovider/x")
    message = str(info.value)
    assert "nosuchprovider" in message
    assert "mock" in message


@pytest.mark.parametrize("bad", ["", "   "])
def test_empty_model_name_is_a_clear_error(bad: str) -> None:
    with pytest.raises(lw.ConfigurationError):
        lw.get_model(bad)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("openai/gpt-4o-mini", ("openai", "gpt-4o-mini")),
        ("mock", ("mock", "")),
        ("local:/models/a.gguf", ("local", "/models/a.gguf")),
        ("ollama/llama3.2:3b", ("ollama", "llama3.2:3b")),
        ("openrouter/meta/llama-3", ("openrouter", "meta/llama-3")),
    ],
)
def test_model_names_split_into_provider_and_model(name: str, expected: tuple[str, str]) -> None:
    assert split_model_name(name) == expected


async def test_registered_provider_is_found_and_gets_kwargs() -> None:
    class Echo(lw.ModelAPI):
        provider = "echo-test"

        def __init__(self, model_name: str, prefix: str = "") -> None:
            self.model_name = model_name
            self.prefix = prefix

        async def generate(
            self,
            messages: Sequence[lw.ChatMessage],
            tools: Sequence[lw.ToolInfo],
            config: lw.GenerateConfig,
        ) -> lw.ModelOutput:
            return lw.ModelOutput.from_text(self.prefix + messages[-1].text)

    lw.register_provider("echo-test", Echo)
    model = lw.get_model("echo-test/v1", prefix=">> ")
    assert model.name == "echo-test/v1"
    out = await model.generate([lw.UserMessage(content="ping")])
    assert out.text == ">> ping"
    assert out.model == "echo-test/v1"


def test_provider_names_with_separators_are_rejected() -> None:
    with pytest.raises(lw.ConfigurationError):
        lw.register_provider("a/b", lambda name: None)


def test_factory_must_return_a_model_api() -> None:
    lw.register_provider("broken-test", lambda name: object())
    with pytest.raises(lw.ConfigurationError, match="not a ModelAPI"):
        lw.get_model("broken-test")


def test_get_model_passes_a_model_through() -> None:
    model = lw.get_model("mock")
    assert lw.get_model(model) is model


async def test_default_model_is_per_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_MODEL", "mock/from-env")
    assert lw.get_model().name == "mock/from-env"
    scripted = lw.get_model("mock", outputs=["x"])
    with lw.default_model(scripted):
        assert lw.get_model() is scripted
        with lw.default_model("mock/inner"):
            assert lw.get_model().name == "mock/inner"
        assert lw.get_model() is scripted
    assert lw.get_model().name == "mock/from-env"


def test_entry_point_providers_are_discovered(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    from loopwright.model import _registry

    ep = EntryPoint(
        name="plugin-test",
        value="loopwright.model.providers.mock:MockModelAPI",
        group=_registry.ENTRY_POINT_GROUP,
    )
    monkeypatch.setattr(
        "importlib.metadata.entry_points",
        lambda group: [ep] if group == _registry.ENTRY_POINT_GROUP else [],
    )
    monkeypatch.setattr(_registry, "_providers", _registry._providers.copy())
    assert "plugin-test" in lw.provider_names()
    assert lw.get_model("plugin-test/x").name == "mock/x"


def test_bad_registrations_and_import_paths_are_configuration_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from loopwright.model import _registry

    monkeypatch.setattr(_registry, "_providers", _registry._providers.copy())
    with pytest.raises(lw.ConfigurationError, match="not a 'module:attribute' path"):
        lw.register_provider("nocolon", "json")
    with pytest.raises(lw.ConfigurationError, match="is not a ModelAPI factory"):
        lw.register_provider("notcallable", 123)  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="must be non-empty"):
        lw.register_provider(123)  # type: ignore[arg-type]
    lw.register_provider("nomodule", "no_such_module_xyz:factory")
    with pytest.raises(lw.ConfigurationError, match="cannot import 'no_such_module_xyz'"):
        lw.get_model("nomodule/x")
    lw.register_provider("noattr", "json:no_such_factory")
    with pytest.raises(lw.ConfigurationError, match="'json' has no 'no_such_factory'"):
        lw.get_model("noattr/x")
    lw.register_provider("astring", "json:__name__")  # imports, but is a string
    with pytest.raises(lw.ConfigurationError, match="is not a ModelAPI factory"):
        lw.get_model("astring/x")
