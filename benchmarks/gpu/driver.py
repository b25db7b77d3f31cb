"""Issue 44, Must 6: what the driver answers, read only (no MIG setting, no limit set, nothing reset), and the
stand-in scenario lines (docs/standin-nvml.md) that make jupyter_gpumem/standin/nvml.c answer the same."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from gpu.common import CANNOT_RUN, Deadline, Section, mib, run_case

CODES = {  # pynvml's error classes -> the stand-in's fail= codes
    "NVMLError_NotSupported": "not_supported",
    "NVMLError_NoPermission": "no_permission",
    "NVMLError_GpuIsLost": "gpu_lost",
    "NVMLError_FunctionNotFound": "function_not_found",
}
ADDRESSING = {0: "none", 1: "hmm", 2: "ats"}


def _answer(call: Any, *args: Any) -> tuple[Any, str | None]:
    """The call's value, or None and the error's class name."""
    import pynvml

    if call is None:
        return None, "binding lacks it"
    try:
        return call(*args), None
    except pynvml.NVMLError as error:
        return None, type(error).__name__


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def case() -> dict[str, Any]:
    """In a fresh process: every answer, as data."""
    import pynvml

    from jupyter_gpumem.gpu import cgroup

    try:
        binding = importlib.metadata.version("nvidia-ml-py")
    except importlib.metadata.PackageNotFoundError:
        binding = None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        return {"error": f"no NVIDIA driver answers here (NVML did not start: {type(error).__name__})"}
    found = cgroup.chain()
    paths = list(found.paths) if isinstance(found, cgroup.Chain) else []
    answers: dict[str, Any] = {
        "binding": binding,
        "driver": _text(_answer(pynvml.nvmlSystemGetDriverVersion)[0]),
        "cuda": _answer(pynvml.nvmlSystemGetCudaDriverVersion_v2)[0],
        "nvml": _text(_answer(pynvml.nvmlSystemGetNVMLVersion)[0]),
        "cgroup": paths[0] if paths else None,
        "cgroup_problem": None if paths else str(getattr(found, "code", found)),
        "gpus": [],
    }
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        memory, memory_error = _answer(pynvml.nvmlDeviceGetMemoryInfo, handle)
        capability = _answer(pynvml.nvmlDeviceGetCudaComputeCapability, handle)[0]
        mig, mig_error = _answer(pynvml.nvmlDeviceGetMigMode, handle)
        mode, mode_error = _answer(getattr(pynvml, "nvmlDeviceGetAddressingMode", None), handle)
        gpu: dict[str, Any] = {
            "index": index,
            "name": _text(_answer(pynvml.nvmlDeviceGetName, handle)[0]),
            "uuid": _text(_answer(pynvml.nvmlDeviceGetUUID, handle)[0]),
            "total": memory.total if memory else None,
            "used": memory.used if memory else None,
            "memory_error": memory_error,
            "cc": f"{capability[0]}.{capability[1]}" if capability else None,
            "mig": None if mig is None else {"current": mig[0], "pending": mig[1]},
            "mig_error": mig_error,
            "addressing": ADDRESSING.get(mode, mode) if mode is not None else None,
            "addressing_error": mode_error,
            "limits": [],
            "slices": [],
        }
        get = getattr(pynvml, "nvmlDeviceGetMemoryLimits_v1", None)
        for path in paths if get is not None else []:  # the session's own cgroup and every ancestor, read only
            limits = pynvml.c_nvmlGetMemoryLimits_v1_t()
            limits.nameSpace = found.directory(path).encode()  # type: ignore[union-attr]
            _, error = _answer(get, handle, limits)
            gpu["limits"].append(
                {"cgroup": path, "error": error}
                if error
                else {"cgroup": path, "soft": limits.softLimit, "hard": limits.hardLimit, "used": limits.currentUsed}
            )
        if get is None:
            gpu["limits_error"] = "binding lacks nvmlDeviceGetMemoryLimits_v1"
        if mig and mig[0] == pynvml.NVML_DEVICE_MIG_ENABLE:
            for slot in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
                part, error = _answer(pynvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, slot)
                if part is None:
                    continue
                part_memory = _answer(pynvml.nvmlDeviceGetMemoryInfo, part)[0]
                gpu["slices"].append(
                    {
                        "name": _text(_answer(pynvml.nvmlDeviceGetName, part)[0]),
                        "uuid": _text(_answer(pynvml.nvmlDeviceGetUUID, part)[0]),
                        "total": part_memory.total if part_memory else None,
                        "used": part_memory.used if part_memory else None,
                        "gi": _answer(pynvml.nvmlDeviceGetGpuInstanceId, part)[0],
                        "ci": _answer(pynvml.nvmlDeviceGetComputeInstanceId, part)[0],
                    }
                )
        answers["gpus"].append(gpu)
    pynvml.nvmlShutdown()
    return answers


def scenario(answers: dict[str, Any]) -> list[str]:
    """The stand-in's scenario lines that answer as this driver did (docs/standin-nvml.md's format)."""
    import pynvml

    def quoted(text: str | None) -> str:
        return '"' + (text or "").replace('"', '\\"') + '"'

    driver = f"driver version={answers['driver']}"
    lines = [driver + (f" cuda={answers['cuda']}" if answers["cuda"] else "")]
    for gpu in answers["gpus"]:
        fails = []
        if gpu["mig_error"] == "NVMLError_NotSupported":
            mig = "unsupported"
        else:
            mig = "on" if gpu["mig"] and gpu["mig"]["current"] else "off"
            if gpu["mig_error"] in CODES:
                fails.append(f"mig:{CODES[gpu['mig_error']]}")
        if gpu["memory_error"] in CODES:
            fails.append(f"memory:{CODES[gpu['memory_error']]}")
        if gpu["addressing_error"] in CODES and gpu["addressing_error"] != "NVMLError_FunctionNotFound":
            fails.append(f"addressing:{CODES[gpu['addressing_error']]}")  # older than 580: the version says it
        refused = {e["error"] for e in gpu["limits"] if e.get("error")}
        for error in refused & set(CODES) - {"NVMLError_FunctionNotFound"}:
            fails.append(f"limits:{CODES[error]}")
        words = [f"gpu name={quoted(gpu['name'])}", f"uuid={gpu['uuid']}"]
        words += [f"total={gpu['total']}", f"used={gpu['used']}"] if gpu["total"] is not None else []
        words += [f"cc={gpu['cc']}"] if gpu["cc"] else []
        words += [f"mig={mig}", f"addressing={gpu['addressing'] or 'none'}"]
        words += [f"fail={','.join(sorted(fails))}"] if fails else []
        lines.append(" ".join(words))
        for part in gpu["slices"]:
            lines.append(
                f"mig parent={gpu['index']} name={quoted(part['name'])} uuid={part['uuid']} total={part['total']} "
                f"used={part['used']} gi={part['gi']} ci={part['ci']}"
            )
        for limit in gpu["limits"]:
            if "hard" in limit and (limit["soft"] or limit["hard"] < pynvml.NVML_DEVICE_MEMORY_LIMIT_MAX):
                hard = "max" if limit["hard"] >= pynvml.NVML_DEVICE_MEMORY_LIMIT_MAX else limit["hard"]
                lines.append(
                    f"limit gpu={gpu['index']} cgroup={limit['cgroup']} soft={limit['soft']} hard={hard} "
                    f"used={limit['used']}"
                )
    return lines


def _limits_word(gpu: dict[str, Any]) -> str:
    if gpu.get("limits_error"):
        return gpu["limits_error"]
    if not gpu["limits"]:
        return "not asked: no cgroup v2 path for this process"
    import pynvml

    words = []
    for limit in gpu["limits"]:
        if "error" in limit:
            words.append(f"{limit['cgroup']}: {limit['error']}")
        else:
            hard = "none" if limit["hard"] >= pynvml.NVML_DEVICE_MEMORY_LIMIT_MAX else mib(limit["hard"])
            words.append(f"{limit['cgroup']}: soft {mib(limit['soft'])}, hard {hard}, used {mib(limit['used'])}")
    return "; ".join(words)


def section(deadline: Deadline, simulated: str | None) -> Section:
    result = Section(
        "driver",
        "What the driver answers (issue 44, Must 6; read only)",
        [
            "GPU",
            "name",
            "memory MiB",
            "CC",
            "MIG (current/pending)",
            "addressing mode",
            "memory limits (own cgroup up)",
        ],
    )
    answers = run_case("driver", {}, deadline)
    if "error" in answers:
        return result.fail(CANNOT_RUN, f"The driver section read nothing: {answers['error']}.")
    result.data.append(answers)
    for gpu in answers["gpus"]:
        mig = f"{gpu['mig']['current']}/{gpu['mig']['pending']}" if gpu["mig"] else gpu["mig_error"]
        result.rows.append(
            [
                str(gpu["index"]),
                gpu["name"] or "N/A",
                mib(gpu["total"]) if gpu["total"] is not None else f"N/A ({gpu['memory_error']})",
                gpu["cc"] or "N/A",
                mig or "N/A",
                gpu["addressing"] or gpu["addressing_error"] or "N/A",
                _limits_word(gpu),
            ]
        )
        for part in gpu["slices"]:
            result.rows.append([f"{gpu['index']} gi {part['gi']} ci {part['ci']}", part["name"], mib(part["total"])])
    cgroup = answers["cgroup"] or f"none ({answers['cgroup_problem']})"
    result.notes.append(
        f"Driver {answers['driver']}, CUDA {answers['cuda']} (as NVML encodes it: 1000 x major + 10 x minor), "
        f"NVML {answers['nvml'] or 'N/A'}, nvidia-ml-py {answers['binding']}; this process's cgroup: {cgroup}."
    )
    if simulated:
        result.notes.append(f"Read from the stand-in NVML (scenario {simulated}), not a real driver.")
    result.notes.append("Stand-in scenario lines that answer the same (docs/standin-nvml.md):")
    result.notes.append("```\n" + "\n".join(scenario(answers)) + "\n```")
    return result
