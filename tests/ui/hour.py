"""Samples as the kernel streams them, made up for a browser page to receive (its channel's `receive`):
an A100 with this kernel at a 20 GiB budget and eleven other processes, and a hello replaying a history
of them, a second apart. For the chart's browser tests (an hour of history takes an hour to record from
a real kernel) and the sidebar's benchmarks."""

from __future__ import annotations

from typing import Any

MiB = 1024**2
GPU = "GPU-be0c0000-0000-4000-8000-000000000001"
TOTAL_MIB = 40960
BUDGET_MIB = 20480
OTHERS = [(7000 + i, 1000 + i * 100) for i in range(11)]
OTHERS_MIB = sum(mib for _, mib in OTHERS)


def sample(t: float, own_mib: int, processes: bool = True) -> dict[str, Any]:
    own = own_mib * MiB
    budget = BUDGET_MIB * MiB
    gpu: dict[str, Any] = {
        "index": 0,
        "uuid": GPU,
        "name": "NVIDIA A100-SXM4-40GB",
        "lost": False,
        "hidden": False,
        "total_bytes": TOTAL_MIB * MiB,
        "used_bytes": own + OTHERS_MIB * MiB,
        "own_bytes": own,
        "budget_bytes": budget,
        "in_force": True,
        "pool_bytes": budget - 500 * MiB,
        "pool_known": False,
        "overhead_bytes": 500 * MiB,
        "overhead_source": "estimated",
        "over_reason": f"CUDA context + cuDNN/cuBLAS: {own_mib - BUDGET_MIB + 500} MiB outside TensorFlow's limit"
        if own > budget
        else None,
        "framework_bytes": own - 600 * MiB,
        "framework_peak_bytes": own - 500 * MiB,
        "processes_known": True,
    }
    if processes:
        gpu["processes"] = [
            {"pid": 4242, "name": "python", "user": "alice", "used_bytes": own, "cpu_percent": 99.0, "self": True}
        ] + [
            {"pid": pid, "name": "python3", "user": "bob", "used_bytes": mib * MiB, "cpu_percent": 100.0, "self": False}
            for pid, mib in OTHERS
        ]
    return {
        "t": t,
        "problem": None,
        "simulated": None,
        "policy": "fraction=0.5",
        "policy_state": "in_force",
        "policy_note": "in force in TensorFlow",
        "framework": "TensorFlow",
        "framework_started": True,
        "takes": None,
        "gpus": [gpu],
    }


def hello(count: int, start: float) -> dict[str, Any]:
    history = [sample(start + i, 2000 + (i * 37) % 6000, processes=False) for i in range(count)]
    return {
        "protocol": 1,
        "type": "hello",
        "package_version": "benchmark",
        "interval_s": 1.0,
        "history_s": max(float(count), 10.0),
        "history": history,
    }


def message(s: dict[str, Any]) -> dict[str, Any]:
    return {"protocol": 1, "type": "sample", "sample": s}
