"""The JSON patch (RFC 6902) between two JSON values, as the store records its changes.

Equal subtrees are skipped with ``==`` (at C speed), so the work is linear in the values'
size, and an append to a long list is a single ``add``; since ``==`` says ``1 == 1.0 ==
True``, a patch is checked to give the new value, else the value is replaced whole.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JsonPatch", "diff", "dumps", "pointer"]

JsonPatch = list[dict[str, Any]]
"""A list of RFC 6902 operations (``{"op": "add", "path": "/key", "value": ...}``)."""


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)


def _esc(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def pointer(key: str) -> str:
    return "/" + _esc(key)


def _diff_into(old: Any, new: Any, path: str, ops: JsonPatch) -> None:
    """Append to ``ops`` the operations turning ``old`` into ``new`` at ``path``.

    Equal subtrees are skipped with ``==`` (at C speed), so the work is linear in the
    values' size, and an append to a long list is a single ``add``.
    """
    if type(old) is not type(new) or not isinstance(old, (dict, list)):
        ops.append({"op": "replace", "path": path, "value": new})
    elif isinstance(old, dict):
        for k in old:
            if k not in new:
                ops.append({"op": "remove", "path": f"{path}/{_esc(k)}"})
        for k, v in new.items():
            if k not in old:
                ops.append({"op": "add", "path": f"{path}/{_esc(k)}", "value": v})
            elif old[k] != v:
                _diff_into(old[k], v, f"{path}/{_esc(k)}", ops)
    else:
        n, m = len(old), len(new)
        if m >= n and new[:n] == old:  # appended
            ops.extend({"op": "add", "path": f"{path}/{i}", "value": new[i]} for i in range(n, m))
            return
        if m < n and old[:m] == new:  # cut at the end
            ops.extend({"op": "remove", "path": f"{path}/{i}"} for i in range(n - 1, m - 1, -1))
            return
        lo = 0
        while lo < min(n, m) and old[lo] == new[lo]:
            lo += 1
        hi = 0
        while hi < min(n, m) - lo and old[n - 1 - hi] == new[m - 1 - hi]:
            hi += 1
        if n == m:  # the same slots changed: diff each
            for i in range(lo, n - hi):
                if old[i] != new[i]:
                    _diff_into(old[i], new[i], f"{path}/{i}", ops)
            return
        ops.extend({"op": "remove", "path": f"{path}/{i}"} for i in range(n - hi - 1, lo - 1, -1))
        ops.extend(
            {"op": "add", "path": f"{path}/{lo + j}", "value": new[lo + j]}
            for j in range(m - hi - lo)
        )


def diff(key: str, old: Any, new: Any, new_text: str) -> JsonPatch:
    """The operations turning ``old`` into ``new`` under ``/key``: fine-grained for
    containers (one append is one ``add``), a ``replace`` otherwise."""
    path = pointer(key)
    if isinstance(old, (dict, list)) and type(old) is type(new):
        import jsonpatch

        ops: JsonPatch = []
        _diff_into(old, new, path, ops)
        try:
            # == says 1 == 1.0 == True: check that the patch really gives `new`
            patched = jsonpatch.apply_patch({key: old}, ops, in_place=True)[key]
            ok = bool(ops) and dumps(patched) == new_text
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
            ok = False
        if ok:
            return ops
    return [{"op": "replace", "path": path, "value": new}]
