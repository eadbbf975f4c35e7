"""Edges of the encoded secret forms (``model/_secret_forms.py``): a form next to a JSON
escape leaves the row valid JSON (and loadable from the store), a secret holding a lone
surrogate is learnt without failing, and every form at every offset is found for random
secrets (a property test)."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.model import _redact

SECRET = "Zq9-secretKEY-0123456789"
# its base64 at offset 1, without the two characters before its own (the first holds
# none of its bits, the second some): the first character of what is left also
# mixes in a neighbour's bits, so the redaction takes one more character before it
CORE = base64.b64encode(b"x" + SECRET.encode()).decode()[2:]


@pytest.mark.parametrize("before", ["line\n", "tab\t", "caf\u00e9", "quote\\", 'q"'])
def test_a_base64_form_right_after_a_json_escape_leaves_the_row_json(before: str) -> None:
    """The character before a base64 form is redacted with it when it may hold some of
    the secret's bits; in JSON text that character may end an escape (``\\n``,
    ``\\u00e9``): cutting the escape in half made the row invalid JSON."""
    _redact.learn_secrets([SECRET])
    row = json.dumps({"out": before + CORE + " end"})
    out = _redact.redact_known(row)
    assert "[redacted]" in out and CORE[1:] not in out
    value = json.loads(out)["out"]
    assert "[redacted]" in value and value.endswith(" end")
    assert value.startswith(before[:-1])  # the text before the escape is kept


def test_a_secret_inside_an_escape_is_redacted_with_the_whole_escape() -> None:
    """A form found starting inside a ``\\uXXXX`` escape (the secret begins with hex
    digits) takes the escape with it: the row stays JSON."""
    secret = "00e9-token-abcdef-123456"
    _redact.learn_secrets([secret])
    row = '{"a": "caf\\u' + secret + '"}'  # (hostile text: "caf\u00e9-token-...")
    out = _redact.redact_known(row)
    assert secret[4:] not in out
    assert json.loads(out) == {"a": "caf[redacted]"}


@lw.tool
def print_blob() -> str:
    """Print lines, the last the key's base64 right after a newline."""
    return "first line\n" + CORE


async def test_a_row_holding_an_encoded_secret_after_a_newline_still_loads(
    tmp_path: Path,
) -> None:
    """The store's rows are redacted by the writer: the tool message (a JSON row)
    still loads, its text redacted."""
    _redact.learn_secrets([SECRET])
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("print_blob", {}), "done."])
    await lw.run(lw.react(tools=[print_blob], submit=False), "go", model=model, db=db)
    [info] = lw.list_runs(db)
    with lw.load_run(info.id, db=db) as log:
        tools = [m for m in log.messages() if isinstance(m, lw.ToolMessage)]
        events = list(log.events())
    assert len(tools) == 1 and events
    assert tools[0].text.startswith("first line") and tools[0].text.endswith("[redacted]==")
    assert CORE[1:] not in tools[0].text


def test_a_secret_with_a_lone_surrogate_is_learnt() -> None:
    """An environment variable that is not UTF-8 decodes to lone surrogates
    (``surrogateescape``): learning it failed in ``quote`` (UnicodeEncodeError), at
    the first redaction, and the environment's other secrets were never learnt."""
    secret = "tok-\udcff\udc80-abcdefgh"
    _redact.learn_secrets([secret])
    assert _redact.redact_known(json.dumps({"a": secret})) == '{"a": "[redacted]"}'
    assert _redact.redact("error: " + secret) == "error: [redacted]"
    # the bytes the variable held (0xff 0x80): a tool printing them in base64
    raw = secret.encode("utf-8", "surrogateescape")
    blob = base64.b64encode(b"..." + raw).decode()
    assert _redact.redact_known(json.dumps({"b": blob})) == '{"b": "Li4u[redacted]"}'  # (Li4u: ...)
    assert _redact.redact("url ?k=" + "".join(f"%{b:02X}" for b in raw)) == "url ?k=[redacted]"


def _forms(raw: bytes, secret: str, rng: random.Random) -> list[str]:
    """The forms the module says it covers, each inside random text of its kind."""
    pre, post = rng.randbytes(rng.randrange(6)), rng.randbytes(rng.randrange(6))
    blob = base64.b64encode(pre + raw + post).decode()
    url = base64.urlsafe_b64encode(pre + raw + post).decode().rstrip("=")
    hexed = "".join(c.upper() if rng.random() < 0.5 else c for c in raw.hex())
    pct = "".join(f"%{b:02X}" if rng.random() < 0.5 else f"%{b:02x}" for b in raw)
    units = secret.encode("utf-16-be")
    uesc = "".join(
        f"\\u{units[i]:02x}{units[i + 1]:02x}".upper().replace("\\U", "\\u")
        if rng.random() < 0.5
        else f"\\u{units[i]:02x}{units[i + 1]:02x}"
        for i in range(0, len(units), 2)
    )
    return [secret, blob, url, hexed, pct, uesc]


def test_every_form_of_random_secrets_at_random_offsets_is_redacted() -> None:
    """For random secrets (ASCII and not, 8 to 60 characters) each form is redacted
    inside random neighbours, in JSON (the row stays JSON) and plain text: what is
    left decodes to no 6 bytes of the secret."""
    rng = random.Random(20261127)
    alphabet = "abcdefXYZ0123456789-_+/=~!é€😀"
    for _ in range(80):
        n = rng.randrange(8, 61)
        secret = "".join(rng.choice(alphabet) for _ in range(n))
        raw = secret.encode()
        _redact.learn_secrets([secret])
        for form in _forms(raw, secret, rng):
            text = f"pre {form} post"
            assert _holds(text, raw), (secret, form)  # (the oracle is not blind)
            out_json = json.loads(_redact.redact_known(json.dumps({"t": text})))["t"]
            out_plain = _redact.redact_known(text, plain=True)
            for out in (out_json, out_plain):
                assert "[redacted]" in out, (secret, form)
                left = out.replace("[redacted]", " ")
                assert not _holds(left, raw), (secret, form, out)


def _holds(text: str, raw: bytes, window: int = 6) -> bool:
    """Whether ``text`` holds ``window`` bytes of ``raw`` plainly or in base64 (any
    offset, either alphabet), hex or percent escapes."""
    import re
    from urllib.parse import unquote_to_bytes

    parts = {raw[i : i + window] for i in range(len(raw) - window + 1)}
    data = text.encode()
    unescaped = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), text)
    joined = unescaped.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    decoded = [data, unquote_to_bytes(data), joined.encode()]
    for run in re.findall(rb"[A-Za-z0-9+/_\-]{8,}", data):
        std = run.replace(b"-", b"+").replace(b"_", b"/")
        for k in range(4):
            chunk = std[k:][: (len(std) - k) // 4 * 4]
            decoded.append(base64.b64decode(chunk))
    for run in re.findall(rb"[0-9A-Fa-f]{12,}", data):
        for k in range(2):
            chunk = run[k:][: (len(run) - k) // 2 * 2]
            decoded.append(bytes.fromhex(chunk.decode()))
    return any(p in d for p in parts for d in decoded)
