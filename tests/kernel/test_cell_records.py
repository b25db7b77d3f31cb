"""The cell records' allocator figures (kernel/recorder.py): a PyTorch cell's peak is its own, since its peak is
reset as it starts; a framework that cannot reset its peak (JAX) tells a cell's peak only where it rose. PyTorch's
CUDA calls go through the recording TorchConfig of the adapter tests."""

from __future__ import annotations

import time
from types import SimpleNamespace

from controller_fixtures import GPU_A, Framework, Machine, a100, make
from frameworks.test_pytorch_adapter import RecordingTorchConfig

from jupyter_gpumem import i18n
from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.frameworks.pytorch import PyTorch
from jupyter_gpumem.kernel.recorder import Recorder
from jupyter_gpumem.render.cells import tables
from jupyter_gpumem.units import MiB

__all__ = ["make"]  # the fixture


def run_cell(recorder: Recorder, source: str, count: int, during=lambda: None) -> None:
    recorder.before(SimpleNamespace(raw_cell=source, store_history=True))
    during()
    recorder.after(SimpleNamespace(execution_count=count, error_in_exec=None))


def row(recorder: Recorder) -> tuple[str, ...]:
    [table] = tables(recorder.finished(), [(GPU_A, "GPU 0")], [GPU_A])
    return table.rows[-1]


def test_a_pytorch_cell_shows_its_own_peak_not_the_kernels_earlier_one(make):
    import torch  # noqa: F401  (the adapter looks for it in sys.modules)

    config = RecordingTorchConfig([(GPU_A, 40 << 30)], started=True)  # max_memory_allocated: 200 MiB so far
    adapter = PyTorch(config)
    recorder = Recorder(make(Machine(a100(0, GPU_A, 1000)), adapter))

    run_cell(recorder, "\n  y = model(x)\n", 7, during=lambda: config.peaks.__setitem__(0, 150 * MiB))

    assert row(recorder)[:2] == ("[7]", "y = model(x)")
    assert row(recorder)[-2:] == ("150 MiB", "100 MiB")  # PyTorch's peak in this cell, and what it left allocated
    assert config.calls == [("reset_peak", 0)]
    assert [a.peak for a in adapter.memory_in_use()] == [200 * MiB]  # the sidebar's peak is still the kernel's


def test_a_frameworks_peak_that_cannot_be_reset_is_shown_only_where_the_cell_raised_it(make):
    jax = Framework("JAX")
    jax.is_imported = jax.started = True
    jax.pools = (Allocator(100 * MiB, 200 * MiB, None),)
    recorder = Recorder(make(Machine(a100(0, GPU_A, 1000)), jax))

    run_cell(recorder, "small = f(x)", 1)
    assert row(recorder)[-2:] == ("—", "100 MiB")  # at most the earlier 200 MiB: not told

    run_cell(recorder, "big = f(x)", 2, during=lambda: setattr(jax, "pools", (Allocator(300 * MiB, 900 * MiB, None),)))
    assert row(recorder)[-2:] == ("900 MiB", "300 MiB")


def test_the_chart_gets_each_finished_cell_once_and_the_running_one_with_every_sample(make):
    from jupyter_gpumem.wire.schemas import Schema

    recorder = Recorder(make(Machine(a100(0, GPU_A, 1000)), Framework("PyTorch")))
    run_cell(recorder, "a = 1", 1)
    first = time.time()  # a sample: the cell that ended
    assert [(s["line"], s["end_t"] is None) for s in recorder.spans(0.0, first)] == [("a = 1", False)]
    recorder.before(SimpleNamespace(raw_cell="train(model)  # a long one", store_history=True))
    second = time.time()  # the next sample: the running cell only
    [running] = recorder.spans(first, second)
    assert (running["count"], running["end_t"], running["error"]) == (None, None, False)  # [*], as Jupyter says
    recorder.after(SimpleNamespace(execution_count=2, error_in_exec=ValueError()))
    third = time.time()  # the next: it ended, with an error
    [ended] = recorder.spans(second, third)
    assert (ended["count"], ended["error"]) == (2, True) and ended["end_t"] is not None
    assert recorder.spans(third, time.time()) == []
    cell = Schema("comm.v1.json", "a cell", "cell", "cell")
    assert cell.problem(running) is None and cell.problem(ended) is None


def test_two_started_frameworks_head_their_columns_in_the_kernels_language(make):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    for framework in (tf, torch):
        framework.is_imported = framework.started = True
        framework.pools = (Allocator(100 * MiB, 200 * MiB, None),)
    recorder = Recorder(make(Machine(a100(0, GPU_A, 1000)), tf, torch))
    i18n.use_language("ja-JP")
    try:
        run_cell(recorder, "y = model(x)", 1)
        [table] = tables(recorder.finished(), [(GPU_A, "GPU 0")], [GPU_A])
    finally:
        i18n.use_language(None)
    assert table.columns[-2:] == ("TensorFlow と PyTorch ピーク", "TensorFlow と PyTorch 保持")
