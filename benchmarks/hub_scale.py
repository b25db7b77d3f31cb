"""The hub service in front of a simulated fleet of single-user servers on 127.0.0.1 (tests/hub/fleet.py: the
hub's REST API and every server behind one port, as behind configurable-http-proxy; real HTTP).

    python benchmarks/hub_scale.py --servers 1000 [--seconds 30] [--faults hung=30,slow=10,404=5,502=5,malformed=5]

The service is started as JupyterHub starts a managed service (``python -m jupyter_gpumem.hub`` with its
environment) with its defaults (a 5 s interval). For ``--seconds`` the script asks the service's JSON every 2 s
and counts the healthy users it shows (a row with a kernel and no problem); it prints: when every healthy user
was first seen (or how many of them ever were), the service's CPU per poll (its process's CPU time over the
window, by the number of times it listed the hub's users), requests per second to the servers (as through the
proxy), the page's, the JSON's and /metrics' bytes, /metrics' time to answer, and the service's memory (RSS).
Where the service reports its own polls (``poll`` in its JSON), their duration too. About ``--seconds`` + 10 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "hub")]

from fleet import ADMIN_TOKEN, kinds, parse_faults  # noqa: E402
from hub_fixtures import running_fleet  # noqa: E402
from server_fixtures import http  # noqa: E402


def healthy_seen(data: dict[str, object], healthy: set[str]) -> set[str]:
    rows = data.get("rows", [])
    assert isinstance(rows, list)
    return {r["user"] for r in rows if r["user"] in healthy and r.get("kernel_id") and not r.get("problem")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--faults", default="hung=30,slow=10,404=5,502=5,malformed=5")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--slow-s", type=float, default=12)
    args = parser.parse_args()
    healthy = {user for user, kind in kinds(args.servers, parse_faults(args.faults)) if kind == "healthy"}
    with tempfile.TemporaryDirectory() as base, running_fleet(Path(base), args.servers, args.faults,
                                                              slow_s=args.slow_s) as fleet:  # fmt: skip
        service = psutil.Process(fleet.process.pid)
        start, cpu0, before = time.monotonic(), service.cpu_times(), fleet.stats()
        ever: set[str] = set()
        complete_at: float | None = None
        polls: list[dict[str, float]] = []
        while time.monotonic() - start < args.seconds:
            status, raw = http(f"{fleet.service}api/rows", ADMIN_TOKEN)
            data = json.loads(raw) if status == 200 else {}
            seen = healthy_seen(data, healthy)
            ever |= seen
            if complete_at is None and len(seen) == len(healthy):
                complete_at = time.monotonic() - start
            if isinstance(data.get("poll"), dict) and data["poll"] not in polls:
                polls.append(data["poll"])
            time.sleep(2)
        window = time.monotonic() - start
        cpu1, after = service.cpu_times(), fleet.stats()
        rss = service.memory_info().rss
        asked = sum(after.get(k, 0) - before.get(k, 0) for k in after if not k.startswith(("hub_api", "stops:")))
        lists = max(1, after.get("hub_api", 0) - before.get("hub_api", 0))
        page = http(fleet.service, ADMIN_TOKEN)[1]
        t0 = time.perf_counter()
        metrics = http(f"{fleet.service}metrics", ADMIN_TOKEN)[1]
        metrics_ms = 1000 * (time.perf_counter() - t0)
        rows = http(f"{fleet.service}api/rows", ADMIN_TOKEN)[1]
    cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    print(f"servers {args.servers} ({len(healthy)} healthy; faults {args.faults}), window {window:.0f} s")
    print(
        "every healthy user shown: "
        + (f"after {complete_at:.0f} s" if complete_at is not None else f"never; {len(ever)} of {len(healthy)} ever")
    )
    if polls:
        durations = sorted(p["duration_s"] for p in polls)
        print(
            f"polls seen {len(polls)}: duration median {durations[len(durations) // 2]:.2f} s, "
            f"max {durations[-1]:.2f} s"
        )
    print(f"service CPU {cpu:.1f} s over {lists} polls: {cpu / lists:.2f} s per poll")
    print(f"requests to servers (through the proxy): {asked / window:.0f} per s")
    print(f"page {len(page) / 1e3:.0f} KB, JSON {len(rows) / 1e3:.0f} KB, metrics {len(metrics) / 1e3:.0f} KB "
          f"in {metrics_ms:.0f} ms, service RSS {rss / 2**20:.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
