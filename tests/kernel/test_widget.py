"""The inline live view (`%gpumem show`, ``jupyter_gpumem.show()``): its words and figures from the protocol's
fixtures, and in real kernels on the stand-in NVML: what it displays, that it moves
while another cell runs, that views share the one sampler, that closing one leaves a still picture and
stops its updates, and that a notebook run headless keeps that picture."""

from __future__ import annotations

import contextlib
import html
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, SCENARIOS, Kernel, held_cell

from jupyter_gpumem import i18n, standin
from jupyter_gpumem.kernel.widget import STATIC, header_html, table_html
from jupyter_gpumem.render import viewtext
from jupyter_gpumem.units import GiB, MiB

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PLOTLY = "application/vnd.plotly.v1+json"
LOCALE = i18n.LOCALE_DIR
VIEWS = "jupyter_gpumem.kernel.runtime.runtime().stream.views"  # in a kernel: its open inline views


def fixture(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "protocol" / name).read_text())["sample"])


S1 = fixture("sample.json")
LOST = fixture("sample_lost_gpu.json")


# -- the words: the sidebar's, from the same fixtures (tests/ts/format.test.ts) ---------------------------------


def test_the_view_says_what_the_sidebar_says_for_the_same_sample():
    gpu0, gpu1 = S1["gpus"]
    assert viewtext.headline(gpu1, S1) == ("4.1 of 4.0 GiB budget (103%)", "error")
    assert viewtext.breakdown(gpu1, "TensorFlow") == "TensorFlow pool 3.6 GiB + 504 MiB outside it (measured) = 4.1 GiB"
    assert viewtext.over_line(gpu1) == (
        "Over budget: CUDA context + cuDNN/cuBLAS: 504 MiB outside TensorFlow's limit, 104 MiB more than the "
        "400 MiB set aside"
    )
    assert viewtext.policy_line(S1) == ("Policy: fraction=0.5 gpus=1 — in force in TensorFlow", "ok")
    assert viewtext.device_line(gpu1) == "GPU 1 · NVIDIA GeForce GTX 1080 · 4.8 GiB of 8.0 GiB used"
    assert viewtext.headline(gpu0, S1) == ("Hidden from this kernel by its policy (fraction=0.5 gpus=1)", "ok")
    started = {**S1, "policy": "fraction=0.5"}  # no gpus= of its own: the GPUs it started with left GPU 0 out
    assert (
        viewtext.headline(gpu0, started)[0] == "Not this kernel's: it started without this GPU (CUDA_VISIBLE_DEVICES)"
    )
    assert viewtext.choose_gpu(S1["gpus"], None) == gpu1["uuid"]  # the one with a budget
    assert viewtext.own_line(gpu1) == ("Exact: NVML lists this kernel's PID", "ok")


def test_lost_na_and_simulated_read_as_in_the_sidebar():
    lost = LOST["gpus"][1]
    assert viewtext.headline(lost, LOST) == ("GPU 1 is lost: N/A", "error")
    assert viewtext.device_line(lost) == "GPU 1 NVIDIA A10: lost (fell off the bus; it needs a reset)"
    assert viewtext.process_note(lost) == "This GPU is lost: no figures until it is reset."
    assert viewtext.breakdown(lost, LOST["framework"]) is None
    unknown = {**S1["gpus"][1], "own_bytes": None, "in_force": False}
    assert viewtext.headline(unknown, S1) == (
        "N/A of 4.0 GiB budget (not in force; the driver cannot tell this kernel's memory)",
        "ok",
    )
    assert (
        viewtext.simulated_banner("/x/s1_two_gpus.scenario") == "SIMULATED GPU — stand-in NVML (s1_two_gpus.scenario)"
    )
    row = viewtext.process_cells(S1["gpus"][1]["processes"][1])
    assert (row["used"], row["cpu"], row["user"]) == ("N/A", "N/A", "N/A")
    assert viewtext.process_cells({**S1["gpus"][1]["processes"][1], "cpu_pending": True})["cpu"] == "…"


def test_the_views_html_escapes_every_host_string_and_marks_this_kernel():
    gpu1 = S1["gpus"][1]
    table = table_html(gpu1)
    assert "<img" not in table and "&lt;img src=x onerror=alert(1)&gt;" in table
    assert table.count('class="jp-GpuMem-self"') == 1 and 'data-pid="4242"' in table
    assert table.index('data-pid="4242"') < table.index('data-pid="6200"') < table.index('data-pid="1204"')  # N/A last
    header = header_html(S1, gpu1)
    assert 'data-level="error"' in header and "4.1 of 4.0 GiB budget (103%)" in header
    assert "Exact: NVML lists this kernel's PID" in html.unescape(header)
    hostile = {**S1, "simulated": '"><img src=x onerror=alert(1)>'}
    assert "<img" not in header_html(hostile, gpu1)
    lost = header_html(LOST, LOST["gpus"][1])
    assert 'data-level="error"' in lost and "GPU 1 is lost: N/A" in lost and "Exact" not in lost
    assert "This GPU is lost" in table_html(LOST["gpus"][1])


# -- in real kernels ------------------------------------------------------------------------------------------


def until(kernel: Kernel, condition: Callable[[], object], timeout: float = 60) -> None:
    """Read iopub, keeping every message in kernel.passed, until ``condition()`` holds: never a fixed wait, which a
    loaded machine outlasts (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        left = deadline - time.monotonic()
        assert left > 0, f"waited {timeout} s for the kernel's messages"
        with contextlib.suppress(queue.Empty):
            kernel.passed.append(kernel.client.get_iopub_msg(timeout=min(left, 1)))


class Widgets:
    """The view's widget models as the frontend sees them: opened by comm_open, sent to by comm_msg."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel

    def opened(self) -> dict[str, dict[str, Any]]:
        return {
            m["content"]["comm_id"]: m["content"]["data"]["state"]
            for m in self.kernel.passed
            if m["msg_type"] == "comm_open" and m["content"].get("target_name") == "jupyter.widget"
        }

    def closed(self) -> set[str]:
        return {m["content"]["comm_id"] for m in self.kernel.passed if m["msg_type"] == "comm_close"}

    def views(self) -> list[str]:
        """The inline views: anywidgets running the sidebar's module (static/inline.js)."""
        return [comm_id for comm_id, state in self.opened().items() if "_esm" in state]

    def messages(self, comm_id: str) -> list[dict[str, Any]]:
        """What the kernel sent the view's module (its custom messages), oldest first."""
        return [
            m["content"]["data"]["content"]
            for m in self.kernel.passed
            if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("method") == "custom"
        ]

    def buffers(self, comm_id: str, kind: str) -> list[list[bytes]]:
        """The binary buffers of each custom message of this ``type`` the kernel sent the view."""
        return [
            [bytes(b) for b in m["buffers"]]
            for m in self.kernel.passed
            if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("content", {}).get("type") == kind
        ]

    def samples(self, comm_id: str) -> list[dict[str, Any]]:
        return [m["sample"] for m in self.messages(comm_id) if m.get("type") == "sample"]

    def ask(self, comm_id: str, content: dict[str, Any]) -> None:
        """What the module sends the kernel (replay, stop), as the frontend's widget manager sends it."""
        data = {"method": "custom", "content": content}
        self.kernel.client.shell_channel.send(
            self.kernel.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        )


def hellos(widgets: Widgets, view: str) -> list[dict[str, Any]]:
    return [m for m in widgets.messages(view) if m["type"] == "hello"]


def own_mib(sample: dict[str, Any]) -> float:
    return sample["gpus"][0]["own_bytes"] / MiB


def budget_kernel(kernel_with: Any, **env: str) -> Kernel:
    kernel = kernel_with("sidebar", env=env or None)
    reply = kernel.run("%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow")
    assert reply.status == "ok", reply.error
    return kernel


def own_scenario(kernel: Kernel, own_mib: int) -> str:
    """The sidebar scenario with this kernel holding ``own_mib`` on GPU 0 (and the device's use following)."""
    text = (SCENARIOS / "sidebar.scenario").read_text()
    text = text.replace("pid=self used=3174MiB", f"pid=self used={own_mib}MiB")
    return text.replace("used=16500MiB", f"used={16500 - 3174 + own_mib}MiB", 1)


@pytest.mark.kernel
def test_gpumem_show_displays_the_live_view_with_a_still_picture_beside_it(kernel_with):
    kernel = budget_kernel(kernel_with)
    reply = kernel.run("%gpumem show")
    assert reply.status == "ok" and reply.stderr == "", reply.error
    [shown] = reply.displayed
    data = shown["data"]
    assert set(data) == {"text/plain", "text/html", WIDGET_VIEW}
    assert shown["transient"]["display_id"]  # so that closing can leave the picture in its place
    assert data["text/plain"].splitlines()[1:] == [
        "3.1 of 20.0 GiB budget (15%, not in force)",
        "GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used",
    ]
    assert "3.1 of 20.0 GiB budget (15%, not in force)" in data["text/html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in data["text/html"] and "<img" not in data["text/html"]
    widgets = Widgets(kernel)
    assert widgets.views() == [data[WIDGET_VIEW]["model_id"]]
    [view] = widgets.views()
    state = widgets.opened()[view]
    # The state carries the loader, never the module: a notebook saved with its widget state stays light.
    assert state["_esm"] == (STATIC / "loader.js").read_text() and len(state["_esm"]) < 4096
    assert not state.get("_css")
    # The loader found the module neither in the page nor on the server: the kernel sends it, in one file, with
    # its styles, as binary buffers beside the message.
    widgets.ask(view, {"type": "module"})
    until(kernel, lambda: widgets.buffers(view, "module"))
    [[esm, css]] = widgets.buffers(view, "module")
    assert esm == (STATIC / "inline.bundle.js").read_bytes() and len(esm) > 1_000_000  # plotly inside
    assert b".jp-GpuMem-headline" in css
    # The show cell did not wait for the sampler: samples follow, each a protocol message the sidebar reads.
    until(kernel, lambda: len(widgets.samples(view)) >= 2)
    samples = widgets.samples(view)
    assert len(samples) >= 2 and own_mib(samples[-1]) == 3174
    assert samples[-1]["gpus"][0]["budget_bytes"] == 20 * GiB and samples[-1]["policy_state"] == "recorded"
    # The module, once loaded, asks for the history: the kernel answers with the sidebar's hello.
    widgets.ask(view, {"type": "replay"})
    until(kernel, lambda: hellos(widgets, view))
    [hello] = hellos(widgets, view)
    assert hello["protocol"] == 1 and hello["interval_s"] == 1.0 and len(hello["history"]) >= 2
    assert all("processes" not in g for s in hello["history"] for g in s["gpus"])  # figures only
    widgets.ask(view, {"type": "mine now"})  # anything else: ignored, nothing changes
    widgets.ask(view, "not an object")
    widgets.ask(view, {"type": "replay"})  # handled after those two: once answered, they were too
    until(kernel, lambda: len(hellos(widgets, view)) == 2)
    assert view not in widgets.closed() and kernel.run("print(1)").stdout == "1\n"


def catalogue_reply(kernel: Kernel) -> tuple[Widgets, str, dict[str, Any]]:
    """Show a view in ``kernel`` and ask for its words, as the module does where the page has no JupyterLab
    translator: the kernel's answer."""
    reply = kernel.run("%gpumem show")
    assert reply.status == "ok", reply.error
    widgets = Widgets(kernel)
    view = widgets.views()[-1]  # the one just shown
    widgets.ask(view, {"type": "catalogue"})
    until(kernel, lambda: any(m["type"] == "catalogue" for m in widgets.messages(view)))
    [answer] = [m for m in widgets.messages(view) if m["type"] == "catalogue"]
    return widgets, view, answer


@pytest.mark.kernel
def test_a_japanese_kernel_sends_a_view_without_a_lab_translator_its_catalogue_and_never_in_the_state(kernel_with):
    kernel = budget_kernel(kernel_with, LANGUAGE="ja_JP")
    widgets, view, answer = catalogue_reply(kernel)
    built = LOCALE / "ja_JP" / "LC_MESSAGES" / "jupyter_gpumem.json"
    # The catalogue JupyterLab would serve for Japanese, as it is built: the module words from it as the lab does.
    assert answer == {"type": "catalogue", "language": "ja_JP", "data": json.loads(built.read_text())}
    assert answer["data"]["Stop"] == [i18n.translation("ja_JP").gettext("Stop")] != ["Stop"]
    # Sent on request to the view that asked, never a trait: the notebook's saved widget state holds no copy.
    state = widgets.opened()[view]
    assert "Stop" not in json.dumps(state) and len(json.dumps(state)) < 4096
    assert kernel.run("%gpumem show").status == "ok"
    assert [m for m in widgets.messages(widgets.views()[-1]) if m["type"] == "catalogue"] == []  # not asked: none
    # An install with the kernel's catalogue but not the lab's (the .mo without the .json): English, no error.
    mo_only = kernel.scenario.parent / "mo-only"
    (mo_only / "ja_JP" / "LC_MESSAGES").mkdir(parents=True)
    (mo_only / "ja_JP" / "LC_MESSAGES" / "jupyter_gpumem.mo").write_bytes(built.with_suffix(".mo").read_bytes())
    moved = kernel.run(
        f"import jupyter_gpumem.i18n as i; from pathlib import Path; i.LOCALE_DIR = Path({str(mo_only)!r})\n"
        "i.use_language('ja-JP'); print(i.language())"
    )
    assert moved.stdout == "ja_JP\n", moved.error
    _, _, answer = catalogue_reply(kernel)
    assert answer == {"type": "catalogue", "language": "en", "data": None}
    assert kernel.run("print(1)").stdout == "1\n"


@pytest.mark.kernel
@pytest.mark.parametrize("language", ["en_US", "de_DE", "zh_TW"])
def test_a_kernel_in_english_or_a_language_without_a_catalogue_sends_no_catalogue(kernel_with, language):
    kernel = budget_kernel(kernel_with, LANGUAGE=language)
    _, _, answer = catalogue_reply(kernel)
    assert answer == {"type": "catalogue", "language": "en", "data": None}


@pytest.mark.kernel
def test_the_view_moves_while_another_cell_is_busy(kernel_with):
    kernel = budget_kernel(kernel_with)
    kernel.run("%gpumem show")
    widgets = Widgets(kernel)
    [view] = widgets.views()
    # A cell keeps the main thread busy until the test lets it go; meanwhile this kernel "grows" to 6000 MiB.
    go = kernel.scenario.with_name("go")
    cell = kernel.client.execute(held_cell(go))
    standin.write_scenario(kernel.scenario, own_scenario(kernel, 6000))
    # The view moved while the cell was busy:
    until(kernel, lambda: any(own_mib(s) == 6000 for s in widgets.samples(view)))
    go.touch()
    reply = kernel.reply(cell)
    assert reply.status == "ok" and reply.stdout == "True\n"  # the cell was still running: it saw the go


@pytest.mark.kernel
def test_two_views_share_the_one_sampler_and_closing_one_stops_only_its_updates(kernel_with):
    kernel = budget_kernel(kernel_with)
    reply = kernel.run(
        "import jupyter_gpumem, threading\n"
        "a = jupyter_gpumem.show()\n"
        "b = jupyter_gpumem.show()\n"
        "display(a, b)\n"
        "print(sum(t.name == 'jupyter-gpumem-sampler' for t in threading.enumerate()))"
    )
    assert reply.status == "ok", reply.error
    assert reply.stdout.splitlines()[-1] == "1"  # one sampler thread, not one per view
    first, second = [d for d in reply.displayed if WIDGET_VIEW in d["data"]]
    widgets = Widgets(kernel)
    view_a, view_b = widgets.views()
    assert view_a == first["data"][WIDGET_VIEW]["model_id"]
    until(kernel, lambda: len(widgets.samples(view_a)) >= 2)  # samples for the chart a closed view leaves
    closed = kernel.run(f"a.close(); print(len({VIEWS}), a.closed, b.closed)")
    assert closed.stdout.strip() == "1 True False"
    # Its output is replaced by its last picture: still HTML, no widget any more.
    [update] = [d for d in closed.displayed if d["transient"]["display_id"] == first["transient"]["display_id"]]
    assert WIDGET_VIEW not in update["data"] and "Stopped at" in update["data"]["text/html"]
    assert "3.1 of 20.0 GiB budget" in update["data"]["text/html"]
    chart = update["data"][PLOTLY]  # the recorded history, interactive without the kernel
    # This kernel's line first of the lines (the cells' band, drawn under them, has no legend entry).
    assert [t["name"] for t in chart["data"] if t.get("showlegend") is not False][:1] == ["this kernel"]
    until(kernel, lambda: view_a in widgets.closed())
    before = len(widgets.samples(view_a))
    standin.write_scenario(kernel.scenario, own_scenario(kernel, 6000))
    until(kernel, lambda: any(own_mib(s) == 6000 for s in widgets.samples(view_b)))  # the other one still moves
    assert len(widgets.samples(view_a)) == before  # the closed view got nothing more (sent with view_b's)
    assert view_b not in widgets.closed()
    # Its Stop button: the module asks, the kernel closes it and leaves the picture.
    widgets.ask(view_b, {"type": "stop"})
    until(kernel, lambda: view_b in widgets.closed())
    assert kernel.run(f"print(len({VIEWS}), b.closed)").stdout.strip() == "0 True"
    stopped = [
        m["content"]
        for m in kernel.passed
        if m["msg_type"] == "update_display_data"
        and m["content"]["transient"]["display_id"] == second["transient"]["display_id"]
    ]
    assert len(stopped) == 1 and "Stopped at" in stopped[0]["data"]["text/html"]


BLOCK_PLOTLY = """import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "plotly":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, NotInstalled())
"""


@pytest.mark.kernel
def test_without_plotly_the_view_is_live_and_its_stopped_picture_says_what_to_install(kernel_with, tmp_path):
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "sitecustomize.py").write_text(BLOCK_PLOTLY)
    kernel = budget_kernel(kernel_with, PYTHONPATH=str(tmp_path / "blocked"))
    reply = kernel.run("import jupyter_gpumem\nview = jupyter_gpumem.show()\ndisplay(view)")
    assert reply.status == "ok" and reply.stderr == "", reply.error
    [shown] = reply.displayed
    assert WIDGET_VIEW in shown["data"] and "3.1 of 20.0 GiB budget" in shown["data"]["text/html"]
    widgets = Widgets(kernel)
    [view] = widgets.views()
    until(kernel, lambda: widgets.samples(view))
    assert own_mib(widgets.samples(view)[-1]) == 3174
    closed = kernel.run("view.close()")
    [update] = closed.displayed
    assert PLOTLY not in update["data"] and "3.1 of 20.0 GiB budget" in update["data"]["text/html"]
    assert "The chart needs plotly: %pip install &#39;jupyter-gpumem[view]&#39;" in update["data"]["text/html"]
    assert kernel.run("import sys; print('plotly' in sys.modules)").stdout == "False\n"


@pytest.mark.kernel
def test_a_notebook_run_headless_keeps_the_views_still_picture(tmp_path, standin_dir):
    """As nbconvert/nbclient (and so Binder's CI test) run it: no widget frontend, the saved output keeps the
    still HTML, and after close() only that."""
    import nbformat
    from nbclient import NotebookClient

    scenario = tmp_path / "sidebar.scenario"
    standin.write_scenario(scenario, (SCENARIOS / "sidebar.scenario").read_text())
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow"),
        nbformat.v4.new_code_cell(
            "import jupyter_gpumem, time\nmade = time.time()\nview = jupyter_gpumem.show()\nview"
        ),
        nbformat.v4.new_code_cell("%gpumem show"),
        # Samples in two seconds at least after the view was made (two points of the chart's one-second buckets),
        # however loaded the machine: a fixed 3.5 s once saw one.
        nbformat.v4.new_code_cell(
            "from jupyter_gpumem.kernel.runtime import runtime\n"
            "def seconds():\n"
            "    return {int(s['t']) for s in runtime().stream.sampler.history() if s['t'] >= made}\n"
            "deadline = time.monotonic() + 60\n"
            "while len(seconds()) < 2 and time.monotonic() < deadline:\n"
            "    time.sleep(0.1)\n"
            "view.close()"
        ),
    ]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_GPUMEM_", "CUDA_", "TF_"))}
    base["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    NotebookClient(nb, timeout=120, kernel_name="python3").execute(
        env=standin.environment(standin_dir, scenario, base={**base, "LD_LIBRARY_PATH": ""})
    )
    [closed] = nb.cells[1].outputs
    assert WIDGET_VIEW not in closed["data"] and "Stopped at" in closed["data"]["text/html"]
    [own] = [t for t in closed["data"][PLOTLY]["data"] if t.get("name") == "this kernel"]
    assert len(own["x"]) >= 2  # a chart of the seconds it ran, as plotly draws it
    [live] = nb.cells[2].outputs  # never closed: the widget, and the picture for frontends without widgets
    assert WIDGET_VIEW in live["data"] and "3.1 of 20.0 GiB budget" in live["data"]["text/html"]
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    assert "3.1 of 20.0 GiB budget" in Path(path).read_text()


@pytest.mark.kernel
def test_a_view_made_off_the_main_thread_is_refused_and_no_widget_is_made(kernel_with):
    kernel = budget_kernel(kernel_with)
    reply = kernel.run(
        "import threading, jupyter_gpumem\n"
        "errors = []\n"
        "def make():\n"
        "    try:\n"
        "        jupyter_gpumem.show()\n"
        "    except RuntimeError as error:\n"
        "        errors.append(str(error))\n"
        "t = threading.Thread(target=make); t.start(); t.join()\n"
        f"print(errors, len({VIEWS}))"
    )
    assert reply.stdout.strip().endswith("0") and "main thread" in reply.stdout
    assert threading.current_thread() is threading.main_thread()
