"""`%gpumem status` and `explain` as HTML in a real kernel on the stand-in NVML: the same figures as the
text, which stays the text/plain fallback; this kernel highlighted, N/A and LOST styled, names escaped."""

from __future__ import annotations

from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from protocol_fixtures import s1_snapshot

from jupyter_gpumem.gpu.model import GpuProcess
from jupyter_gpumem.render.html import status_html
from jupyter_gpumem.render.text import render

pytestmark = pytest.mark.kernel


class Page(HTMLParser):
    """The parts of a rich output a test reads: the text of each element by class, the table rows (cell
    texts and classes), whether any element other than the expected ones appeared."""

    def __init__(self, markup: str):
        super().__init__()
        self.tags: list[str] = []
        self.rows: list[dict[str, Any]] = []
        self.by_class: dict[str, list[str]] = {}
        self._open: list[tuple[str, list[str], list[str]]] = []  # tag, classes, text parts
        self._row: dict[str, Any] | None = None
        self._cell: list[str] | None = None
        self._cell_classes: list[str] = []
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        classes = (dict(attrs).get("class") or "").split()
        self._open.append((tag, classes, []))
        if tag == "tr":
            self._row = {"classes": classes, "cells": [], "cell_classes": []}
        elif tag == "td":
            self._cell, self._cell_classes = [], []
        elif self._cell is not None:
            self._cell_classes.extend(classes)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            name, classes, text = self._open.pop()
            joined = "".join(text)
            for cls in classes:
                self.by_class.setdefault(cls, []).append(joined)
            if self._open:
                self._open[-1][2].append(joined)
            if name == tag:
                break
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row["cells"].append("".join(self._cell))
            self._row["cell_classes"].append(self._cell_classes)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row["cells"]:
                self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if not data.strip() and "\n" in data:
            return  # the templates' line breaks between elements: no text a browser shows
        if self._open and self._open[-1][0] != "style":
            self._open[-1][2].append(data)
        if self._cell is not None:
            self._cell.append(data)


def rich(reply: Any) -> tuple[str, str]:
    """The one display of a magic's reply: (text/plain, text/html)."""
    assert reply.status == "ok" and reply.stderr == "" and reply.error == ""
    assert len(reply.displayed) == 1
    data = reply.displayed[0]["data"]
    return data["text/plain"], data["text/html"]


def test_status_html_has_the_s1_figures_and_the_text_is_its_fallback(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")
    text, markup = rich(kernel.run("%gpumem status"))
    assert "memory 6063 MiB used of 11422 MiB (11.2 GiB) (53%)" in text  # the text, exactly as before
    page = Page(markup)
    assert page.by_class["jp-GpuMem-memory"] == [
        "memory 6063 MiB used of 11422 MiB (11.2 GiB) (53%) · 5359 MiB free · utilisation 97%",
        "memory 4575 MiB used of 8192 MiB (8.0 GiB) (56%) · 3617 MiB free · utilisation 35%",
    ]
    assert [r["cells"] for r in page.rows] == [
        ["788", "N/A", "5927 MiB", "N/A", "compute", "python.exe"],
        ["788", "N/A", "N/A", "N/A", "compute", "python.exe"],
        ["1204", "N/A", "N/A", "N/A", "graphics", "dwm.exe"],
    ]
    # N/A is styled as unknown (with its meaning as the tooltip), never as a figure.
    assert all("jp-GpuMem-na" in classes for classes in page.rows[1]["cell_classes"][1:4])
    assert 'title="the driver cannot tell: unknown, not zero"' in markup
    assert any("N/A memory: the driver cannot tell" in p for p in page.by_class["jp-GpuMem-muted"])
    assert page.by_class["jp-GpuMem-banner"][0].startswith("SIMULATED GPU: stand-in NVML, scenario")
    # Theme colours: JupyterLab's variables.
    assert "var(--jp-ui-font-color1" in markup and "var(--jp-error-color1" in markup


def test_status_html_highlights_this_kernel_and_escapes_a_hostile_name(kernel_with):
    kernel = kernel_with("sidebar")
    kernel.run("%load_ext jupyter_gpumem")
    pid = kernel.run("import os; print(os.getpid())").stdout.strip()
    text, markup = rich(kernel.run("%gpumem status"))
    page = Page(markup)
    gpu0 = [r for r in page.rows if r["cells"][0] in (pid, "41337", "41338")]
    assert [r["cells"][0] for r in gpu0] == ["41337", pid, "41338"]  # largest first
    mine = gpu0[1]
    assert mine["classes"] == ["jp-GpuMem-self"] and mine["cells"][2] == "3174 MiB"
    assert mine["cells"][5] == "pythonthis kernel"  # the name, then its badge
    assert [r for r in page.rows if "jp-GpuMem-self" in r["classes"]] == [mine]
    # The hostile name is text: escaped, no element made of it, shown exactly.
    assert gpu0[2]["cells"][5] == "<img src=x onerror=alert(1)>"
    assert "<img" not in markup and "&lt;img src=x onerror=alert(1)&gt;" in markup
    assert "img" not in page.tags
    assert "<img src=x onerror=alert(1)>" in text  # the text fallback shows it as it is, as before


def test_a_lost_gpu_is_styled_lost_and_the_other_still_reads(kernel_with):
    kernel = kernel_with("gpu_lost")
    kernel.run("%load_ext jupyter_gpumem")
    _, markup = rich(kernel.run("%gpumem status"))
    page = Page(markup)
    assert page.by_class["jp-GpuMem-lost"] == [
        "LOST: the driver reports this GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST). It needs a reset "
        "(nvidia-smi -r) or a reboot; the other GPUs read as usual."
    ]
    assert page.by_class["jp-GpuMem-memory"][0].startswith("memory 1200 MiB used of 23028 MiB")
    assert [r["cells"][0] for r in page.rows] == ["4100"]


def test_explain_html_keeps_the_texts_lines_and_nests_the_details(kernel_with):
    kernel = kernel_with("s1_this_kernel")
    kernel.run("%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow")
    text, markup = rich(kernel.run("%gpumem explain"))
    page = Page(markup)
    paragraphs = [p for p in page.by_class.get("jp-GpuMem-explain", [])]
    assert paragraphs and all(line.strip() in paragraphs[0] for line in text.splitlines())
    assert text.splitlines()[0].startswith("Policy fraction=0.5 framework=tensorflow")


def test_without_a_driver_the_rich_status_is_the_sentence(kernel_with):
    kernel = kernel_with("no_driver")
    kernel.run("%load_ext jupyter_gpumem")
    text, markup = rich(kernel.run("%gpumem status"))
    assert text.startswith("The NVIDIA driver is installed but not loaded")
    assert Page(markup).by_class == {"jp-GpuMem": [text], "jp-GpuMem-output": [text], "jp-GpuMem-statusOutput": [text]}


@pytest.mark.parametrize("name", ["<script>alert(1)</script>", "a\"b'c&d", "line\nbreak\x1b[31m"])
def test_every_host_string_is_escaped_and_printable(name):
    snapshot = s1_snapshot()
    gpu = snapshot.devices[1]
    hostile = GpuProcess(6200, gpu.uuid or "", 1 << 28, "compute", name, name, 0.0, False)
    changed = replace(snapshot, devices=(snapshot.devices[0], replace(gpu, processes=(hostile,))))
    markup = status_html(changed, None, [])
    page = Page(markup)
    row = next(r for r in page.rows if r["cells"][0] == "6200")
    shown = name.replace("\n", "\\n").replace("\x1b", "\\x1b")  # control characters made visible, as in the text
    assert row["cells"][1] == shown and row["cells"][5] == shown
    assert "<script" not in markup and set(page.tags) <= {
        "div", "style", "p", "span", "section", "table", "thead", "tbody", "tr", "th", "td"
    }  # fmt: skip
    assert shown in render(changed)


def test_the_output_carries_the_stylesheet_the_sidebar_imports_with_fallbacks_outside_jupyterlab():
    base = (Path(__file__).resolve().parents[2] / "labextension" / "style" / "base.css").read_text()
    assert "@import url('../../jupyter_gpumem/render/templates/gpumem.css');" in base
    markup = status_html(s1_snapshot(), None, [])
    style = markup[markup.index("<style>") + 7 : markup.index("</style>")]
    # The sidebar's own rules for the same elements (gpumem.css), not a second block: the table's cells, the
    # badge, the levels; with VS Code's colours where JupyterLab's variables are absent.
    for rule in (
        ".jp-GpuMem-processes th, .jp-GpuMem-processes td{",
        ".jp-GpuMem-badge{",
        ".jp-GpuMem-headline[data-level='error'], .jp-GpuMem-reason{",
        "var(--vscode-editor-foreground",
    ):
        assert rule in style, rule  # fmt: skip
    assert 'class="jp-GpuMem-processes"' in markup and "jp-gpumem-" not in markup  # the TypeScript scheme only
