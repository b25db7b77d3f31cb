"""Every check that needs a real NVIDIA GPU, as one command for a session lent a device (issues 44, 45, 46).

    PYTHONPATH=. python3 benchmarks/gpu_acceptance.py --out $OUT
    python benchmarks/gpu_acceptance.py --sections driver cupy --out /tmp/gpu     # some sections
    python benchmarks/gpu_acceptance.py --sections driver --standin my.scenario  # the driver section, stand-in
    python benchmarks/gpu_acceptance.py --vendor                                  # copy the package's dependencies

Sections (benchmarks/gpu/*.py say what each measures): driver (issue 44 Must 6: what the driver answers, read
only, and the stand-in scenario lines that answer the same), fractions, stream, cells, largest (issue 45 Must 3),
cupy (issue 46 Must 6). Each case runs in a fresh process; each section has a wall-clock cap (CAPS_S) and the
whole run one (--budget-s, 480 s by default), so a session lent 15 minutes of device time has room to rerun.

Without a GPU, each GPU section ends with one sentence and status 2 (the driver section reads whatever NVML answers,
the stand-in included). Exit status: the worst section's (0 all within target, 1 a target missed, 2 could not run,
3 out of time). Written under --out: gpu-results.md (the tables, as printed) and gpu-results.json (every figure).

On the device only the frameworks and nvidia-ml-py are installed: the package's other import-time dependencies
(IPython, traitlets, psutil, wcwidth, jinja2, anywidget, ...) come from build/gpu-deps, which `--vendor` fills from
this Python's environment (no download) and the device tool carries; jupyter_gpumem/_version.py, generated at
build time and ignored by git, is stood in for when absent.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: the gpu package of sections

from gpu import common

common.prepare()

from gpu import cupy_section, driver, frameworks, largest  # noqa: E402
from gpu.common import CANNOT_RUN, OK, TIMED_OUT, Deadline, Section, run_case  # noqa: E402

SECTIONS = ("driver", "fractions", "stream", "cells", "largest", "cupy")
GPU_SECTIONS = SECTIONS[1:]
# Each section's cap in seconds, from its cases on an H100: a fresh process with a framework started takes 5-10 s;
# fractions 6 cases (two frameworks x three asks, each filling up to half the card in 256 MiB steps, ~15 s);
# stream and cells 2 cases of ~15 s; largest 6 cases (~15 s PyTorch, ~30 s JAX: a compile per size); cupy 4 cases
# of ~10 s. About 5 minutes expected; the caps add up to 480 s.
CAPS_S = {"driver": 20, "fractions": 120, "stream": 45, "cells": 45, "largest": 180, "cupy": 70}
CASES = {
    "probe": lambda: _probe(),
    "driver": driver.case,
    "fractions": frameworks.fractions_case,
    "stream": frameworks.stream_case,
    "cells": frameworks.cells_case,
    "largest": largest.case,
    "cupy_limit": cupy_section.limit_case,
    "cupy_largest": cupy_section.largest_case,
    "cupy_context": cupy_section.context_case,
}


def _probe() -> dict[str, Any]:
    """GPU 0 as jupyter-gpumem sees it, or why there is no real GPU to measure."""
    from jupyter_gpumem.gpu.snapshot import take_snapshot

    snapshot = take_snapshot()
    if snapshot.problem or not snapshot.devices:
        why = "no NVIDIA driver answers here" if snapshot.problem else "NVML lists no GPU"
        return {"error": why, "problem": snapshot.problem}
    device = snapshot.devices[0]
    return {
        "name": device.name,
        "total": device.total_bytes,
        "driver": snapshot.driver_version,
        "simulated": snapshot.simulated_scenario,
    }


def markdown(section: Section) -> str:
    lines = [f"### {section.title}", ""]
    if section.rows:
        width = len(section.columns)
        lines.append("| " + " | ".join(section.columns) + " |")
        lines.append("|" + "---|" * width)
        for row in section.rows:
            cells = [c.replace("|", "\\|") for c in row] + [""] * (width - len(row))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [*section.notes, ""] if section.notes else []
    state = "within target" if section.status == OK else section.sentence.rstrip(".")
    lines.append(f"**{section.name}: status {section.status}** ({state}; {section.wall_s:.0f} s)")
    return "\n".join(lines) + "\n"


def run_section(name: str, args: argparse.Namespace, probe: dict[str, Any], budget: Deadline) -> Section:
    deadline = Deadline(min(CAPS_S[name], budget.left()))
    start = time.monotonic()
    if name == "driver":
        section = driver.section(deadline, probe.get("simulated"))
    elif "error" in probe or probe.get("simulated"):
        why = probe.get("error") or f"the stand-in NVML answers here ({probe['simulated']}), not a real GPU"
        sentence = f"The {name} section needs a real GPU and ran nothing: {why}."
        section = Section(name, name, []).fail(CANNOT_RUN, sentence)
    elif name == "fractions":
        section = frameworks.fractions_section(args, deadline)
    elif name == "stream":
        section = frameworks.stream_section(args, deadline)
    elif name == "cells":
        section = frameworks.cells_section(args, deadline)
    elif name == "largest":
        section = largest.section(args, deadline, probe["total"])
    else:
        section = cupy_section.section(args, deadline)
    if any(case.get("timed_out") for case in section.data):
        section.fail(
            TIMED_OUT, f"Cases ran out of the section's {deadline.seconds:.0f} s: rerun it alone (--sections {name})."
        )
    section.wall_s = time.monotonic() - start
    return section


def vendor(target: Path) -> None:
    """Copy the package's import-time dependencies (not the frameworks, not nvidia-ml-py) from this Python's
    environment into ``target``, for a device that has only the frameworks."""
    names = subprocess.run(
        [sys.executable, "-c", VENDOR_LIST, str(common.REPO)], capture_output=True, text=True, check=True
    ).stdout.split()
    distributions = importlib.metadata.packages_distributions()
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        if spec.submodule_search_locations:
            source = Path(next(iter(spec.submodule_search_locations)))
            shutil.copytree(source, target / source.name, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        else:
            shutil.copy2(spec.origin, target / Path(spec.origin).name)
        for distribution in distributions.get(name, []):  # some read their own version from it (anywidget)
            found = Path(str(importlib.metadata.distribution(distribution)._path))  # type: ignore[attr-defined]
            if not (target / found.name).exists():
                shutil.copytree(found, target / found.name)
    size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    print(f"{len(names)} modules into {target} ({size / 2**20:.1f} MiB): {' '.join(names)}")


VENDOR_LIST = """
import sys
sys.path.insert(0, sys.argv[1])
before = set(sys.modules)
import jupyter_gpumem.kernel.largest, jupyter_gpumem.kernel.recorder, jupyter_gpumem.kernel.protocol
import jupyter_gpumem.frameworks.cupy, jupyter_gpumem.gpu.snapshot
import jinja2, markupsafe, fastjsonschema  # imported on first use (HTML outputs, the wire's checks)
skip = set(sys.stdlib_module_names) | {"jupyter_gpumem", "pynvml", "torch", "jax", "jaxlib", "cupy", "numpy"}
print(*sorted({m.split(".")[0] for m in set(sys.modules) - before} - skip - {""}))
"""


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--out", type=Path, help="a folder for gpu-results.md and gpu-results.json")
    parser.add_argument("--frameworks", nargs="+", choices=["torch", "jax"], default=["torch", "jax"])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5])
    parser.add_argument("--limit-mib", type=int, default=8192, help="the limit= of the fractions and cupy sections")
    parser.add_argument("--limits-mib", type=int, nargs="+", default=[4096], help="the largest section's limits")
    parser.add_argument("--budget-s", type=float, default=480.0, help="the whole run's wall-clock cap")
    parser.add_argument("--standin", type=Path, help="run on the stand-in NVML with this scenario file")
    parser.add_argument("--vendor", nargs="?", const=common.DEPS, type=Path, help="copy the dependencies, then stop")
    parser.add_argument("--case", nargs=2, metavar=("KIND", "JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if any(not 0 < f <= 1 for f in args.fractions):
        parser.error("each of --fractions is above 0 and at most 1")
    if args.limit_mib <= 0 or any(limit <= 0 for limit in args.limits_mib) or args.budget_s <= 0:
        parser.error("--limit-mib, --limits-mib and --budget-s take positive numbers")
    return args


def main(argv: list[str]) -> int:
    args = parse_arguments(argv)
    if args.case:
        common.case_main(args.case[0], args.case[1], CASES)
        return 0
    if args.vendor:
        vendor(args.vendor)
        return 0
    if args.standin:
        from _standin import ensure

        ensure(args.standin.read_text())
    missing = common.missing_modules()
    if missing:
        print(
            f"jupyter_gpumem cannot be imported here: {', '.join(missing)} missing. Run `python "
            f"benchmarks/gpu_acceptance.py --vendor` where they are installed and carry build/gpu-deps along."
        )
        return CANNOT_RUN
    budget = Deadline(args.budget_s)
    probe = run_case("probe", {}, budget)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    card = "no GPU" if "error" in probe else f"{probe['name']}, {probe['total'] // 2**20} MiB, driver {probe['driver']}"
    head = f"## Run of {started}: {card}\n"
    print(head, flush=True)
    report, results = [head], []
    for name in args.sections:
        section = run_section(name, args, probe, budget)
        text = markdown(section)
        print(text, flush=True)
        report.append(text)
        results.append(section)
    summary = ["| section | status | sentence |", "|---|---|---|"]
    summary += [f"| {s.name} | {s.status} | {s.sentence or 'within target'} |" for s in results]
    print("\n".join(summary))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu-results.md").write_text("\n".join([*report, *summary]) + "\n")
        document = {
            "started": started,
            "probe": probe,
            "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "sections": {
                s.name: {
                    "status": s.status,
                    "sentence": s.sentence,
                    "wall_s": round(s.wall_s, 1),
                    "columns": s.columns,
                    "rows": s.rows,
                    "notes": s.notes,
                    "cases": s.data,
                }
                for s in results
            },
        }
        (args.out / "gpu-results.json").write_text(json.dumps(document, indent=1) + "\n")
    return max((s.status for s in results), default=OK)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
