"""What do the cell hooks of `%gpumem cells` cost per cell? IPython's pre_run_cell and post_run_cell handlers
(kernel/recorder.Recorder.before and .after) timed in this process, against a baseline taken in the same run: an
IPython cell (`x = 1`) run without them.

    python benchmarks/cells.py [--cells 2000]

Three cases: no framework imported; PyTorch imported (the CPU build) but CUDA not started, the usual state
before a model runs; and a started PyTorch on 2 GPUs, its CUDA calls (memory_allocated & co, the peak's reset)
answered by a stand-in config, so what is timed is the hooks' own Python work and not the driver's (on a real
GPU these are reads of the caching allocator's counters, microseconds each). Target: < 1 ms per cell. The
sampler thread's part is a dict update per reading (Recorder.observe), no NVML or framework call.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from types import SimpleNamespace

TARGET_MS = 1.0


class StartedTorch:
    """PyTorch with CUDA started on 2 GPUs, as far as the adapter asks."""

    def initialised(self) -> bool:
        return True

    def device_count(self) -> int:
        return 2

    def memory(self, index: int) -> tuple[int, int, int]:
        return 100 << 20, 200 << 20, 300 << 20

    def reset_peak(self, index: int) -> None:
        pass


def per_call_ms(call: Callable[[], None], cells: int) -> float:
    """The median of 5 rounds, each ``cells`` calls, per call."""
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(cells):
            call()
        rounds.append((time.perf_counter() - start) / cells * 1000)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=2000)
    args = parser.parse_args()

    from IPython.core.interactiveshell import InteractiveShell

    from jupyter_gpumem.budget.config import GpumemConfig
    from jupyter_gpumem.frameworks.pytorch import PyTorch
    from jupyter_gpumem.kernel.control import Controller
    from jupyter_gpumem.kernel.recorder import Recorder

    shell = InteractiveShell.instance()
    baseline = per_call_ms(lambda: shell.run_cell("x = 1", store_history=False), args.cells // 4)

    info = SimpleNamespace(raw_cell="y = model(x)\nloss = y.sum()", store_history=True)
    result = SimpleNamespace(execution_count=12, error_in_exec=None)

    def hooks(recorder: Recorder) -> Callable[[], None]:
        def cell() -> None:
            recorder.before(info)
            recorder.after(result)

        return cell

    control = Controller(GpumemConfig())
    cases = [("no framework imported", Recorder(control))]
    import torch  # noqa: F401  (the CPU build: imported, CUDA not started)

    cases.append(("PyTorch imported, CUDA not started", Recorder(control)))
    started = Controller(GpumemConfig(), adapters={"pytorch": PyTorch(StartedTorch())})  # type: ignore[arg-type]
    cases.append(("PyTorch started on 2 GPUs (stand-in CUDA calls)", Recorder(started)))

    print(f"baseline: an IPython cell (x = 1) without the hooks: {baseline:.3f} ms")
    worst = 0.0
    for name, recorder in cases:
        cost = per_call_ms(hooks(recorder), args.cells)
        worst = max(worst, cost)
        print(f"{name:50s} hooks {cost * 1000:7.1f} µs per cell ({100 * cost / baseline:5.1f}% of the baseline cell)")
    control.close()
    started.close()
    print(f"target: < {TARGET_MS:g} ms per cell: {'met' if worst < TARGET_MS else 'NOT MET'} (worst {worst:.3f} ms)")


if __name__ == "__main__":
    main()
