"""A child process interrupted in the middle of a long call, as the Ctrl-C tests run it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable


def interrupt_after(
    script: str,
    *args: str,
    wait: float,
    timeout: float,
    preexec_fn: Callable[[], object] | None = None,
) -> tuple[str, float]:
    """Runs ``python -c script args``; once it prints ``ready``, waits ``wait`` seconds and
    sends SIGINT. Returns the line it prints next and the seconds from the signal to its exit
    (``timeout`` at most)."""
    with subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
            time.sleep(wait)
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            line = child.stdout.readline().strip()
            child.wait(timeout=timeout)
            return line, time.monotonic() - sent
        finally:
            child.kill()
