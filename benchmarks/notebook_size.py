"""The saved notebook's weight: three `%gpumem show` views, stopped, in a notebook executed headless with its
widget state saved (as ``jupyter nbconvert --execute`` does, and JupyterLab's "Save Widget State
Automatically"), against the same notebook without the views, in the same run. About a minute.

    python benchmarks/notebook_size.py [--views 3] [--history 3600] [--keep saved.ipynb]

On the stand-in NVML (one A100, this kernel and 11 other processes), nbclient runs: a cell that gives the
kernel's sampler an hour of history at 1 s (as benchmarks/inline_view.py does: this kernel's memory rising and
falling through its budget, so the chart has peaks and over-budget marks), ``--views`` cells of
`%gpumem show`, and a cell that stops every view (what its Stop button does). Then the notebook is saved
with nbformat, as a frontend would save it.

Printed: the file's size; the widget state's size (its share of the file); each output's size by mimetype
(plotly's figure, the still HTML with its SVG chart, the text); the bytes each view adds (the file less the
baseline, per view). Target (issue 35): three stopped views <= 450 KB in all, still figures included.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _standin

KB = 1000
TARGET_BYTES = 450 * KB
GPU = "GPU-be0c0000-0000-4000-8000-000000000001"
TOTAL_MIB = 40960
BUDGET_MIB = 20480
OTHERS = [(7000 + i, 1000 + i * 100) for i in range(11)]
SCENARIO = (
    "driver version=550.54.15 cuda=12040\n"
    f'gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU} total={TOTAL_MIB}MiB used={18480 + 16500}MiB util=80\n'
    "proc gpu=0 pid=self used=18480MiB name=python\n"
    + "".join(f"proc gpu=0 pid={pid} used={mib}MiB name=python3\n" for pid, mib in OTHERS)
)

# The sampler's history as it would be after an hour at 1 s (figures only, as the sampler keeps them).
SETUP = """%load_ext jupyter_gpumem
%gpumem fraction=0.5 framework=tensorflow
import math, time
from jupyter_gpumem.kernel.runtime import runtime
from jupyter_gpumem.kernel.protocol import figures_only
MiB, BUDGET_MIB, TOTAL_MIB, OTHERS_MIB, GPU = 1 << 20, {budget}, {total}, {others}, {gpu!r}
def sample(t, own_mib):
    own, budget = own_mib * MiB, BUDGET_MIB * MiB
    gpu = dict(index=0, uuid=GPU, name="NVIDIA A100-SXM4-40GB", lost=False, hidden=False,
               total_bytes=TOTAL_MIB * MiB, used_bytes=own + OTHERS_MIB * MiB, own_bytes=own, budget_bytes=budget,
               in_force=True, pool_bytes=budget - 500 * MiB, pool_known=False, overhead_bytes=500 * MiB,
               overhead_source="estimated", framework_bytes=own - 600 * MiB, framework_peak_bytes=own - 500 * MiB,
               over_reason="CUDA context + cuDNN/cuBLAS outside TensorFlow's limit" if own > budget else None,
               processes_known=True)
    return dict(t=t, problem=None, simulated=None, policy="fraction=0.5", policy_state="in_force",
                policy_note="in force in TensorFlow", framework="TensorFlow", framework_started=True, gpus=[gpu])
st = runtime().stream
st.sampler.configure(1.0, {history})
st.sampler.stop()
st.sampler._history.clear()
start = time.time() - {history}
for i in range({history}):  # epochs of a training run: a ramp, a plateau with noise, a spike now and then
    own = 4000 + 14000 * min(1.0, (i % 600) / 120) + 800 * math.sin(i / 7) + (3500 if i % 900 == 450 else 0)
    st.sampler._history.append(figures_only(sample(start + i, int(own))))
len(st.sampler.history())"""

STOP = """time.sleep(2.5)  # a few live samples, as a view that ran a while
for view in st.views:
    view.close()
print(len(st.views), "views open")"""


def notebook(views: int, history: int) -> Any:
    import nbformat

    setup = SETUP.format(budget=BUDGET_MIB, total=TOTAL_MIB, others=sum(m for _, m in OTHERS), gpu=GPU, history=history)
    cells = [setup, *["%gpumem show"] * views, STOP]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    return nb


def run(views: int, history: int, path: Path) -> dict[str, Any]:
    """Execute and save the notebook; its sizes, as nbformat writes them (indent 1, as JupyterLab's)."""
    import nbformat
    from nbclient import NotebookClient

    nb = notebook(views, history)
    NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    if errors:
        raise SystemExit(f"the notebook failed: {errors[0]['ename']}: {errors[0]['evalue']}")
    nbformat.write(nb, path)
    state = nb.metadata.get("widgets", {})
    by_mimetype: Counter[str] = Counter()
    for cell in nb.cells[1 : 1 + views]:
        for output in cell.get("outputs", []):
            for mimetype, value in output.get("data", {}).items():
                by_mimetype[mimetype] += len(json.dumps(value, indent=1))
    return {
        "total": path.stat().st_size,
        "state": len(json.dumps(state, indent=1)) if state else 0,
        "models": sum(len(s.get("state", {})) for s in state.values()) if state else 0,
        "by_mimetype": by_mimetype,
        "stopped": sum(
            1
            for cell in nb.cells[1 : 1 + views]
            for o in cell.get("outputs", [])
            if "text/html" in o.get("data", {}) and "application/vnd.jupyter.widget-view+json" not in o["data"]
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--views", type=int, default=3)
    parser.add_argument("--history", type=int, default=3600, help="seconds of history at 1 s")
    parser.add_argument("--keep", type=Path, help="also save the notebook with the views here")
    args = parser.parse_args()
    _standin.ensure(SCENARIO)
    with tempfile.TemporaryDirectory() as tmp:
        base = run(0, args.history, Path(tmp) / "baseline.ipynb")
        views = run(args.views, args.history, Path(tmp) / "views.ipynb")
        if args.keep:
            args.keep.write_bytes((Path(tmp) / "views.ipynb").read_bytes())
    added = views["total"] - base["total"]
    print(f"{args.views} views over {args.history} s of history at 1 s, executed by nbclient, widget state saved")
    print(f"baseline (no views): {base['total'] / KB:.1f} KB, widget state {base['state'] / KB:.1f} KB")
    print(
        f"with the views: {views['total'] / KB:.1f} KB ({views['stopped']} of {args.views} stopped), "
        f"widget state {views['state'] / KB:.1f} KB ({views['models']} models)"
    )
    for mimetype, size in sorted(views["by_mimetype"].items(), key=lambda kv: -kv[1]):
        print(f"  {mimetype}: {size / KB:.1f} KB in all, {size / args.views / KB:.1f} KB per view")
    print(f"per view (state and outputs): {added / args.views / KB:.1f} KB")
    verdict = "PASS" if views["total"] <= TARGET_BYTES else "FAIL"
    print(f"target: the notebook <= {TARGET_BYTES / KB:.0f} KB: {views['total'] / KB:.1f} KB {verdict}")


if __name__ == "__main__":
    main()
