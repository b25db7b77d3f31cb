"""The interface's language reaches the kernel: the sidebar's ``configure`` carries JupyterLab's language as a
BCP 47 tag (comm.v1.json ``$defs/configure``, ``language``), and the kernel words %gpumem's output in it
(jupyter_gpumem.i18n). A real kernel over the stand-in NVML, its comm as the sidebar uses it."""

from __future__ import annotations

import time

import pytest

from jupyter_gpumem.wire.comm import TARGET

pytestmark = pytest.mark.kernel

CONNECT = "import jupyter_gpumem; jupyter_gpumem._connect_sidebar(interval_s=0.2, history_s=60)"
STATE = (
    "import jupyter_gpumem.i18n as i, jupyter_gpumem.kernel.runtime as r; "
    "print(i.language(), r.runtime().stream.sampler.interval_s)"
)


def connect(kernel):
    reply = kernel.run(CONNECT)
    assert reply.status == "ok", reply.error
    return kernel.comm_message("comm_open", target_name=TARGET)["comm_id"]


def state(kernel) -> str:
    reply = kernel.run(STATE)
    assert reply.status == "ok", reply.error
    return reply.stdout


def until(kernel, expected: str, timeout_s: float = 20) -> str:
    """The kernel's language and interval once they read ``expected`` (comm messages are handled in turn with
    execute requests, but a few samples may be on their way)."""
    deadline, seen = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline:
        seen = state(kernel)
        if seen == expected:
            break
        time.sleep(0.2)
    return seen


def test_a_configure_in_japanese_words_the_kernel_in_japanese_and_a_malformed_language_changes_nothing(
    kernel_with, capfd
):
    # The kernel's own locale says English, so the sidebar's word is what changes it.
    kernel = kernel_with("own_process", env={"LANGUAGE": "en"})
    comm_id = connect(kernel)
    assert state(kernel) == "en 0.2\n"

    base = {"protocol": 1, "type": "configure", "interval_s": 1.0, "history_s": 60}
    for bad in ("ja_JP.UTF-8", "ja JP", "-JP", "", "x" * 36, ["ja-JP"], 42):
        kernel.send_comm(comm_id, {**base, "language": bad})
    log, deadline = "", time.monotonic() + 20
    while log.count("dropped a message from the sidebar") < 7 and time.monotonic() < deadline:
        time.sleep(0.2)
        log += capfd.readouterr().err  # the kernel's own stderr
    # What the schema finds wrong in each; the whole message is refused: neither the language nor the interval.
    assert log.count("sidebar: message.language must match pattern") == 4, log
    assert log.count("dropped a message from the sidebar") == 7, log
    assert state(kernel) == "en 0.2\n"

    kernel.send_comm(comm_id, {**base, "language": "ja-JP"})
    assert until(kernel, "ja_JP 1.0\n") == "ja_JP 1.0\n"

    # A configure without the field (a sidebar before 0.2.0) leaves the language as it is.
    kernel.send_comm(comm_id, {**base, "interval_s": 0.5})
    assert until(kernel, "ja_JP 0.5\n") == "ja_JP 0.5\n"
