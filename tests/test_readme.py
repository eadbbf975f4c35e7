"""The README's first program runs as written, offline, and prints what it says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_the_readme_first_program_runs_offline(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## A first program", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    expected = re.search(r"print\(.*\)\s+# (.+)", code)
    assert expected is not None, "the example says what it prints"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected.group(1).strip()
    assert not list(tmp_path.glob("*.db"))  # db=False: nothing written
