"""An MCP server that speaks JSON-RPC by hand (stdio), to send what no SDK would.

    python raw_server.py SPEC.json

``SPEC.json`` holds ``{"tools": [...], "answers": {name: answer}}``: ``tools`` is the
``tools/list`` result's list as is, and a ``tools/call`` of ``name`` is answered with
``answer["result"]`` (any JSON, valid or not), the JSON-RPC error ``answer["error"]``,
or the bytes ``answer["raw"]`` (a latin-1 string, ``{ID}`` replaced by the request's
id) written as they are; before it, the notifications ``answer["notify"]`` names are
sent, and ``answer["then_list"]`` ("mute": no answer) is the ``tools/list`` answer from
then on; with
``answer["last_words"]``, they are written to stderr and the server ends. At start, it
writes ``spec["stderr_lines"]`` lines to stderr, and with ``spec["helper_pid_file"]``
starts a process that outlives it (it ends when its stdin does), writing its id there.
A call of a tool without an answer gets its arguments back as text.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    if "helper_pid_file" in spec:  # a process of its own it leaves behind when it ends
        import subprocess

        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(spec["helper_pid_file"], "w", encoding="utf-8") as f:
            f.write(str(helper.pid))
    line = b"a line of this server's log, written without end\n"
    for _ in range(spec.get("stderr_lines", 0)):  # a server that logs a lot
        sys.stderr.buffer.write(line)
    sys.stderr.flush()
    out = sys.stdout.buffer

    def send(message: object) -> None:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        rid, method = request["id"], request.get("method")
        if method == "initialize":
            result: object = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "raw", "version": "0"},
            }
        elif method == "tools/list":
            if spec["tools"] == "mute":
                continue
            result = {"tools": spec["tools"]}
        elif method == "ping":
            result = {}
        elif method == "tools/call":
            params = request["params"]
            answer = spec["answers"].get(params["name"])
            for notification in (answer or {}).get("notify", ()):
                send({"jsonrpc": "2.0", "method": notification})
            if answer is not None and "then_list" in answer:
                spec["tools"] = answer["then_list"]
            if answer is not None and "last_words" in answer:
                print(answer["last_words"], file=sys.stderr, flush=True)
                return  # dies without an answer
            if answer is None or not {"raw", "result", "error"} & set(answer):
                text = json.dumps(params.get("arguments"))
                result = {"content": [{"type": "text", "text": text}]}
            elif "error" in answer:
                send({"jsonrpc": "2.0", "id": rid, "error": answer["error"]})
                continue
            elif "raw" in answer:
                raw = answer["raw"].encode("latin-1").replace(b"{ID}", json.dumps(rid).encode())
                out.write(raw + b"\n")
                out.flush()
                continue
            else:
                result = answer["result"]
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "unknown"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
