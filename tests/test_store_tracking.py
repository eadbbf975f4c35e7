"""Changes made in place to the store's dicts and lists are recorded as they are made:
one operation each, at the right place, whatever the size of the container."""

import copy
import importlib
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import loopwright as lw
from loopwright.stores import apply_store_patch

store_module = importlib.import_module("loopwright.stores._store")


def rebuild(patches: list[list[dict[str, Any]]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for patch in patches:
        apply_store_patch(data, patch)
    return data


def test_an_append_to_a_long_list_is_one_add_and_serialises_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = lw.Store({"items": list(range(100_000)), "big": {"blob": "x" * 1_000_000}})
    first = s.checkpoint()
    seen: list[str] = []
    real = store_module._jsonable

    def counting(key: str, value: Any) -> Any:
        seen.append(key)
        return real(key, value)

    monkeypatch.setattr(store_module, "_jsonable", counting)
    s.get("items").append({"n": 1})
    s.get("big")["note"] = "hi"
    patch = s.checkpoint()
    assert patch == [
        {"op": "add", "path": "/items/100000", "value": {"n": 1}},
        {"op": "add", "path": "/big/note", "value": "hi"},
    ]
    assert seen == []  # neither the list nor the blob was serialised again
    s.get("items")[-1]["n"] = 2  # a container inside, tracked too
    assert s.checkpoint() == [{"op": "replace", "path": "/items/100000/n", "value": 2}]
    assert rebuild([first, patch, [{"op": "replace", "path": "/items/100000/n", "value": 2}]]) == (
        s.to_dict()
    )


def test_moves_renumber_the_containers_after_them() -> None:
    s = lw.Store({"rows": [{"id": 0}, {"id": 1}, {"id": 2}]})
    patches = [s.checkpoint()]
    rows = s.get("rows")
    last = rows[2]
    rows.insert(0, {"id": -1})
    last["seen"] = True  # now at index 3
    rows.pop(0)
    last["again"] = 1  # back at index 2
    rows.remove({"id": 0})
    last["third"] = 3  # index 1
    patches.append(s.checkpoint())
    assert {"op": "add", "path": "/rows/1/third", "value": 3} in patches[1]
    rows.sort(key=lambda r: -r["id"])
    rows[0]["sorted"] = True
    rows.reverse()
    rows[0]["reversed"] = True
    del rows[0:1]
    rows[0]["sliced"] = True
    patches.append(s.checkpoint())
    assert rebuild(patches) == s.to_dict()
    expected = {"id": 2, "seen": True, "again": 1, "third": 3, "sorted": True, "sliced": True}
    assert s.get("rows") == [expected]


def test_a_container_taken_out_or_replaced_stops_recording() -> None:
    s = lw.Store({"d": {"inner": {"a": 1}}, "l": [[1]]})
    patches = [s.checkpoint()]
    inner = s.get("d").pop("inner")
    inner["a"] = 2  # no longer in the store
    old = s.get("l")
    s.set("l", [[9]])
    old.append("lost")  # replaced: no longer in the store
    first = s.get("l")[0]
    s.get("l")[0] = [8]
    first.append("lost too")
    patches.append(s.checkpoint())
    assert rebuild(patches) == s.to_dict() == {"d": {}, "l": [[8]]}


def test_the_store_keeps_its_own_copy_of_what_it_is_given() -> None:
    mine = {"tags": ["a"]}
    s = lw.Store()
    s.set("doc", mine)
    mine["tags"].append("not seen")
    assert s.get("doc") == {"tags": ["a"]}
    s.get("doc")["tags"].append(mine)  # copied in too (as JSON data)
    mine["tags"].append("still not seen")
    assert s.to_dict() == {"doc": {"tags": ["a", {"tags": ["a", "not seen"]}]}}


def test_what_json_cannot_hold_is_refused_before_anything_changes() -> None:
    s = lw.Store({"l": [1], "d": {}})
    s.checkpoint()
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        s.get("l").append(object())
    with pytest.raises(TypeError, match="keys must be strings"):
        s.get("d")[3] = "x"  # type: ignore[index]
    assert s.to_dict() == {"l": [1], "d": {}}
    assert s.checkpoint() == []


def test_other_values_changed_in_place_after_a_read_are_still_recorded() -> None:
    class Point(BaseModel):
        x: int

    s = lw.Store({"p": Point(x=1)})
    patches = [s.checkpoint()]
    s.get("p").x = 5
    patches.append(s.checkpoint())
    assert patches[1] == [{"op": "replace", "path": "/p/x", "value": 5}]
    assert rebuild(patches) == {"p": {"x": 5}}


def test_copies_and_pickles_of_tracked_values_are_plain() -> None:
    s = lw.Store({"d": {"l": [1, {"a": 2}]}})
    for made in (copy.deepcopy(s.get("d")), pickle.loads(pickle.dumps(s.get("d")))):
        assert type(made) is dict and type(made["l"]) is list and type(made["l"][1]) is dict
        made["l"].append(3)
    assert type(copy.copy(s.get("d"))) is dict
    assert s.get("d") == {"l": [1, {"a": 2}]}


values = st.recursive(
    st.integers(-3, 3) | st.text(max_size=2),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from("ab/~"), children, max_size=2)
    ),
    max_leaves=5,
)
list_ops = st.lists(
    st.tuples(
        st.sampled_from(
            ["append", "insert", "pop", "set", "del", "sort", "extend", "clear", "nested", "check"]
        ),
        st.integers(-4, 4),
        values,
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(list_ops)
def test_replaying_in_place_changes_rebuilds_the_store(ops: list[tuple[str, int, Any]]) -> None:
    s = lw.Store({"l": [{"k": 0}, [1], 2]})
    patches = [s.checkpoint()]
    for op, i, value in ops:
        lst = s.get("l")
        n = len(lst)
        if op == "append":
            lst.append(value)
        elif op == "insert":
            lst.insert(i, value)
        elif op == "pop" and n:
            lst.pop(i % n)
        elif op == "set" and n:
            lst[i % n] = value
        elif op == "del" and n:
            del lst[i % n]
        elif op == "sort":
            lst.sort(key=repr)
        elif op == "extend":
            lst += [value, value]
        elif op == "clear" and i == 0:
            lst.clear()
        elif op == "nested" and n:
            item = lst[i % n]
            if isinstance(item, list):
                item.append(value)
            elif isinstance(item, dict):
                item["z/~"] = value
        elif op == "check":
            patches.append(s.checkpoint())
    patches.append(s.checkpoint())
    assert rebuild(patches) == s.to_dict()
