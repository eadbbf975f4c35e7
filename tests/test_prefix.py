"""starts_with: the prefix check behind steps that cost only their new work."""

import loopwright as lw
from loopwright._prefix import starts_with


def messages(n: int) -> list[lw.ChatMessage]:
    return [lw.UserMessage(content=str(i)) for i in range(n)]


def test_a_grown_list_starts_with_its_kept_prefix_and_the_prefix_is_left_as_it_was() -> None:
    items = messages(5)
    kept = items[:3]
    assert starts_with(items, kept)
    assert kept == items[:3] and len(kept) == 3  # extended for the comparison, cut back


def test_a_replaced_middle_item_is_seen() -> None:
    items = messages(5)
    kept = items[:4]
    items[1] = lw.UserMessage(content="edited")
    assert not starts_with(items, kept)
    assert len(kept) == 4


def test_shorter_lists_other_last_items_and_empty_prefixes() -> None:
    items = messages(3)
    assert not starts_with(items[:2], list(items))
    assert not starts_with(items, [items[0], items[2]])
    assert starts_with(items, [])
    assert starts_with([], [])


def test_sequences_that_are_not_lists_are_compared_too() -> None:
    items = messages(4)
    assert starts_with(tuple(items), items[:2])
    assert not starts_with(tuple(reversed(items)), items[:2])


def test_the_last_item_must_be_the_very_same_object() -> None:
    items = messages(3)
    copy = items[1].model_copy()
    assert copy == items[1]
    assert not starts_with(items, [items[0], copy])
