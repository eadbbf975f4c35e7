import asyncio
import importlib
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

import loopwright as lw
from loopwright.stores import apply_store_patch, current_store

# the module that holds Store (`loopwright.stores`, the attribute, is the store() function)
store_module = importlib.import_module("loopwright.stores._store")


def rebuild(patches: list[list[dict[str, Any]]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for patch in patches:
        apply_store_patch(data, patch)
    return data


def test_mapping_semantics() -> None:
    s = lw.Store({"a": 1})
    s.set("b", "two")
    s["c"] = [3]
    assert s.get("a") == 1 and s["b"] == "two" and s.get("c") == [3]
    assert "a" in s and "zz" not in s
    assert s.keys() == ["a", "b", "c"] and list(s) == ["a", "b", "c"] and len(s) == 3
    assert s.items() == [("a", 1), ("b", "two"), ("c", [3])]
    assert s.values() == [1, "two", [3]]
    assert s.get("missing") is None
    with pytest.raises(KeyError):
        s["missing"]
    s.delete("a")
    s.delete("a")  # deleting a missing key is no error
    assert "a" not in s
    with pytest.raises(KeyError):
        del s["a"]
    del s["b"]
    s.clear()
    assert len(s) == 0


def test_get_with_default_stores_the_default_so_it_can_be_filled_in_place() -> None:
    s = lw.Store()
    s.get("links", []).append("https://a")
    s.get("links", []).append("https://b")
    assert s.get("links") == ["https://a", "https://b"]
    assert s.checkpoint() == [{"op": "add", "path": "/links", "value": ["https://a", "https://b"]}]


def test_values_must_be_json_serialisable_and_keys_strings() -> None:
    s = lw.Store()
    with pytest.raises(lw.StoreError, match="not JSON-serialisable"):
        s.set("x", object())
    with pytest.raises(lw.StoreError, match="keys must be strings"):
        s.set(3, "x")  # type: ignore[arg-type]
    assert "x" not in s

    class Point(BaseModel):
        x: int
        y: int

    s.set("p", Point(x=1, y=2))  # pydantic models are fine: dumped for the patch
    assert s.checkpoint() == [{"op": "add", "path": "/p", "value": {"x": 1, "y": 2}}]


def test_checkpoint_patches_add_replace_remove_and_nothing_when_unchanged() -> None:
    s = lw.Store({"n": 1, "doc": {"title": "t", "tags": ["a"]}})
    first = s.checkpoint()
    assert first == [
        {"op": "add", "path": "/n", "value": 1},
        {"op": "add", "path": "/doc", "value": {"title": "t", "tags": ["a"]}},
    ]
    assert s.checkpoint() == []
    s.set("n", 1)  # same value: no change
    assert s.checkpoint() == []
    s.set("n", 2)
    s.get("doc")["tags"].append("b")  # in place, after a read
    s.delete("missing-key")
    patch = s.checkpoint()
    assert {"op": "replace", "path": "/n", "value": 2} in patch
    assert {"op": "add", "path": "/doc/tags/1", "value": "b"} in patch
    assert len(patch) == 2
    s.delete("n")
    assert s.checkpoint() == [{"op": "remove", "path": "/n"}]
    s.set("gone", 1)
    s.delete("gone")  # added and removed between checkpoints: nothing to record
    assert s.checkpoint() == []


def test_keys_are_escaped_as_json_pointers() -> None:
    s = lw.Store()
    s.set("a/b~c", 1)
    assert s.checkpoint() == [{"op": "add", "path": "/a~1b~0c", "value": 1}]
    assert rebuild([[{"op": "add", "path": "/a~1b~0c", "value": 1}]]) == {"a/b~c": 1}


def test_type_changes_that_compare_equal_are_still_recorded() -> None:
    # jsonpatch compares with ==, and True == 1 == 1.0 in Python
    s = lw.Store({"v": [1, True, 2.0]})
    patches = [s.checkpoint()]
    s.set("v", [True, 1, 2])
    patches.append(s.checkpoint())
    assert patches[1]
    assert rebuild(patches) == {"v": [True, 1, 2]}
    assert [type(x) for x in rebuild(patches)["v"]] == [bool, int, int]


def test_patches_are_detached_from_later_changes() -> None:
    s = lw.Store()
    s.set("l", [1])
    patch = s.checkpoint()
    s.get("l").append(2)
    assert patch == [{"op": "add", "path": "/l", "value": [1]}]


def test_checkpoint_cost_follows_the_change_not_the_store_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = lw.Store({f"k{i}": {"i": i, "tags": ["x"] * 5} for i in range(5000)})
    s.checkpoint()
    seen: list[str] = []
    real = store_module._jsonable

    def counting(key: str, value: Any) -> Any:
        seen.append(key)
        return real(key, value)

    monkeypatch.setattr(store_module, "_jsonable", counting)
    s.set("k7", {"i": -7})
    patch = s.checkpoint()
    assert patch and all(op["path"].startswith("/k7/") for op in patch)
    assert apply_store_patch({"k7": {"i": 7, "tags": ["x"] * 5}}, patch) == {"k7": {"i": -7}}
    # one serialisation for the set, one for the checkpoint: never the other 4,999 keys
    assert seen == ["k7", "k7"]
    seen.clear()
    assert s.checkpoint() == []
    assert seen == []


def test_apply_store_patch_rejects_a_patch_that_does_not_follow() -> None:
    with pytest.raises(lw.StoreError, match="does not apply"):
        apply_store_patch({}, [{"op": "replace", "path": "/nope", "value": 1}])
    with pytest.raises(lw.StoreError):
        apply_store_patch({}, [{"op": "frobnicate", "path": "/x"}])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from("abc/~"), children, max_size=3)
    ),
    max_leaves=8,
)
actions = st.lists(
    st.tuples(
        st.sampled_from(["set", "delete", "append", "checkpoint"]),
        st.sampled_from(["a", "b", "c/d", "e~f"]),
        json_values,
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(actions)
def test_replaying_the_patches_rebuilds_the_store(ops: list[tuple[str, str, Any]]) -> None:
    s = lw.Store()
    patches = []
    for action, key, value in ops:
        if action == "set":
            s.set(key, value)
        elif action == "delete":
            s.delete(key)
        elif action == "append":
            current = s.get(key)
            if isinstance(current, list):
                current.append(value)
            elif isinstance(current, dict):
                current["z"] = value
        else:
            patches.append(s.checkpoint())
    patches.append(s.checkpoint())
    assert rebuild(patches) == s.to_dict()


def test_concurrent_writers_from_threads_lose_no_change() -> None:
    s = lw.Store()
    patches: list[list[dict[str, Any]]] = []
    stop = threading.Event()

    def writer(n: int) -> None:
        for i in range(300):
            s.set(f"t{n}", i)
            s.get(f"list{n}", []).append(i)

    def checkpointer() -> None:
        while not stop.is_set():
            patches.append(s.checkpoint())

    cp = threading.Thread(target=checkpointer)
    cp.start()
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    cp.join()
    patches.append(s.checkpoint())
    assert rebuild(patches) == s.to_dict()
    assert s.get("list3") == list(range(300))


def test_store_returns_one_store_per_context_and_store_context_installs_one() -> None:
    async def main() -> None:
        a = lw.store()
        assert lw.store() is a
        mine = lw.Store()
        with lw.store_context(mine):
            assert lw.store() is mine and current_store() is mine
        assert lw.store() is a

    asyncio.run(main())


class Progress(lw.StoreModel):
    done: int = 0
    notes: list[str] = Field(default_factory=list)
    title: str = "untitled"


def test_store_model_fields_live_in_the_store() -> None:
    s = lw.Store()
    p = lw.store_as(Progress, store=s)
    assert s.get("Progress:done") == 0 and s.get("Progress:notes") == []
    p.done += 1
    p.notes.append("read the docs")
    assert s.get("Progress:done") == 1
    assert s.get("Progress:notes") == ["read the docs"]
    s.set("Progress:title", "changed in the store")
    assert p.title == "changed in the store"
    assert p.model_dump() == {
        "done": 1,
        "notes": ["read the docs"],
        "title": "changed in the store",
    }
    again = lw.store_as(Progress, store=s)
    assert again.done == 1 and again == p


def test_store_model_instances_are_kept_apart_and_validated() -> None:
    s = lw.Store()
    with lw.store_context(s):
        a = lw.store_as(Progress, instance="alice")
        b = lw.store_as(Progress, instance="bob")
        a.done = 5
        assert b.done == 0
        assert s.get("Progress:alice:done") == 5 and "Progress:done" not in s
        with pytest.raises(ValidationError):
            a.done = "many"  # type: ignore[assignment]
        assert a.done == 5


def test_store_model_loads_existing_values_and_records_patches() -> None:
    s = lw.Store({"Progress:done": 3})
    s.checkpoint()
    p = Progress(store=s, title="given")
    assert p.done == 3 and p.title == "given"
    patch = s.checkpoint()
    assert {"op": "add", "path": "/Progress:title", "value": "given"} in patch
    assert not any(op["path"] == "/Progress:done" for op in patch)
    p.notes.append("x")
    assert s.checkpoint() == [{"op": "add", "path": "/Progress:notes/0", "value": "x"}]


def test_store_model_rejects_invalid_existing_values() -> None:
    s = lw.Store({"Progress:done": "not a number"})
    with pytest.raises(ValidationError):
        lw.store_as(Progress, store=s)
