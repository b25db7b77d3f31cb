"""The cases behind tests/fixtures/golden/: one Reading each, and the words every surface shows of it.

Each fixture holds the protocol sample the Reading encodes to (what the sidebar and the live inline view
get) and, per surface, the text expected: ``view`` (per GPU: the lines of format/panel.ts's viewLines and the
process cells, checked by tests/ts/golden.test.ts against format/ and by tests/render/test_golden.py against
viewtext.py), ``inline_still`` (the visible lines of the inline view's still picture), ``status_text`` and
``status_html`` (the visible lines of `%gpumem status`). The tests compare; only a person regenerates, after
reading the difference: ``python tests/golden_cases.py`` (with PYTHONPATH as for the tests).

The same words in each translated language are in ``<language>/<case>.json`` beside them
(``ja_JP/s1_over_budget.json``), made by the same rendering under ``i18n.use_language`` from the built catalogues,
every surface but the sample (the wire carries codes and figures, no words: the English fixture's sample is every
language's). They change when a translation does: regenerate after ``jlpm build:i18n``, and read the difference as
a translator would; tests/ts/golden.test.ts checks the sidebar's words in each language against them too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from protocol_fixtures import (
    GPU_A,
    IDLE_NOTICE,
    OWN_PID,
    applied,
    container_reading,
    hidden_reading,
    lost_reading,
    no_driver_reading,
    no_plan,
    privacy_reading,
    s1_reading,
)

from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.budget.reading import Reading, reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.i18n import build, use_language
from jupyter_gpumem.kernel.protocol import encode_sample, sample_message
from jupyter_gpumem.kernel.widget import header_html, table_html
from jupyter_gpumem.render import viewtext
from jupyter_gpumem.render.html import status_html
from jupyter_gpumem.render.text import render
from jupyter_gpumem.units import GiB, MiB

GOLDEN = Path(__file__).parent / "fixtures" / "golden"

# The languages (a folder each under jupyter_gpumem/locale/), each with its folder of fixtures under GOLDEN.
LANGUAGES = tuple(build.languages(Path(__file__).parents[1] / "jupyter_gpumem" / "locale"))

# Names a GPU host can hold, each a way to make a view lie: reorder itself on screen (bidi overrides,
# isolates, marks), forge a line or a colour (C0, C1, the Unicode separators), hide (zero widths, the BOM),
# be markup, be longer than any column; and ordinary non-ASCII that must stay as it is.
HOSTILE_NAMES = (
    "\u202egnp.exe",  # reads "exe.png" where the override is obeyed
    "\u2066isolate\u2069 \u2067rtl\u2069 \u2068first\u2069 \u202aembed\u202c \u202bembed\u202c \u202doverride\u202c",
    "\u200eleft mark \u200fright mark \u061carabic mark",
    "red\x1b[31m bell\x07 nul\x00 del\x7f",
    "c1\x85next line \x9bcsi",
    "two\nlines\ttab\rreturn",
    "line\u2028separator paragraph\u2029separator",
    "zero\u200bwidth\u200cnon\u200djoiner \ufeffbom",
    "<script>alert(1)</script> & <b>bold</b>",
    "🚀 train_𝔁.py 显卡 café",
    "very-long-name-" * 20,
    "lone surrogate \udcff from an undecodable name",
)


def hostile_reading() -> Reading:
    """One GPU whose name, users and process names come from a hostile host (HOSTILE_NAMES), no policy."""
    processes = tuple(
        GpuProcess(1000 + i, GPU_A, (i + 1) * 64 * MiB, "compute", name, "\u202eecila" if i % 2 else "bob", 1.5, False)
        for i, name in enumerate(HOSTILE_NAMES)
    )
    own = GpuProcess(OWN_PID, GPU_A, 1536 * MiB, "compute", "python", "alice", 12.0, True)
    device = Device(0, GPU_A, "NVIDIA A10 \u202e(RLO)\u202c", 23028 * MiB, 8 * GiB, processes=(own, *processes))
    snapshot = Snapshot(
        taken_at=1763740805.0,
        own_pid=OWN_PID,
        driver_version="550.54.15",
        simulated_scenario="/tmp/scen\u202eoiranecs.scenario",
        devices=(device,),
    )
    return no_plan(snapshot)


def ties_reading() -> Reading:
    """Figures exactly half way (docs/numbers.md), where a double rounded half to even in Python and half up in
    JavaScript: this kernel holds 157 MiB of a 200 MiB budget (78.5%: 79%), the device 2.25 GiB of 22.25 GiB
    (2.3 of 22.3 GiB), another process 2.5 MiB (3)."""
    own = GpuProcess(OWN_PID, GPU_A, 157 * MiB, "compute", "python", "alice", 12.0, True)
    other = GpuProcess(5150, GPU_A, 5 * MiB // 2, "compute", "nvtop", "bob", 0.5, False)
    device = Device(0, GPU_A, "NVIDIA A10", 89 * GiB // 4, 9 * GiB // 4, processes=(own, other))
    snapshot = Snapshot(taken_at=1763740805.0, own_pid=OWN_PID, driver_version="550.54.15", devices=(device,))
    aside = Overhead(100 * MiB, "estimated", "PyTorch on Ampere (compute 8.6)")
    plan = make_plan(parse(["limit=200MiB"]), snapshot, lambda device: aside)
    return reading(snapshot, applied(plan, "pytorch"), started=True, allocators={}, measured=lambda uuid: None)


def older_kernel_sample() -> dict[str, Any]:
    """S1 from a kernel that does not say how it knows its own figure (own_source null): a view says nothing
    rather than guess "exact"."""
    sample = encode_sample(s1_reading())
    gpus = [{**g, "own_source": None, "own_reason": None} for g in sample["gpus"]]
    return {**sample, "gpus": gpus}


def sidebar_reading() -> Reading:
    """The browser tests' machine (tests/fixtures/scenarios/sidebar.scenario) after `%gpumem fraction=0.5
    framework=tensorflow`, TensorFlow not imported: this kernel holds 3174 MiB of GPU 0's 20.0 GiB budget, not in
    force yet, 500 MiB set aside (estimated). tests/ui/test_language.py checks the page shows these words."""
    a100, t4 = "GPU-5e5e5e5e-0000-4000-8000-000000000001", "GPU-5e5e5e5e-0000-4000-8000-000000000002"
    on_a100 = (
        GpuProcess(OWN_PID, a100, 3174 * MiB, "compute", "python", "alice", 12.0, True),
        GpuProcess(31337, a100, 12000 * MiB, "compute", "python3", "alice", 3.0, False),
        GpuProcess(31338, a100, 1024 * MiB, "compute", "<img src=x onerror=alert(1)>", "alice", 0.5, False),
    )
    a100_device = {"name": "NVIDIA A100-SXM4-40GB", "total_bytes": 40960 * MiB, "compute_capability": (8, 0)}
    t4_device = {"name": "NVIDIA T4", "total_bytes": 15360 * MiB, "compute_capability": (7, 5)}
    on_t4 = (GpuProcess(31339, t4, 5500 * MiB, "compute", "python3", "alice", 1.0, False),)
    devices = (
        Device(index=0, uuid=a100, used_bytes=16500 * MiB, processes=on_a100, **a100_device),  # type: ignore[arg-type]
        Device(index=1, uuid=t4, used_bytes=5600 * MiB, processes=on_t4, **t4_device),  # type: ignore[arg-type]
    )
    snapshot = Snapshot(
        taken_at=1763740806.0,
        own_pid=OWN_PID,
        driver_version="550.54.15",
        simulated_scenario="sidebar.scenario",
        devices=devices,
    )
    aside = Overhead(500 * MiB, "estimated", "TensorFlow on Ampere (compute 8.0)")
    plan = make_plan(parse(["fraction=0.5", "framework=tensorflow"]), snapshot, lambda device: aside)
    tensorflow = ADAPTERS["tensorflow"]()
    state = State(plan.policy, plan, (tensorflow,), True, tensorflow.name)  # not applied: TensorFlow not imported
    return reading(snapshot, state, started=False, allocators={}, measured=lambda uuid: None)


# name: (the Reading, when the case has one, and the sample the sidebar gets)
CASES: dict[str, Callable[[], tuple[Reading | None, dict[str, Any]]]] = {
    "s1_over_budget": lambda: (s1_reading(), encode_sample(s1_reading())),
    "hostile_names": lambda: (hostile_reading(), encode_sample(hostile_reading())),
    "lost_gpu": lambda: (lost_reading(), encode_sample(lost_reading())),
    "container": lambda: (container_reading(), encode_sample(container_reading())),
    "hidden_processes": lambda: (hidden_reading(), encode_sample(hidden_reading())),
    "privacy_names": lambda: (privacy_reading(), encode_sample(privacy_reading(), IDLE_NOTICE)),
    "no_driver": lambda: (no_driver_reading(), encode_sample(no_driver_reading())),
    "older_kernel": lambda: (None, older_kernel_sample()),
    "ties": lambda: (ties_reading(), encode_sample(ties_reading())),
    "sidebar": lambda: (sidebar_reading(), encode_sample(sidebar_reading())),
}


class Visible(HTMLParser):
    """The text a browser shows of some HTML, a line per block (table cells joined by " | ", a block inside a
    cell part of its cell), white space collapsed as HTML collapses it; no style sheets."""

    BLOCKS = frozenset({"div", "p", "section", "tr", "table", "thead", "tbody"})

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._parts: list[str] = []
        self._style = False
        self._cells = 0
        self._in_cell = False
        self.feed(markup)
        self.close()
        self._flush()

    def _flush(self) -> None:
        line = " ".join("".join(self._parts).split())
        if line:
            self.lines.append(line)
        self._parts, self._cells = [], 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._style = tag == "style"
        if tag in ("td", "th"):
            self._parts.append(" | " if self._cells else "")
            self._cells += 1
            self._in_cell = True
        elif tag in self.BLOCKS and not self._in_cell:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        self._style = False
        if tag in ("td", "th"):
            self._in_cell = False
        elif tag in self.BLOCKS and not self._in_cell:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._style:
            self._parts.append(data)


def view(sample: dict[str, Any], gpu: dict[str, Any]) -> dict[str, Any]:
    """What viewtext says of one GPU, in the keys of format/panel.ts viewLines (and the process cells)."""

    def line(pair: tuple[str, str] | None) -> dict[str, str] | None:
        return None if pair is None else {"text": pair[0], "level": pair[1]}

    return {
        "headline": line(viewtext.headline(gpu, sample)),
        "own": line(viewtext.own_line(gpu)),
        "note": viewtext.budget_note(gpu, sample),
        "breakdown": viewtext.breakdown(gpu, viewtext.framework_name(sample)),
        "reason": viewtext.over_line(gpu),
        "policy": line(viewtext.policy_line(sample)),
        "limits": viewtext.limit_lines(gpu, sample),
        "device": viewtext.device_line(gpu),
        "processNote": viewtext.process_note(gpu),
        "othersNote": None if gpu["lost"] else viewtext.others_note(gpu),
        "processes": [viewtext.process_cells(p) for p in gpu["processes"] or []],
    }


def surfaces(name: str) -> dict[str, Any]:
    """Every surface's text for a case, as the Python side makes it (and its sample)."""
    reading, sample = CASES[name]()
    gpus = sample["gpus"]
    return {
        "sample": sample_message(sample),
        "banner": viewtext.simulated_banner(sample["simulated"]),
        "view": {viewtext.gpu_key(g): view(sample, g) for g in gpus},
        # without a GPU (no driver), the still picture is its header alone, under the key ""
        "inline_still": {viewtext.gpu_key(g): Visible(header_html(sample, g) + table_html(g)).lines for g in gpus}
        or {"": Visible(header_html(sample, None)).lines},
        "status_text": None if reading is None else render(reading.snapshot, reading).split("\n"),
        "status_html": None if reading is None else Visible(status_html(reading.snapshot, reading, [])).lines,
    }


@contextmanager
def language(name: str) -> Iterator[None]:
    """Words in ``name`` ("ja_JP") inside, then the environment's language again, as every test leaves it."""
    use_language(name)
    try:
        yield
    finally:
        use_language(None)


def surfaces_in(name: str, language_name: str) -> dict[str, Any]:
    """Every surface's text for a case in a language, and the sample it was made from (to check it is the
    English one: a sample carries no words)."""
    with language(language_name):
        return surfaces(name)


def words_of(made: dict[str, Any]) -> dict[str, Any]:
    """A language fixture's content: every surface but the sample."""
    return {surface: text for surface, text in made.items() if surface != "sample"}


def visible_json(value: Any) -> str:
    """JSON a reader of the language sees as it is, Japanese and Chinese as themselves, while anything that would
    reorder, hide or forge the file's own text (bidi controls, C0 and C1, separators, zero widths, a lone
    surrogate, any space but ASCII's) is written as a \\u escape."""

    def escape(char: str) -> str:
        if char == "\n" or char.isprintable():  # a new line here is the layout's: JSON escaped those in strings
            return char
        return json.dumps(char, ensure_ascii=True)[1:-1]

    return "".join(escape(c) for c in json.dumps(value, indent=1, ensure_ascii=False)) + "\n"


def write() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name in CASES:
        # ASCII on disk: the file itself must not reorder or hide what it holds (its bidi characters and
        # controls are written as \\u escapes, which every editor shows as they are).
        text = json.dumps({"case": name, **surfaces(name)}, indent=1, ensure_ascii=True) + "\n"
        (GOLDEN / f"{name}.json").write_text(text)
    for language_name in LANGUAGES:
        (GOLDEN / language_name).mkdir(exist_ok=True)
        for name in CASES:
            made = words_of(surfaces_in(name, language_name))
            text = visible_json({"case": name, "language": language_name, **made})
            (GOLDEN / language_name / f"{name}.json").write_text(text, encoding="utf-8")
    print(f"wrote {len(CASES)} cases to {GOLDEN}, in English and {', '.join(LANGUAGES)}", file=sys.stderr)


if __name__ == "__main__":
    write()
