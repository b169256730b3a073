"""Hooks of the documentation site (mkdocs.yml's ``hooks``).

Material's search plugin segments Chinese text with jieba whenever jieba is installed (the [test]
extra installs it for neardup's Chinese tokenizer, and docs/encoders.md holds Chinese), and jieba
logs the loading of its dictionary to stderr at DEBUG level ("Building prefix dict from the
default dictionary ...") on its own handler, which ``mkdocs build --quiet`` does not reach. Its
logger is set to warnings only, so that the build prints only what is wrong.
"""

from __future__ import annotations

import logging
from typing import Any


def on_config(config: Any) -> Any:
    logging.getLogger("jieba").setLevel(logging.WARNING)
    return config
