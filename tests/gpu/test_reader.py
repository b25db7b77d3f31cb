"""The one NVML reader of a process (gpu/reader.py): a caller never waits on the driver past its deadline.

Most tests give the Reader a plain Python ``read`` that blocks while the test holds it, as a stalled driver's call
does (no NVML); the last runs the real nvidia-ml-py binding against the stand-in's ``driver stall=1``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jupyter_gpumem import standin
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.gpu.reader import Reader, stalled, stalled_sentence
from jupyter_gpumem.units import MiB

MARGIN_S = 0.25  # waking up and taking the lock, on a loaded machine
NAME = "test-gpumem-reader"
SCENARIOS = Path(__file__).parents[1] / "fixtures/scenarios"


class Driver:
    """A ``read`` for the Reader: answers at once while open, blocks while closed (a stalled call), and counts
    its calls. Each answer says the memory used now, and is stamped with the time it began."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.calls = 0
        self.used_mib = 1000
        self.fail: Exception | None = None
        self._once = False

    def read(self, cpu_window_s: float) -> Snapshot:
        self.calls += 1
        began = time.time()
        self.open.wait()
        if self._once:  # the call in flight answers; the next one stalls again
            self._once = False
            self.open.clear()
        if self.fail is not None:
            error, self.fail = self.fail, None
            raise error
        device = Device(index=0, uuid="GPU-0", name="GPU", total_bytes=8192 * MiB, used_bytes=self.used_mib * MiB)
        return Snapshot(taken_at=began, own_pid=42, devices=(device,))

    def stall(self) -> None:
        self.open.clear()

    def answer(self) -> None:
        self.open.set()

    def answer_once(self) -> None:
        self._once = True
        self.open.set()


@pytest.fixture
def driver() -> Iterator[Driver]:
    driver = Driver()
    yield driver
    driver.answer()  # let a reading in flight end, so the reader's thread waits for the next request


def thread_name(request: pytest.FixtureRequest) -> str:
    """A Reader's thread lives as long as the process: each test's has a name of its own."""
    return f"{NAME}-{request.node.name}"


@pytest.fixture
def reader(driver: Driver, request: pytest.FixtureRequest) -> Reader:
    return Reader(driver.read, own_pid=42, name=thread_name(request))


@pytest.fixture
def reader_threads(request: pytest.FixtureRequest) -> Callable[[], list[threading.Thread]]:
    """The threads of this test's Reader."""
    return lambda: [t for t in threading.enumerate() if t.name == thread_name(request)]


def used_mib(snapshot: Snapshot) -> int | None:
    (device,) = snapshot.devices
    return None if device.used_bytes is None else device.used_bytes // MiB


def timed_fresh(reader: Reader, deadline_s: float) -> tuple[float, Snapshot]:
    start = time.monotonic()
    snapshot = reader.fresh(deadline_s)
    return time.monotonic() - start, snapshot


def wait_until(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.01)


def test_a_caller_never_waits_past_its_deadline_and_gets_the_last_figures_marked_stalled(driver, reader):
    answered = reader.fresh(1.0)
    assert answered.stalled_since is None and used_mib(answered) == 1000
    driver.stall()
    driver.used_mib = 2000  # what the driver would say, had it answered

    took, late = timed_fresh(reader, 0.3)

    assert 0.3 <= took < 0.3 + MARGIN_S
    assert late.stalled_since == answered.taken_at  # since its last answer
    assert late.taken_at > answered.taken_at  # when they were asked for
    assert late.devices == answered.devices and used_mib(late) == 1000
    assert stalled(late) is not None and reader.waiting_since is not None


def test_a_driver_that_never_answered_gives_no_figures_and_says_since_when_it_was_first_asked(driver, reader):
    driver.stall()
    asked = time.time()

    took, first = timed_fresh(reader, 0.2)
    _, second = timed_fresh(reader, 0.2)

    assert took < 0.2 + MARGIN_S
    assert first.devices == () and first.problem is None and first.own_pid == 42
    assert first.stalled_since is not None and asked <= first.stalled_since <= asked + MARGIN_S
    assert second.stalled_since == first.stalled_since  # since it was first asked, not since each request
    assert stalled(second, now=second.stalled_since + 5) == stalled_sentence(
        first.stalled_since, first.stalled_since + 5, figures=False
    )
    assert str(stalled(second)).endswith("there are no figures yet.")


def test_fifty_callers_during_one_stall_start_no_thread_and_one_reading_serves_them_all(driver, reader, reader_threads):
    reader.fresh(1.0)  # the reader's thread is started by the first request
    driver.stall()
    threads = threading.active_count()

    answers = [reader.fresh(0.01) for _ in range(50)]

    assert threading.active_count() == threads and len(reader_threads()) == 1
    assert driver.calls == 2  # the first answer, and the one reading in flight since the stall
    assert all(a.stalled_since is not None for a in answers)
    driver.answer()
    fresh = reader.fresh(1.0)  # one more reading, after the one in flight, for every request made meanwhile
    assert fresh.stalled_since is None
    time.sleep(0.2)
    assert driver.calls == 3 and threading.active_count() == threads


def test_callers_on_many_threads_during_a_stall_each_return_by_their_deadline_on_one_reader_thread(
    driver, reader, reader_threads
):
    reader.fresh(1.0)
    driver.stall()
    took: list[float] = []

    def ask() -> None:
        took.append(timed_fresh(reader, 0.2)[0])

    callers = [threading.Thread(target=ask) for _ in range(20)]
    for caller in callers:
        caller.start()
    assert len(reader_threads()) == 1
    for caller in callers:
        caller.join(5)
    assert len(took) == 20 and max(took) < 0.2 + MARGIN_S
    assert driver.calls == 2


def test_a_reading_the_driver_gives_late_is_delivered_once_and_is_not_older_than_the_stale_samples(driver, reader):
    got, answered = reader.next(0, 1.0)
    assert answered.stalled_since is None
    driver.stall()
    driver.used_mib = 2000
    stale: list[Snapshot] = []
    for _ in range(3):  # the sampler's ticks meanwhile: the number stays, the figures are the last, marked
        number, snapshot = reader.next(got, 0.1)
        assert number == got and snapshot.stalled_since == answered.taken_at
        stale.append(snapshot)

    driver.answer_once()
    wait_until(lambda: reader.last() is not answered)
    late_number, late = reader.next(got, 0.0)  # it has arrived: no wait, not dropped

    assert late_number > got and late.stalled_since is None and used_mib(late) == 2000
    # The reading began before the stale samples were handed out, and arrived after them: it counts from then.
    assert late.taken_at >= max(s.taken_at for s in stale)
    # Once: the next tick does not get it again as news, but as the last figures of a driver stalled again.
    again_number, again = reader.next(late_number, 0.1)
    assert again_number == late_number and again.stalled_since == late.taken_at


def test_the_late_answer_and_the_reading_queued_behind_it_both_reach_the_sampler_in_order(driver, reader):
    got, _ = reader.next(0, 1.0)
    driver.stall()
    assert reader.next(got, 0.1)[0] == got  # stalled: a reading is in flight
    reader.fresh(0.05)  # the status asks meanwhile: one more reading queued behind the one in flight
    driver.used_mib = 2000
    driver.answer()  # both are made before the sampler's next tick
    wait_until(lambda: reader.readings >= 3 and reader.waiting_since is None)
    made = reader.readings

    first_number, first = reader.next(got, 0.0)
    second_number, second = reader.next(first_number, 0.0)

    assert reader.readings == made  # both were readings already made: neither was dropped for a new one
    assert got < first_number < second_number
    assert first.stalled_since is None and second.stalled_since is None
    assert first.taken_at <= second.taken_at  # oldest first: the chart's time runs forward


def test_a_late_answer_that_arrives_while_the_sampler_waits_is_not_skipped_for_the_reading_behind_it(driver, reader):
    got, _ = reader.next(0, 1.0)
    driver.stall()
    assert reader.next(got, 0.1)[0] == got
    reader.fresh(0.05)  # a reading queued behind the one in flight
    threading.Timer(0.3, driver.answer).start()  # both are made while the sampler's next call waits

    first_number, first = reader.next(got, 5.0)
    wait_until(lambda: reader.waiting_since is None and reader.readings >= 3)
    made = reader.readings
    second_number, second = reader.next(first_number, 0.0)

    assert reader.readings == made and got < first_number < second_number
    assert first.stalled_since is None and second.stalled_since is None and first.taken_at <= second.taken_at


def test_the_driver_coming_back_is_picked_up_by_itself(driver, reader):
    reader.fresh(1.0)
    driver.stall()
    assert reader.fresh(0.1).stalled_since is not None
    driver.used_mib = 3000

    driver.answer()
    wait_until(lambda: reader.waiting_since is None)  # the reading in flight ends without anyone asking
    assert reader.last() is not None and used_mib(reader.last()) == 3000  # type: ignore[arg-type]
    took, fresh = timed_fresh(reader, 1.0)

    assert fresh.stalled_since is None and stalled(fresh) is None and used_mib(fresh) == 3000
    assert took < MARGIN_S


def test_an_error_in_the_reading_becomes_a_sentence_and_the_thread_goes_on(driver, reader, reader_threads):
    driver.fail = RuntimeError("the binding broke")

    failed = reader.fresh(1.0)
    (thread,) = reader_threads()
    answered = reader.fresh(1.0)

    assert failed.problem == "jupyter-gpumem could not read the GPUs (RuntimeError: the binding broke)."
    assert failed.devices == () and failed.stalled_since is None
    assert answered.problem is None and used_mib(answered) == 1000
    assert reader_threads() == [thread] and thread.is_alive()


@pytest.fixture
def utc() -> Iterator[None]:
    """Local time is UTC while the test runs, so the sentence's clock is known."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_the_stalled_sentence_says_since_when_and_for_how_long(utc):
    since = 1763721723.0  # 10:42:03 UTC
    with_figures = Snapshot(taken_at=since + 12, own_pid=1, devices=(Device(0, "GPU-0", "GPU"),), stalled_since=since)
    without = Snapshot(taken_at=since + 12, own_pid=1, stalled_since=since)

    assert stalled(with_figures, now=since + 12) == (
        "The NVIDIA driver has not answered since 10:42:03 (for 12 s); figures are from then."
    )
    assert stalled(without, now=since + 12) == (
        "The NVIDIA driver has not answered since 10:42:03 (for 12 s); there are no figures yet."
    )
    assert stalled(with_figures, now=since + 600) == (
        "The NVIDIA driver has not answered since 10:42:03 (for 10 min); figures are from then."
    )
    # A clock set back since then: never a negative time.
    assert "(for 0 s)" in str(stalled(with_figures, now=since - 30))
    assert stalled(Snapshot(taken_at=since, own_pid=1, devices=with_figures.devices), now=since) is None


# ---------------------------------------------------------------------- the real binding on the stand-in

STALLED_SNAPSHOTS = """
import json, sys, time
from pathlib import Path
from jupyter_gpumem import standin, take_snapshot

path, text = Path(sys.argv[1]), Path(sys.argv[1]).read_text()
out = {}
answered = take_snapshot(deadline_s=5.0)
out["answered"] = [answered.stalled_since, [d.used_bytes for d in answered.devices]]
standin.write_scenario(path, text + "driver stall=1\\n")
start = time.monotonic()
late = take_snapshot(deadline_s=0.5)
out["stalled_took_s"] = time.monotonic() - start
out["stalled"] = [late.stalled_since == answered.taken_at, [d.used_bytes for d in late.devices]]
standin.write_scenario(path, text.replace("used=3500MiB", "used=4000MiB"))
start = time.monotonic()
fresh = take_snapshot(deadline_s=0.5)
while fresh.stalled_since is not None and time.monotonic() - start < 5:
    fresh = take_snapshot(deadline_s=0.5)
out["back_after_s"] = time.monotonic() - start
out["back"] = [fresh.stalled_since, [d.used_bytes for d in fresh.devices]]
standin.write_scenario(path, text + "driver stall=1\\n")
take_snapshot(deadline_s=0.1)  # the reader's thread is left in NVML as the process exits
print(json.dumps(out), flush=True)
"""


def test_the_stand_ins_stalled_driver_holds_take_snapshot_no_longer_than_its_deadline(scenario):
    path = scenario("own_process")
    env = {**os.environ, standin.SCENARIO_VARIABLE: str(path)}
    start = time.monotonic()
    # The process ends with its reader's thread stuck in NVML (the scenario stalls again): a daemon, it holds
    # no exit.
    done = subprocess.run(
        [sys.executable, "-c", STALLED_SNAPSHOTS, str(path)], env=env, capture_output=True, text=True, timeout=60
    )
    print(done.stdout, done.stderr, f"the process took {time.monotonic() - start:.2f} s")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)

    assert out["answered"] == [None, [3500 * MiB]]
    assert out["stalled_took_s"] < 0.5 + MARGIN_S and out["stalled"] == [True, [3500 * MiB]]
    assert out["back"] == [None, [4000 * MiB]] and out["back_after_s"] < 2.0


def test_the_stand_ins_stalled_nvml_init_holds_take_snapshot_no_longer_than_its_deadline(scenario):
    path = scenario((SCENARIOS / "own_process_stalled.scenario").read_text())
    code = (
        "import json, time; from jupyter_gpumem import take_snapshot; start = time.monotonic(); "
        "s = take_snapshot(deadline_s=0.5); "
        "print(json.dumps([time.monotonic() - start, s.stalled_since is not None, len(s.devices), s.problem]))"
    )
    env = {**os.environ, standin.SCENARIO_VARIABLE: str(path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    took, marked, devices, problem = json.loads(done.stdout)
    assert took < 0.5 + MARGIN_S and (marked, devices, problem) == (True, 0, None)
