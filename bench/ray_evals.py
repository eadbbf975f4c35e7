"""Eval throughput: one process, shards, and Ray, against a model with a fixed latency.

    .venv/bin/python bench/ray_evals.py [--samples 200] [--latency 0.05] [--max-samples 16]

A small OpenAI-compatible server on 127.0.0.1 answers every chat completion after
``--latency`` seconds; the eval's agent asks it once per sample (a one-step agent, so
the figures are the eval machinery's and the model's, not the agent's). The same eval
runs as: one process; two shards as two processes at once, then their merge; on a local
Ray with one worker and with two. Each line gives samples per second and the time per
sample over the one-process run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TASK = """
import loopwright as lw

@lw.task
def latency(n: int = 200) -> lw.Task:
    data = [{"id": f"q{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(n)]
    return lw.Task(data, agent=lw.react(submit=False), scorer=lw.match("numeric"))
"""


def serve(latency: float) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            question = next(m["content"] for m in body["messages"] if m["role"] == "user")
            a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
            time.sleep(latency)
            reply = {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": f"It is {a + b}."},
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def cli(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loopwright.cli", "eval", str(folder / "task.py"), "--json", *args],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"eval failed ({proc.returncode}): {err[-2000:]}")
    task: dict[str, Any] = json.loads(out)["tasks"][0]
    return task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--max-samples", type=int, default=16)
    args = parser.parse_args()
    server = serve(args.latency)
    os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    folder = Path(tempfile.mkdtemp(prefix="lw-bench-ray-"))
    (folder / "task.py").write_text(TASK)
    common = ["-m", "openai/bench", "-T", f"n={args.samples}", "--max-samples"]
    common.append(str(args.max_samples))
    rows: list[tuple[str, float]] = []

    t0 = time.perf_counter()
    finished(cli(folder, *common, "--db", "one.db"))
    rows.append(("one process", time.perf_counter() - t0))

    t0 = time.perf_counter()
    shards = [cli(folder, *common, "--shard", f"{k}/2", "--db", f"s{k}.db") for k in (1, 2)]
    for proc in shards:
        finished(proc)
    ran = time.perf_counter() - t0
    merge = finished(cli(folder, *common, "--merge", "s1.db", "--merge", "s2.db", "--db", "m.db"))
    assert merge["completed"] == args.samples, merge
    rows.append(("2 shards (2 processes), run", ran))
    rows.append(("2 shards, run + merge", time.perf_counter() - t0))

    import ray

    env = ["OPENAI_BASE_URL", "OPENAI_API_KEY"]
    for workers in (1, 2):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        try:
            import loopwright as lw

            t0 = time.perf_counter()
            [result] = lw.eval(
                str(folder / "task.py"),
                model="openai/bench",
                task_args={"n": args.samples},
                max_samples=args.max_samples,
                db=folder / f"ray{workers}.db",
                backend="ray",
                ray_env=env,
            )
            rows.append(
                (f"Ray, {workers} worker{'s' if workers > 1 else ''}", time.perf_counter() - t0)
            )
            assert result.completed == args.samples, result
        finally:
            ray.shutdown()
    server.shutdown()

    base = rows[0][1]
    print(
        f"{args.samples} samples, model latency {args.latency * 1000:.0f} ms, "
        f"{args.max_samples} samples at once per process, {os.cpu_count()} cores"
    )
    print(f"{'how':32} {'seconds':>8} {'samples/s':>10} {'ms/sample vs one process':>26}")
    for how, seconds in rows:
        extra = (seconds - base) / args.samples * 1000
        print(f"{how:32} {seconds:8.2f} {args.samples / seconds:10.1f} {extra:+26.2f}")


if __name__ == "__main__":
    main()
