"""The server's notice to a kernel's user (its idle culler, docs/hub.md): a file beside the kernel's report,
which the kernel reads with every sample and sends on to the sidebar, the status bar and the inline view."""

from __future__ import annotations

import json
import time
from pathlib import Path

from protocol_fixtures import IDLE_NOTICE

from jupyter_gpumem.gpu.files import replace_json
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.publish import Publisher
from jupyter_gpumem.kernel.widget import header_html
from jupyter_gpumem.server import culler
from jupyter_gpumem.server.culler import Action
from jupyter_gpumem.wire.comm import TARGET
from jupyter_gpumem.wire.report import notice_path

NOTICE = {"protocol": 1, "type": "notice", **IDLE_NOTICE}


def test_the_publisher_reads_the_notice_beside_its_report_and_refuses_a_malformed_one(tmp_path: Path) -> None:
    connection = tmp_path / "kernel-abc.json"
    publisher = Publisher(tmp_path / "jupyter-gpumem" / "kernel-abc.json")
    assert publisher.notice() is None
    path = notice_path(connection)
    path.parent.mkdir(mode=0o700)  # the kernel reads a notice only in a folder private to its user
    replace_json(path, NOTICE)
    assert publisher.notice() == {**IDLE_NOTICE, "text_said": None}  # an older server's notice: its text alone
    for bad in (
        {**NOTICE, "kind": "reboot_now"},
        {**NOTICE, "protocol": 2},
        {**NOTICE, "text": ["<b>"]},
        {**NOTICE, "t": True},
        {**NOTICE, "shutdown_at": "soon"},
    ):
        replace_json(path, bad)
        assert publisher.notice() is None, bad
    path.write_text("{not json")
    assert publisher.notice() is None
    replace_json(path, {**NOTICE, "kind": "idle_shutdown", "text": "Shut down: idle 60 min holding 3.1 GiB."})
    assert publisher.notice() == {
        **IDLE_NOTICE,
        "text_said": None,
        "kind": "idle_shutdown",
        "text": "Shut down: idle 60 min holding 3.1 GiB.",
    }
    path.unlink()
    assert publisher.notice() is None


def test_the_inline_view_shows_the_notice_first_and_as_text() -> None:
    sample = {"simulated": None, "problem": "no driver", "gpus": [], "notice": {**IDLE_NOTICE, "text": "<b>idle</b>"}}
    html = header_html(sample, None)
    assert html.startswith('<div class="jp-GpuMem-notice" data-level="warn">&lt;b&gt;idle&lt;/b&gt;</div>')
    assert "jp-GpuMem-notice" not in header_html({**sample, "notice": None}, None)


def test_a_kernel_sends_the_servers_notice_with_its_code_and_values_and_history_keeps_none(kernel_with) -> None:  # type: ignore[no-untyped-def]
    kernel = kernel_with("s1_two_gpus")
    kernel.run("import jupyter_gpumem; jupyter_gpumem._connect_sidebar(interval_s=0.2)")
    opened = kernel.comm_message("comm_open", target_name=TARGET)
    reply = kernel.run("from jupyter_gpumem.kernel.publish import kernel_report_path; print(kernel_report_path())")
    report = Path(reply.stdout.strip())
    written = culler.notice(Action("warn", "abc", 3 << 30, 1800.0, 1763742600.0), 1763740790.0)
    replace_json(report.with_name(report.stem + ".notice.json"), written)
    deadline = time.monotonic() + 30
    while True:
        sample = kernel.comm_message("comm_msg", comm_id=opened["comm_id"])["data"]["sample"]
        if sample["notice"] is not None or time.monotonic() > deadline:
            break
    assert sample["notice"] == {k: written[k] for k in ("kind", "text", "text_said", "t", "shutdown_at")}
    assert sample["notice"]["text_said"]["code"] == "idle_warning_shutdown"
    assert "notice" not in protocol.figures_only(sample)
    assert "notice" not in json.loads(report.read_text())["sample"]  # the server's own word is not sent back
