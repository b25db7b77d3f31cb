"""Privacy between users (docs/hub.md): under a hub a kernel lists its own user's GPU processes and sums
everybody else's, in the status text, its HTML, the sidebar's samples and the inline view; the administrator
chooses aggregate | names | list, and no source can show more than the most private one chose."""

from __future__ import annotations

import re

import pytest
from protocol_fixtures import OWN_PID, privacy_sample, s1_snapshot
from traitlets.config import Config

from jupyter_gpumem.budget.config import GpumemConfig
from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.budget.privacy import Others, Rule, UserShare
from jupyter_gpumem.budget.reading import reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.gpu.model import Device, GpuProcess
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.render import html, viewtext
from jupyter_gpumem.render.text import render
from jupyter_gpumem.units import GiB, MiB
from jupyter_gpumem.wire.comm import TARGET

GPU = "GPU-5e5e5e5e-0000-4000-8000-000000000000"


def process(pid: int, user: str | None, gib: int | None, *, is_self: bool = False) -> GpuProcess:
    return GpuProcess(pid, GPU, None if gib is None else gib * GiB, "compute", "python", user, None, is_self)


DEVICE = Device(
    0,
    GPU,
    "NVIDIA A100-SXM4-40GB",
    total_bytes=40 * GiB,
    used_bytes=14 * GiB,
    processes=(
        process(100, "alice", 3, is_self=True),
        process(101, "alice", 1),  # her other kernel
        process(200, "bob", 4),
        process(201, "bob", 1),
        process(300, None, 2),  # the host does not say whose
        process(400, "carol", 3),
    ),
)


def test_aggregate_lists_the_users_own_processes_and_sums_the_rest() -> None:
    shown, others = Rule("aggregate", "alice").split(DEVICE)
    assert [p.pid for p in shown] == [100, 101]
    assert others == Others(4, 10 * GiB, None)


def test_names_sums_per_user_and_an_unnamed_process_counts_as_another_users() -> None:
    shown, others = Rule("names", "alice").split(DEVICE)
    assert [p.pid for p in shown] == [100, 101]
    assert others == Others(
        4, 10 * GiB, (UserShare(None, 1, 2 * GiB), UserShare("bob", 2, 5 * GiB), UserShare("carol", 1, 3 * GiB))
    )


def test_list_shows_every_process_and_sums_nothing() -> None:
    assert Rule("list", "alice").split(DEVICE) == (DEVICE.processes, None)


def test_the_kernels_matched_process_is_listed_and_an_unknown_figure_makes_the_sum_unknown() -> None:
    device = Device(0, GPU, "A100", processes=(process(500, None, 3), process(501, "bob", None)))
    shown, others = Rule("aggregate", "alice").split(device, keep=(500,))
    assert [p.pid for p in shown] == [500]
    assert others == Others(1, None, None)  # N/A, never 0


def test_a_lost_gpu_or_one_whose_processes_are_not_known_sums_nothing() -> None:
    lost = Device(0, GPU, "A100", lost=True)
    assert Rule("aggregate", "alice").split(lost) == ((), None)
    refused = Device(0, GPU, "A100", processes_known=False)
    assert Rule("aggregate", "alice").split(refused) == ((), None)


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("JUPYTER_GPUMEM_PRIVACY", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_default_is_list_on_a_workstation_and_aggregate_under_a_hub(clean: pytest.MonkeyPatch) -> None:
    assert GpumemConfig().privacy_level() == ("list", [])
    clean.setenv("JUPYTERHUB_USER", "alice")
    assert GpumemConfig().privacy_level() == ("aggregate", [])


def test_the_most_private_source_holds_so_a_user_cannot_show_more(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("JUPYTER_GPUMEM_PRIVACY", "Names ")
    assert GpumemConfig().privacy_level() == ("names", [])
    users_own = Config()
    users_own.GpumemConfig.privacy = "list"
    assert GpumemConfig(config=users_own).privacy_level() == ("names", [])
    stricter = Config()
    stricter.GpumemConfig.privacy = "aggregate"
    assert GpumemConfig(config=stricter).privacy_level() == ("aggregate", [])


def test_a_value_that_names_no_level_is_read_as_the_most_private_and_said(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("JUPYTER_GPUMEM_PRIVACY", "everything")
    level, problems = GpumemConfig().privacy_level()
    assert level == "aggregate"
    assert problems == [
        'JUPYTER_GPUMEM_PRIVACY=everything in the environment was read as aggregate: privacy takes "aggregate", '
        '"names" or "list".'
    ]
    typed = Config()
    typed.GpumemConfig.privacy = 3
    config = GpumemConfig(config=typed)
    assert config.privacy_level()[0] == "aggregate"
    assert config.refused == {}  # reported once, by privacy_level, naming its source


def alices(level: str) -> object:
    state = State(Policy(), None, (ADAPTERS["tensorflow"](),), True, "TensorFlow")
    return reading(
        s1_snapshot(), state, started=False, allocators={}, measured=lambda u: None, privacy=Rule(level, "alice")
    )


def test_the_status_text_and_html_show_the_aggregate_and_none_of_the_other_users() -> None:
    r = alices("aggregate")
    text = render(r.snapshot, r)
    rich = html.status(r.snapshot, r, text, []).html
    for shown in (text, rich):
        for hidden in ("788", "bob", "python.exe", "6200", "mallory", "onerror", "1204", "dwm.exe"):
            assert hidden not in shown, hidden
        assert str(OWN_PID) in shown and "alice" in shown
    assert "other users: 1 process, 5927 MiB" in text  # GPU 0: bob's
    assert "other users: 2 processes, N/A" in text  # GPU 1: dwm.exe's figure is N/A, so the sum is unknown
    assert re.search(r'<p class="jp-GpuMem-others">other users: 2 processes, N/A</p>', rich)
    everything = alices("list")
    assert "mallory" in render(everything.snapshot, everything) and "other users" not in render(
        everything.snapshot, everything
    )


def test_the_sample_carries_the_aggregate() -> None:
    gpu0, gpu1 = privacy_sample()["gpus"]  # type: ignore[misc]
    assert gpu0["processes"] == [] and [p["pid"] for p in gpu1["processes"]] == [OWN_PID]
    assert viewtext.others_note(gpu0) == "other users: 1 process, 5.8 GiB (bob: 1 process, 5.8 GiB)"
    assert viewtext.others_note(gpu1) == (
        "other users: 2 processes, N/A (user unknown: 1 process, N/A; mallory: 1 process, 380 MiB)"
    )
    # History keeps the charted figures only: no process table, no other users.
    assert all("others" not in g for g in protocol.figures_only(privacy_sample())["gpus"])  # type: ignore[union-attr]


def values(tree: object) -> list[object]:
    """Every value in a JSON tree, its leaves and containers alike."""
    if isinstance(tree, dict):
        return [tree, *(v for item in tree.values() for v in values(item))]
    if isinstance(tree, list):
        return [tree, *(v for item in tree for v in values(item))]
    return [tree]


def test_a_kernel_under_a_hub_shows_other_users_processes_only_as_an_aggregate(kernel_with) -> None:  # type: ignore[no-untyped-def]
    kernel = kernel_with("s1_two_gpus", env={"JUPYTERHUB_USER": "alice"})
    assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    status = kernel.run("%gpumem status")
    assert status.status == "ok", status
    assert not re.search(r"(?<![\d.])788(?![\d.])", status.stdout)  # bob's pid, not digits of a time or size
    assert "python.exe" not in status.stdout
    assert "other users: 1 process, 5927 MiB" in status.stdout
    kernel.run("import jupyter_gpumem; jupyter_gpumem._connect_sidebar()")
    opened = kernel.comm_message("comm_open", target_name=TARGET)
    sample = kernel.comm_message("comm_msg", comm_id=opened["comm_id"])["data"]["sample"]
    gpu0 = sample["gpus"][0]
    assert gpu0["processes"] == [] and gpu0["others"] == {"processes": 1, "used_bytes": 5927 * MiB, "users": None}
    # bob's pid and name nowhere in it, looked for as values (a timestamp such as 1795878899.788 holds "788").
    assert 788 not in values(sample) and not any("python.exe" in v for v in values(sample) if isinstance(v, str))
