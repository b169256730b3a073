"""The ``neardup`` command (also ``python -m neardup``): one module a command, over the library.

:mod:`.app` holds the command group and :func:`main`; :mod:`.options` the options the commands
share; :mod:`.output` what they print. Each command module registers its command on import.
"""

from __future__ import annotations

from . import dedup, explain, fingerprint, index, pairs, plan, tune  # noqa: F401 (registers)
from .app import cli, main
from .options import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, sample_path

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "cli",
    "main",
    "sample_path",
]
