"""The server reads each kernel's report file (tests/fixtures/report/) through the schema: one that is not valid
makes that kernel "not reporting", is logged once, and the other kernels' figures stand."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.server.figures import KernelSource, make_figures
from jupyter_gpumem.server.watcher import _report
from jupyter_gpumem.wire.report import REPORT, report_path

REPORTS = Path(__file__).parents[1] / "fixtures" / "report"


def test_a_malformed_report_is_not_reporting_and_said_once_while_a_valid_one_reports(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good, bad = tmp_path / "kernel-good.json", tmp_path / "kernel-bad.json"
    for connection, fixture in ((good, "report.json"), (bad, "malformed/gpus_not_a_list.json")):
        report_path(connection).parent.mkdir(mode=0o700, exist_ok=True)  # private to this user (docs/hub.md)
        shutil.copy(REPORTS / fixture, report_path(connection))
    log = logging.getLogger("test_reports")
    with caplog.at_level(logging.WARNING, "test_reports"):
        reports = [_report(k, str(c), log) for k, c in (("good", good), ("bad", bad), ("bad", bad))]
    expected = json.loads((REPORTS / "report.json").read_text())
    assert REPORT.problem(expected) is None  # the report as read: with the defaults of what it does not say
    assert reports[0] == expected and reports[1:] == [None, None]
    assert [r.getMessage() for r in caplog.records] == [
        f"jupyter-gpumem: ignored a kernel report from kernel bad ({report_path(bad)}) that is not valid: "
        "report.sample.gpus must be array."
    ]
    kernels = [KernelSource("good", 4242, reports[0]), KernelSource("bad", 5151, reports[1])]
    t = json.loads((REPORTS / "report.json").read_text())["t"]
    figures = make_figures(Snapshot(taken_at=t, own_pid=-1), kernels, now=t + 1, stale_after_s=30)
    assert [(k.id, k.status, k.policy) for k in figures.kernels] == [
        ("bad", "not_reporting", None),
        ("good", "reporting", "fraction=0.5 gpus=1"),
    ]
