"""neardup.stages: the one description of the pipeline. Every kernel it names is a public kernel
and every public kernel belongs to one stage; each executor runs every stage once, in order; and
the executors report the steps the list gives them (one machine here; Dask in test_dask.py)."""

from __future__ import annotations

import inspect
import logging
import re

import neardup
from neardup import kernels, stages

NAMES = ("digest", "copies", "candidates", "verify", "components", "stars", "outputs")


def test_the_stages_in_their_order():
    # The order of docs/cluster.md's "What runs where" and the design's flow of a corpus.
    assert stages.stage_names() == NAMES
    assert [s.key for s in stages.STAGES][:2] == [None, "content key"]


def test_every_public_kernel_belongs_to_one_stage():
    named = [k for stage in stages.STAGES for k in stage.kernels]
    assert len(named) == len(set(named))
    functions = {
        name for name in kernels.__all__ if inspect.isfunction(getattr(kernels, name, None))
    }
    assert set(named) == functions


def test_each_executor_runs_every_stage_once_in_order():
    for executor in (stages.LOCAL, stages.DASK):
        assert tuple(s for step in executor for s in step.stages) == NAMES
        assert len({step.name for step in executor}) == len(executor)


def test_one_machine_reports_the_steps_of_the_list(caplog):
    texts = ["a cat sat on the mat today", "A cat sat on the mat today!", "dogs bark at night"]
    with caplog.at_level(logging.DEBUG, logger="neardup"):
        result = neardup.dedup(texts)
    reported = [
        m.group(1)
        for r in caplog.records
        if r.levelno == logging.DEBUG and (m := re.match(r"dedup: (\w+)", r.getMessage()))
    ]
    timed = [step.name for step in stages.LOCAL if f"seconds_{step.name}" in result.stats]
    # Every step but the outputs (the result itself) is timed and logged, in order.
    assert timed == reported == [step.name for step in stages.LOCAL][:-1]
    assert all(result.stats[f"seconds_{name}"] >= 0 for name in timed)
