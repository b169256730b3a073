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
def small_cluster(stock: bool = False) -> Iterator[Any]:
    """The Dask benchmarks' cluster, a client connected: ``neardup.dask.local_cluster(2,
    memory_limit="1.5GB")`` on this machine (2 worker processes of one thread, their allocator
    set as ``neardup.dask.cluster.WORKER_MALLOC`` says), or with ``stock`` Dask's own
    ``LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1.5GB")``, its workers'
    allocator as Dask sets it."""
    from distributed import Client, LocalCluster

    import neardup.dask as ndd

    settings = dict(memory_limit="1.5GB", host="127.0.0.1", dashboard_address=None)
    made = (
        LocalCluster(n_workers=2, threads_per_worker=1, **settings)
        if stock
        else ndd.local_cluster(2, **settings)
    )
    with made as cluster, Client(cluster) as client:
        # The workers import neardup (and with it pandas, pyarrow and dask.dataframe) before
        # the run, as workers started with ``--preload neardup.dask`` do: a benchmark measures
        # runs on a cluster that is up, not the start of its workers (about 0.7 CPU s each).
        client.run(exec, "import neardup.dask, pyarrow.parquet")
        yield client


class ProcessSampler:
    """This process and its children (a local cluster's workers), sampled every 0.1 s by a thread
    while the ``with`` block runs: ``peaks`` (pid -> peak RSS in bytes) and ``trace`` ((time,
    the largest child RSS) at each sample). :meth:`cpu_seconds` reads their CPU time when asked,
    less the sampling thread's own (``own``)."""

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()
        self.peaks: dict[int, float] = {}
        self.trace: list[tuple[float, float]] = []
        self.own = 0.0
        self._lock = threading.Lock()
        self._known: dict[int, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _processes(self, refresh: bool) -> list[Any]:
        """This process and its children, the children looked up again when ``refresh`` (a scan
        of every process of the machine), else those seen last."""
        with self._lock:
            if refresh or not self._known:
                found = self.me.children(recursive=True)
                self._known = {p.pid: self._known.get(p.pid, p) for p in found}
            return [self.me, *self._known.values()]

    def cpu_seconds(self) -> float:
        """The CPU seconds of this process and its children so far (read now, every child looked
        up), less the sampling thread's."""
        import psutil

        total = 0.0
        for p in self._processes(refresh=True):
            try:
                times = p.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        return total - self.own

    def client_peak_mb(self) -> float:
        return self.peaks.get(self.me.pid, 0) / 2**20

    def worker_peak_mb(self) -> float:
        return max((v for p, v in self.peaks.items() if p != self.me.pid), default=0) / 2**20

    def _run(self) -> None:
        import psutil

        samples = 0
        while not self._stop.is_set():
            now = time.perf_counter()
            largest = None
            for p in self._processes(refresh=samples % 10 == 0):
                try:
                    rss = p.memory_info().rss
                except psutil.Error:
                    continue
                self.peaks[p.pid] = max(self.peaks.get(p.pid, 0), rss)
                if p.pid != self.me.pid:
                    largest = rss if largest is None else max(largest, rss)
            if largest is not None:
                self.trace.append((now, largest))
            samples += 1
            # This thread's CPU is the measurement's, not the measured work's.
            self.own = time.thread_time()
            time.sleep(0.1)
