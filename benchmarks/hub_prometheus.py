"""The hub service reading Prometheus (``JUPYTER_GPUMEM_HUB_PROMETHEUS_URL``) in front of a simulated fleet
(tests/hub/fleet.py, as in benchmarks/hub_scale.py), with Debian's prometheus configured by the shipped
prometheus.yml scraping every server from the targets the service writes (file_sd).

    python benchmarks/hub_prometheus.py --servers 1000 [--seconds 40] [--scrape-s 5]

Prints: when every healthy user was first on the page (from Prometheus's start), the service's reads from
Prometheus (duration, CPU per read), the JSON's bytes, the service's and Prometheus's memory (RSS) and CPU
over the window, and the scrapes per second the servers get. About ``--seconds`` + 15 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "hub")]

from fleet import ADMIN_TOKEN, kinds, parse_faults  # noqa: E402
from hub_fixtures import running_fleet  # noqa: E402
from server_fixtures import free_port, http, stop  # noqa: E402
from test_prometheus import configured  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--faults", default="hung=30,slow=10,404=5,502=5,malformed=5")
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--scrape-s", type=int, default=5)
    args = parser.parse_args()
    healthy = {u for u, k in kinds(args.servers, parse_faults(args.faults)) if k == "healthy"}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        port = free_port()
        env = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": f"http://127.0.0.1:{port}",
               "JUPYTER_GPUMEM_HUB_FILE_SD": str(base / "targets.json")}  # fmt: skip
        with running_fleet(base / "fleet", args.servers, args.faults, env) as fleet:
            config = configured(base, "prometheus.yml", base / "targets.json", interval=f"{args.scrape_s}s")
            config.write_text(config.read_text().replace("scrape_timeout: 10s", f"scrape_timeout: {args.scrape_s}s"))
            start = time.monotonic()
            prometheus = subprocess.Popen(
                ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={base / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                service, prom = psutil.Process(fleet.process.pid), psutil.Process(prometheus.pid)
                cpu0 = (sum(service.cpu_times()[:2]), sum(prom.cpu_times()[:2]))
                scrapes0 = sum(v for k, v in fleet.stats().items() if not k.startswith(("hub", "stops:")))
                all_at, seen, reads, data, size = None, 0, set(), {}, 0
                while time.monotonic() - start < args.seconds:
                    time.sleep(1)
                    body = http(f"{fleet.service}api/rows", ADMIN_TOKEN)[1]
                    data = json.loads(body)
                    shown = {r["user"] for r in data["rows"] if r["kernel_id"] and not r["problem"]} & healthy
                    seen = len(shown)
                    if all_at is None and seen == len(healthy):
                        all_at = time.monotonic() - start
                    if data["poll"] and data["source"]["problem"] is None:
                        reads.add((data["poll"]["t"], data["poll"]["duration_s"], data["poll"]["cpu_s"]))
                    size = len(body)
                window = time.monotonic() - start
                cpu = (sum(service.cpu_times()[:2]) - cpu0[0], sum(prom.cpu_times()[:2]) - cpu0[1])
                scrapes = sum(v for k, v in fleet.stats().items() if not k.startswith(("hub", "stops:"))) - scrapes0
                durations = sorted(d for _, d, _ in reads)
                rss = (service.memory_info().rss >> 20, prom.memory_info().rss >> 20)
                print(f"servers {args.servers}, healthy {len(healthy)}, scrape every {args.scrape_s} s")
                print(f"all healthy users shown after {all_at:.1f} s" if all_at else f"{seen} healthy users shown")
                if durations:
                    median, per_read = durations[len(durations) // 2], sum(c for *_, c in reads) / len(reads)
                    print(f"reads from Prometheus: {len(reads)}, duration median {median:.2f} s, "
                          f"max {durations[-1]:.2f} s, CPU per read {per_read:.2f} s")  # fmt: skip
                print(f"JSON {size / 1e3:.0f} KB; service CPU {cpu[0]:.1f} s, RSS {rss[0]} MiB; "
                      f"prometheus CPU {cpu[1]:.1f} s, RSS {rss[1]} MiB; over {window:.0f} s")  # fmt: skip
                print(f"requests to servers (Prometheus's scrapes): {scrapes / window:.0f} /s")
            finally:
                stop(prometheus)


if __name__ == "__main__":
    main()
