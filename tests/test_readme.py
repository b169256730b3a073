"""The README's Python examples run as written, and its test command is the one CI runs."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write files
    assert BLOCKS
    namespace: dict = {}
    for index, block in enumerate(BLOCKS):
        exec(compile(block, f"README.md python block {index}", "exec"), namespace)


def test_ci_runs_the_readme_test_command():
    command = (
        re.search(r"## Development.*?```bash\n(.*?)\n```", README, flags=re.S).group(1).strip()
    )
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_type_stub_matches_the_compiled_module():
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "neardup._core"],
        capture_output=True,
        text=True,
        cwd=ROOT / "tests",
    )
    assert result.returncode == 0, result.stdout + result.stderr
