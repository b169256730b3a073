"""Runs the Python blocks of README.md and docs/ (pytest-markdown-docs, `--markdown-docs` in
pyproject.toml) as a reader would: each in a fresh empty folder, as a script."""

import pytest


def pytest_markdown_docs_globals():
    # A block runs as a script does, so that `if __name__ == "__main__":` guards (needed where
    # Dask starts worker processes) run their body.
    return {"__name__": "__main__"}


@pytest.fixture(autouse=True)
def _markdown_block_in_empty_folder(request, tmp_path, monkeypatch):
    if request.node.get_closest_marker("markdown-docs") is not None:
        monkeypatch.chdir(tmp_path)  # the examples write files
    yield
