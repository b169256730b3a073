"""What the benchmark scripts share: the best time of a function, the time and peak memory of a
process, a sampler of a process tree, the Dask benchmarks' cluster, and printing a results table
(and writing it to --out)."""

from __future__ import annotations

import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    """The fastest of ``repeat`` calls of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def timed(
    cmd: list[str], timeout: float, env: dict[str, str] | None = None
) -> tuple[float, float, int, str]:
    """(seconds, peak RSS in MB, exit status, stderr's tail) of a command run to its end. The peak
    comes from GNU time around the command: a child forked from this (large) process would carry
    this process's RSS into its own ru_maxrss."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                ["/usr/bin/time", "-f", "%M", "-o", rss_file.name, *cmd],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=timeout,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return float("inf"), float("nan"), -9, "timed out"
        seconds = time.perf_counter() - start
        text = rss_file.read().strip().splitlines()
        rss = int(text[-1]) / 1024 if text and text[-1].isdigit() else float("nan")
    return seconds, rss, proc.returncode, proc.stderr.strip()[-400:]


def publish(report: str, out: Path | None) -> None:
    """Prints a results table and writes it to ``out`` when given."""
    print(report)
    if out:
        out.write_text(report, encoding="utf-8")


@contextmanager
def small_cluster() -> Iterator[Any]:
    """The Dask benchmarks' cluster, a client connected: ``LocalCluster(n_workers=2,
    threads_per_worker=1, memory_limit="1.5GB")`` on this machine."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            memory_limit="1.5GB",
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


class ProcessSampler:
    """This process and its children (a local cluster's workers), sampled every 0.1 s by a thread
    while the ``with`` block runs: ``peaks`` (pid -> peak RSS in bytes), ``cpu`` (pid -> CPU
    seconds so far) and ``trace`` ((time, the largest child RSS) at each sample)."""

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()
        self.peaks: dict[int, float] = {}
        self.cpu: dict[int, float] = {}
        self.trace: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_seconds(self) -> float:
        return sum(self.cpu.values())

    def client_peak_mb(self) -> float:
        return self.peaks.get(self.me.pid, 0) / 2**20

    def worker_peak_mb(self) -> float:
        return max((v for p, v in self.peaks.items() if p != self.me.pid), default=0) / 2**20

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            now = time.perf_counter()
            largest = None
            for p in [self.me, *self.me.children(recursive=True)]:
                try:
                    with p.oneshot():
                        rss = p.memory_info().rss
                        times = p.cpu_times()
                except psutil.Error:
                    continue
                self.peaks[p.pid] = max(self.peaks.get(p.pid, 0), rss)
                self.cpu[p.pid] = times.user + times.system
                if p.pid != self.me.pid:
                    largest = rss if largest is None else max(largest, rss)
            if largest is not None:
                self.trace.append((now, largest))
            time.sleep(0.1)
