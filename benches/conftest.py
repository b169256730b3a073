import contextlib
import functools
import gzip
import io
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402  (the Debian corpus or the shipped sample)


@functools.cache
def corpus_path() -> tuple[Path, str]:
    """The Debian corpus in $NEARDUP_DATA (default ../shared/data), or the 3,000-document sample that
    ships with neardup where it is absent (a fresh clone), with the one line that says so ('' for
    the corpus itself)."""
    data = Path(os.environ["NEARDUP_DATA"]) if os.environ.get("NEARDUP_DATA") else synth.DATA
    note = io.StringIO()
    with contextlib.redirect_stderr(note):
        path = synth.debian_source(data, hint="NEARDUP_DATA=DIR")
    return path, note.getvalue().strip()


def pytest_sessionstart(session: pytest.Session) -> None:
    # The fallback line, shown even with -q (output to stderr would be captured).
    _, note = corpus_path()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if note and reporter is not None:
        reporter.write_line(note)


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    with gzip.open(corpus_path()[0], "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


try:
    import pytest_benchmark  # noqa: F401
except ImportError:  # the suites are skipped with the one line that says how to get it
    WHY = "pytest-benchmark is not installed: pip install pytest-benchmark (or pip install '.[bench]')"

    def pytest_configure(config: pytest.Config) -> None:
        config.addinivalue_line("markers", "benchmark(group): pytest-benchmark's (not installed)")

    @pytest.fixture
    def benchmark() -> None:
        pytest.skip(WHY)
