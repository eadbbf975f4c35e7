"""Secrets never reach the run store through the options `loopwright run` and
`loopwright eval` record for `runs resume` (issue 21): names that look like secrets at
any depth, URL credentials and queries; `runs resume` says what was left out."""

from __future__ import annotations

import json
from pathlib import Path

from loopwright.cli._recorded import eval_options, model_options_of
from loopwright.model import GenerateConfig

from ._cli import cli

SECRETS = ("hunter2", "sk-live-123", "sk-1-zz", "hf_abc9", "pw-9f3q", "qs-77x", "xb-42")
# (-G extra_body is also sent to the model: its events redact the values learnt, 8+ chars)
LONG = "ab-extra-4242"


def test_model_task_args_and_settings_are_recorded_without_secrets() -> None:
    recorded = model_options_of(
        "openai/gpt-4o",
        [
            "base_url=https://bob:hunter2@llm.corp/v1?api-version=1&sig=qs-77x",
            'default_headers={"Authorization": "Bearer sk-live-123"}',
            "api_key=sk-1-zz",
            'extra={"deep": [{"x_api_key": "xb-42", "keep": "http://h/p"}]}',
            "n=007",
        ],
        None,
        GenerateConfig(extra_body={"session_token": "xb-42", "top_k": 3}),
    )
    assert recorded["model_args"] == [
        "base_url=https://llm.corp/v1",
        'extra={"deep": [{"keep": "http://h/p"}]}',
        "n=007",  # (unchanged: kept as given)
    ]
    assert recorded["config"] == {"extra_body": {"top_k": 3}}
    assert recorded["dropped_model_args"] == [
        "base_url (URL credentials or query)",
        "default_headers",
        "api_key",
        "extra.deep[0].x_api_key",
    ]
    assert recorded["dropped_config"] == ["config.extra_body.session_token"]
    tasks = eval_options(
        ["t.py"],
        ["hf_token=hf_abc9", "db_password=pw-9f3q", 'cfg={"url": "s3://k:xb-42@b/o"}', "n=2"],
        None, [], None, None, None, None, None,
    )  # fmt: skip
    assert tasks["task_args"] == ['cfg={"url": "s3://b/o"}', "n=2"]
    assert tasks["dropped_task_args"] == [
        "hf_token",
        "db_password",
        "cfg.url (URL credentials or query)",
    ]
    text = json.dumps([recorded, tasks])
    assert not [s for s in SECRETS if s in text]


TASKS = """
import loopwright as lw

@lw.task
def secretive(hf_token: str = "", db_password: str = "", cfg: dict = {}, n: int = 1) -> lw.Task:
    data = [{"input": "hi", "target": "ok"} for _ in range(n)]
    return lw.Task(data, agent=lw.react(submit=False), scorer=lw.match(),
                   model=lw.get_model("mock", outputs=["ok"], repeat=True))
"""


def test_an_eval_records_no_secret_and_runs_resume_says_what_was_left_out(tmp_path: Path) -> None:
    (tmp_path / "tasks.py").write_text(TASKS)
    db = tmp_path / "runs.db"
    r = cli(
        "eval", "tasks.py@secretive", "-T", "hf_token=hf_abc9", "-T", "db_password=pw-9f3q",
        "-T", 'cfg={"url": "https://bob:hunter2@h/p?sig=qs-77x"}', "-G",
        'extra_body={"auth": "ab-extra-4242"}', "--json", cwd=tmp_path, db=db,
    )  # fmt: skip
    assert r.code == 0, r.err
    run_id = r.json()["tasks"][0]["run_id"]
    r = cli("runs", "resume", run_id, "-T", "hf_token=hf_abc9", "--json", cwd=tmp_path, db=db)
    assert r.code == 0, r.err
    assert "give them again with -T" in r.err and "db_password" in r.err
    assert "cfg.url (URL credentials or query)" in r.err and "hf_token" not in r.err
    assert "config.extra_body.auth" in r.err
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    assert not [s for s in (*SECRETS, LONG) if s.encode() in stored]
