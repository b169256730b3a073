"""The core's normalization tables (src/text/normal_tables.rs) are what tools/normal_tables.py
makes of this Python's ``unicodedata``: a change to the rules or the blocks shows up as a change
of the committed tables, which tests/test_core_normalizes.py then checks character by character."""

from __future__ import annotations

import importlib.util
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_tables_are_what_the_script_makes():
    committed = (ROOT / "src" / "text" / "normal_tables.rs").read_text(encoding="utf-8")
    made_with = f"(Unicode {unicodedata.unidata_version})"
    if made_with not in committed.splitlines()[0]:
        pytest.skip(f"the tables were made with another Unicode version than {made_with}")
    spec = importlib.util.spec_from_file_location(
        "normal_tables", ROOT / "tools" / "normal_tables.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.tables() == committed
