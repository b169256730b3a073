"""Runs the Python blocks of README.md and docs/ (pytest-markdown-docs, in the `test` extra) as a
reader would: each a test of its own, in a fresh empty folder, as a script.

The plugin's collection is switched on here rather than by `--markdown-docs` in pyproject.toml's
addopts, so that a pytest without the plugin (`pytest benches/` with the `bench` extra) still
runs; tests/test_readme.py fails the test run when the plugin is missing.
"""

import pytest


def pytest_configure(config):
    if config.pluginmanager.hasplugin("pytest_markdown_docs") or hasattr(
        config.option, "markdowndocs"
    ):
        config.option.markdowndocs = True


@pytest.hookimpl(optionalhook=True)  # a hook of the plugin: unknown without it
def pytest_markdown_docs_globals():
    # A block runs as a script does, so that `if __name__ == "__main__":` guards (needed where
    # Dask starts worker processes) run their body.
    return {"__name__": "__main__"}


@pytest.fixture(autouse=True)
def _markdown_block_in_empty_folder(request, tmp_path, monkeypatch):
    if request.node.get_closest_marker("markdown-docs") is not None:
        monkeypatch.chdir(tmp_path)  # the examples write files
    yield
