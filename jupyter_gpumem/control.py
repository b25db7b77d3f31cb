"""The kernel's GPU memory policy: recorded, applied to the framework at the right moment, reported.

Order of events a user meets:
- %gpumem before the framework is imported: the policy is recorded, the variables the framework reads
  at import are set, and an import hook applies the rest the moment `import tensorflow` completes.
- imported but not initialised: applied at once.
- initialised: nothing changes; the user is told what is in force and how to get what they asked.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .budget import Reading, reading
from .config import GpumemConfig
from .frameworks import ADAPTERS, Adapter
from .model import Device, Snapshot
from .overhead import Calibration, Overhead, estimate
from .plan import Ceiling, Plan, make_plan
from .policy import Policy, PolicyError
from .snapshot import take_snapshot
from .units import format_bytes, format_percent


@dataclass(frozen=True)
class Applied:
    plan: Plan
    framework: str
    at: float


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a callback right after a module's own code has run, i.e. when `import x` completes.

    Finding has no side effects (importlib.util.find_spec may ask at any time); only a real import,
    which executes the module, fires the callback and removes the hook."""

    def __init__(self, module: str, callback: Callable[[], None]):
        self.module = module
        self.callback = callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.module:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec: importlib.machinery.ModuleSpec | None = (
                find(fullname, path, target) if finder is not self and find else None
            )
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenLoader(spec.loader, self._loaded)
                return spec
        return None

    def _loaded(self) -> None:
        self.remove()
        self.callback()

    def install(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class _ThenLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, then: Callable[[], None]):
        self._loader = loader
        self._then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then()


class Controller:
    def __init__(self, config: GpumemConfig):
        self.config = config
        self.recorded = Policy()
        self.applied: Applied | None = None
        self.ceiling, self.problems = config.ceiling()
        self.calibration = Calibration()
        self._adapters: dict[str, Adapter] = {}
        self._hook: _AfterImport | None = None
        self._saved_env: dict[str, str | None] = {}

    # ------------------------------------------------------------------ requests from the magic

    def load_defaults(self) -> list[str]:
        """Apply the configured defaults (at extension load); lines to show."""
        defaults, problems = self.config.defaults()
        lines = [*self.problems, *problems]
        # With only a ceiling configured, the ceiling itself becomes each kernel's budget (make_plan).
        if not defaults.is_empty or self.ceiling != Ceiling():
            try:
                lines.extend(self.request(defaults, source="configured defaults"))
            except PolicyError as error:
                lines.append(f"The configured defaults were not applied: {error}")
        return lines

    def request(self, asked: Policy, source: str = "%gpumem") -> list[str]:
        """Record and, when possible, apply ``asked`` on top of the current policy; lines to show.
        Raises PolicyError (the sentence) when it cannot hold here; then nothing has changed."""
        policy = self.recorded.then(asked)
        if self.applied and policy == self.applied.plan.policy:
            return [f"jupyter-gpumem: {policy.describe()} is already in force; nothing to do."]
        adapter = self.adapter()
        plan = self._plan(policy, take_snapshot())
        if adapter.imported() and adapter.initialised():
            return self._too_late(adapter, policy)
        self.recorded = policy
        self._set_environment(adapter.environment(plan))
        if adapter.imported():
            return self._apply(adapter, plan)
        if adapter.importable():
            when = (
                f"{adapter.name} is not imported yet; "
                f"the settings apply the moment `import {adapter.module}` completes."
            )
        else:
            when = (
                f"{adapter.name} is not installed in this kernel's environment; the GPU selection "
                "(CUDA_VISIBLE_DEVICES) holds for whatever starts CUDA next."
            )
        self._watch_import(adapter)
        return [
            *self.cache_problem(),
            f"jupyter-gpumem: {policy.describe()} recorded ({source}). {when}",
            *_plan_lines(plan),
        ]

    def reset(self) -> list[str]:
        if self.applied:
            return [
                f"The policy {self.applied.plan.policy.describe()} is already applied to "
                f"{self.applied.framework}, which keeps it until the kernel restarts. Nothing was changed."
            ]
        if self.recorded.is_empty:
            return ["jupyter-gpumem: no policy is recorded; nothing to forget."]
        forgotten = self.recorded.describe()
        self.recorded = Policy()
        if self._hook:
            self._hook.remove()
            self._hook = None
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}
        return [f"jupyter-gpumem: forgot {forgotten}; the framework's own defaults apply."]

    @property
    def has_policy(self) -> bool:
        return self.applied is not None or not self.recorded.is_empty or self.ceiling != Ceiling()

    def current_plan(self, snapshot: Snapshot) -> Plan | None:
        """The plan in force, else the one the recorded policy would make on this snapshot; None without
        a policy or when it cannot hold here (say, its GPU was lost)."""
        if self.applied:
            return self.applied.plan
        if not self.has_policy:
            return None
        try:
            return self._plan(self.recorded, snapshot)
        except PolicyError:
            return None

    def read(self, snapshot: Snapshot) -> Reading:
        """This kernel's memory on every GPU against its plan. Where the framework has started and tells
        its pool, the overhead outside the pool is measured (and remembered for the next kernel)."""
        plan = self.current_plan(snapshot)
        adapter = self.adapter()
        imported = adapter.imported()
        started = imported and adapter.initialised()
        allocators = {}
        if started:
            uuids = _framework_uuids(plan, snapshot)
            allocators = dict(zip(uuids, adapter.memory_in_use(), strict=False))
            pools = {uuid: a.pool for uuid, a in allocators.items() if a.pool is not None}
            self.calibration.observe(snapshot, pools, adapter.name, adapter.version())
        framework = adapter.name if imported or plan is not None else None
        return reading(
            snapshot,
            plan,
            framework,
            started=started,
            in_force=self.applied is not None,
            allocators=allocators,
            measured=self.calibration.measured,
        )

    def framework_uuids(self, reading: Reading) -> list[str]:
        """The framework's GPUs by NVML uuid, in the framework's order (its GPU:i is the i-th)."""
        return _framework_uuids(reading.plan, reading.snapshot)

    @property
    def growth(self) -> bool | None:
        """The policy's growth setting (None: the framework's default)."""
        return (self.applied.plan.policy if self.applied else self.recorded).growth

    def cache_problem(self) -> list[str]:
        """The overhead cache's one warning line, the first time it is asked for; then nothing."""
        problem, self.calibration.problem = self.calibration.problem, None
        return [problem] if problem else []

    def status_lines(self, reading: Reading | None = None) -> list[str]:
        """The policy and its plan; with a reading, how this kernel's memory splits against it now."""
        now = _now_lines(reading) if reading else []
        if self.applied:
            applied = self.applied
            when = time.strftime("%H:%M:%S", time.localtime(applied.at))
            lines = [f"Policy: {applied.plan.policy.describe()}, in force in {applied.framework} since {when}."]
            return [*self.cache_problem(), *lines, *_plan_lines(applied.plan), *now]
        if self.recorded.is_empty and self.ceiling != Ceiling():
            return [
                f"Policy: none set; this server's ceiling ({self.ceiling.describe()}) is the budget, "
                "applied when the framework is imported."
            ]
        if self.recorded.is_empty:
            return ["Policy: none set; a framework takes its defaults (TensorFlow: nearly all of every GPU)."]
        return [
            *self.cache_problem(),
            f"Policy: {self.recorded.describe()}, recorded and waiting for the framework's import.",
            *now,
        ]

    # ------------------------------------------------------------------ internals

    def adapter(self) -> Adapter:
        # framework=auto: the one imported, else the one importable (TensorFlow is the only one so far).
        name = "tensorflow"
        if name not in self._adapters:
            self._adapters[name] = ADAPTERS[name]()
        return self._adapters[name]

    def _plan(self, policy: Policy, snapshot: Snapshot) -> Plan:
        """The plan for ``policy`` on this snapshot, setting aside on each GPU what an earlier kernel
        measured there (same GPU model, driver and framework version), else the estimate."""
        adapter = self.adapter()
        version = adapter.version()

        def overhead(device: Device) -> Overhead:
            remembered = self.calibration.planned(device, snapshot.driver_version, adapter.name, version)
            return remembered or estimate(device, adapter.name, adapter.library_bytes)

        return make_plan(policy, snapshot, overhead, self.ceiling)

    def _set_environment(self, env: dict[str, str]) -> None:
        for key, value in env.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _watch_import(self, adapter: Adapter) -> None:
        if self._hook is None:
            self._hook = _AfterImport(adapter.module, self._on_import)
            self._hook.install()

    def _on_import(self) -> None:
        self._hook = None
        adapter = self.adapter()
        try:
            plan = self._plan(self.recorded, take_snapshot())
            print("\n".join(self._apply(adapter, plan)))
        except Exception as error:  # never break the user's import
            print(
                f"jupyter-gpumem could not apply {self.recorded.describe()} to {adapter.name} "
                f"({type(error).__name__}: {error}). {adapter.name} runs with its defaults.",
                file=sys.stderr,
            )

    def _apply(self, adapter: Adapter, plan: Plan) -> list[str]:
        notes = adapter.apply(plan)
        self.applied = Applied(plan, adapter.name, time.time())
        return [
            *self.cache_problem(),
            f"jupyter-gpumem: applied {plan.policy.describe()} to {adapter.name}.",
            *_plan_lines(plan),
            *notes,
        ]

    def _too_late(self, adapter: Adapter, policy: Policy) -> list[str]:
        return [
            f"Too late: {adapter.name} has already started in this kernel and fixes its GPU memory and thread "
            f"settings when it starts, so {policy.describe()} cannot take effect. Nothing was changed.",
            *("  In force: " + line for line in adapter.in_force()),
            f"  To get it: restart the kernel, then run %gpumem {policy.describe()} before any {adapter.name} code.",
        ]


def _plan_lines(plan: Plan) -> list[str]:
    policy = plan.policy
    lines = []
    if plan.no_gpu:
        lines.append(f"  No GPU: {plan.no_gpu} Thread settings still apply.")
    for gpu in plan.gpus:
        head = f"  GPU {gpu.index} {gpu.name}:"
        if gpu.budget_bytes is None:
            grows = "grows on demand" if policy.growth else "no budget set: the framework takes nearly all of it"
            lines.append(f"{head} {grows}")
        elif policy.strict:
            lines.append(
                f"{head} budget {format_bytes(gpu.budget_bytes)} ({format_percent(gpu.budget_bytes, gpu.total_bytes)}"
                f" of {format_bytes(gpu.total_bytes)}) as nvidia-smi counts it = allocator limit "
                f"{format_bytes(gpu.allocator_limit_bytes)} + about {format_bytes(gpu.overhead_bytes)} "
                f"CUDA context and libraries ({gpu.overhead.describe()})"
                + (", growing on demand up to the limit" if policy.growth else "")
            )
        else:
            lines.append(
                f"{head} allocator limit {format_bytes(gpu.allocator_limit_bytes)} "
                f"({format_percent(gpu.allocator_limit_bytes, gpu.total_bytes)} of {format_bytes(gpu.total_bytes)}); "
                f"strict=off, so nvidia-smi will show about {format_bytes(gpu.overhead_bytes)} more"
            )
    for device in plan.hidden:
        lines.append(f"  GPU {device.index} {device.name or ''}: hidden from this kernel")
    if policy.intra_threads is not None or policy.inter_threads is not None:
        lines.append(
            f"  CPU threads: intra-op {policy.intra_threads or 'default'}, inter-op {policy.inter_threads or 'default'}"
        )
    return lines


def _framework_uuids(plan: Plan | None, snapshot: Snapshot) -> list[str]:
    if plan is not None and plan.cuda_visible_devices is not None:
        return [g.uuid for g in plan.gpus]  # CUDA_VISIBLE_DEVICES (or set_visible_devices): just these, in order
    return [d.uuid or "" for d in snapshot.devices]


def _now_lines(reading: Reading) -> list[str]:
    lines = []
    for device in reading.snapshot.devices:
        split = reading.breakdowns.get(device.uuid or "")
        if split is None or split.budget_bytes is None or split.own_bytes is None or not device.holds_self:
            continue
        line = (
            f"  Now on GPU {device.index}: {format_bytes(split.own_bytes)} as nvidia-smi counts it, "
            f"{format_percent(split.own_bytes, split.budget_bytes)} of the {format_bytes(split.budget_bytes)} budget"
        )
        if split.pool_known and split.pool_bytes is not None and split.overhead is not None:
            line += (
                f" = {reading.framework} pool {format_bytes(split.pool_bytes)} + "
                f"{format_bytes(split.own_bytes - split.pool_bytes)} outside it ({split.overhead.describe()})"
            )
        if split.reason:
            line += f"; {format_bytes(split.over_bytes)} over: {split.reason}. %gpumem explain says what to change"
        lines.append(line + ".")
    return lines


_controller: Controller | None = None


def controller(shell: Any = None) -> Controller:
    """This kernel's one Controller, made on first use (configuration read from the shell's config)."""
    global _controller
    if _controller is None:
        _controller = Controller(GpumemConfig(parent=shell))
    return _controller
