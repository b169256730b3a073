"""README.md is the front door: short, the three ways to dedup on its first screen, its test
command the one CI runs. (Its Python blocks run as tests of their own: pytest-markdown-docs; its
shell blocks in tests/test_docs.py.)"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_read_in_five_minutes():
    assert len(README.splitlines()) <= 250


def test_the_first_screen_shows_how_to_dedup_a_file_a_dataframe_and_a_dask_corpus():
    # A first screen: the first 80 lines; the three headings a newcomer looks for are there.
    first_screen = "\n".join(README.splitlines()[:80])
    for heading in ("## Install", "## Deduplicate a JSONL file", "## Deduplicate a DataFrame"):
        assert heading in first_screen, heading
    assert "## Deduplicate on a Dask cluster" in "\n".join(README.splitlines()[:100])


def test_every_documentation_link_of_the_readme_names_a_page_that_exists():
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert len(links) >= 13
    for link in links:
        assert (ROOT / link).is_file(), link


def test_the_python_blocks_of_the_docs_are_collected_as_tests(pytestconfig):
    # pytest-markdown-docs (the `test` extra) runs them; without it they would silently not run.
    assert pytestconfig.pluginmanager.hasplugin("pytest_markdown_docs")
    assert pytestconfig.option.markdowndocs


def test_ci_runs_the_readme_test_command():
    command = (
        re.search(r"## Development.*?```bash\n(.*?)\n```", README, flags=re.S).group(1).strip()
    )
    assert "mkdocs build --strict" in command and command.endswith("python3 -m pytest")
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
