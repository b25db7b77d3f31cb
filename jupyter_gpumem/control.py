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
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from .budget import Reading, reading
from .config import GpumemConfig
from .frameworks import ADAPTERS, Adapter
from .frameworks.base import Allocator
from .model import Device, Snapshot
from .overhead import Calibration, Overhead, estimate
from .plan import Ceiling, Plan, make_plan
from .policy import Policy, PolicyError
from .snapshot import take_snapshot
from .units import format_bytes, format_percent


@dataclass(frozen=True)
class Applied:
    plan: Plan
    adapters: tuple[Adapter, ...]  # the frameworks it is applied to
    at: float

    @property
    def framework(self) -> str:
        return label(self.adapters)[0]


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
        self._hooks: dict[str, _AfterImport] = {}  # module -> its import hook
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
        adapters = self.targets(policy)
        together = all(a.imported() for a in adapters)  # several imported: they share the budget
        plan = self._plan(policy, take_snapshot(), adapters if together else adapters[:1])
        late = [reason for a in adapters if (reason := a.too_late(plan))]
        if late:
            return self._too_late(adapters, policy, late)
        self.recorded = policy
        if together:
            return self._apply(adapters, plan)
        for adapter in adapters:
            self._set_environment(adapter.environment(plan))
            self._watch_import(adapter)
        if len(adapters) > 1:
            imports = ", ".join(f"`import {a.module}`" for a in adapters)
            when = (
                f"None of {label(adapters)[0]} is imported yet; the settings apply to whichever is imported, "
                f"the moment its import completes ({imports})."
            )
        elif adapters[0].importable():
            adapter = adapters[0]
            when = (
                f"{adapter.name} is not imported yet; "
                f"the settings apply the moment `import {adapter.module}` completes."
            )
        else:
            missing = (
                adapters[0].name if policy.framework != "auto" else "No supported framework (TensorFlow, PyTorch, JAX)"
            )
            when = (
                f"{missing} is not installed in this kernel's environment; the GPU selection "
                "(CUDA_VISIBLE_DEVICES) holds for whatever starts CUDA next."
            )
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
        for hook in self._hooks.values():
            hook.remove()
        self._hooks = {}
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
        adapters = self.active()
        imported = [a for a in adapters if a.imported()]
        started = [a for a in imported if a.initialised()]
        allocators: dict[str, Allocator] = {}
        if started:
            uuids = _framework_uuids(plan, snapshot)
            for adapter in started:
                for uuid, allocator in zip(uuids, adapter.memory_in_use(), strict=False):
                    allocators[uuid] = _add(allocators.get(uuid), allocator)
            pools = {uuid: a.pool for uuid, a in allocators.items() if a.pool is not None}
            self.calibration.observe(snapshot, pools, *label(started))
        if imported or (plan is not None and len(adapters) == 1):
            framework: str | None = label(imported or adapters)[0]
        else:
            framework = None  # nothing imported, and no policy, or several frameworks it may go to
        return reading(
            snapshot,
            plan,
            framework,
            started=bool(started),
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
            return [f"Policy: none set, so {self.defaults()}."]
        return [
            *self.cache_problem(),
            f"Policy: {self.recorded.describe()}, recorded and waiting for the framework's import.",
            *now,
        ]

    # ------------------------------------------------------------------ internals

    def targets(self, policy: Policy) -> list[Adapter]:
        """The frameworks ``policy`` is for. framework=<name>: that one. auto: the supported frameworks
        imported in this kernel, else those installed (each gets it when imported), else TensorFlow."""
        if policy.framework != "auto":
            return [self._adapter(policy.framework)]
        every = [self._adapter(name) for name in ADAPTERS]
        imported = [a for a in every if a.imported()]
        if len(imported) > 1:
            # One framework may import another (TensorFlow imports JAX when it is installed): count
            # those the notebook refers to, or that have started.
            imported = [a for a in imported if a.initialised() or _referenced(a.module)] or imported
        return imported or [a for a in every if a.importable()] or every[:1]

    def active(self) -> list[Adapter]:
        """The frameworks the policy is applied to, else those it is for."""
        return list(self.applied.adapters) if self.applied else self.targets(self.recorded)

    def framework(self) -> str:
        """The frameworks the policy is for, for people: "TensorFlow"; "TensorFlow and PyTorch" (both
        imported); "TensorFlow, PyTorch or JAX" (installed: whichever is imported)."""
        active = self.active()
        return label(active, "and" if all(a.imported() for a in active) else "or")[0]

    def defaults(self) -> str:
        """What the framework(s) take without a policy: "TensorFlow takes nearly all ..."."""
        active = self.active()
        if len(active) == 1:
            return f"{active[0].name} {active[0].takes}"
        return "each framework takes its default when it starts: " + "; ".join(f"{a.name} {a.takes}" for a in active)

    def _adapter(self, name: str) -> Adapter:
        if name not in self._adapters:
            self._adapters[name] = ADAPTERS[name]()
        return self._adapters[name]

    def _plan(self, policy: Policy, snapshot: Snapshot, adapters: list[Adapter] | None = None) -> Plan:
        """The plan for ``policy`` on this snapshot, setting aside on each GPU what an earlier kernel
        measured there (same GPU model, driver and framework versions), else the estimate: the CUDA
        context once, and each framework's libraries."""
        if adapters is None:
            active = self.active()
            adapters = active if all(a.imported() for a in active) else active[:1]
        name, version = label(adapters)
        library_bytes = sum(a.library_bytes for a in adapters)

        def overhead(device: Device) -> Overhead:
            remembered = self.calibration.planned(device, snapshot.driver_version, name, version)
            return remembered or estimate(device, name, library_bytes)

        return make_plan(policy, snapshot, overhead, self.ceiling)

    def _set_environment(self, env: dict[str, str]) -> None:
        for key, value in env.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _watch_import(self, adapter: Adapter) -> None:
        if adapter.module not in self._hooks:
            self._hooks[adapter.module] = hook = _AfterImport(adapter.module, lambda: self._on_import(adapter))
            hook.install()

    def _on_import(self, adapter: Adapter) -> None:
        self._hooks.pop(adapter.module, None)
        others = [self._adapter(name) for name in ADAPTERS if self._adapter(name) is not adapter]
        if self.recorded.framework == "auto" and any(_importing(other.module) for other in others):
            return  # imported by another framework's import, not by the notebook; its environment is set
        try:
            if self.applied is None:
                lines = self._apply([adapter], self._plan(self.recorded, take_snapshot(), [adapter]))
            else:
                lines = self._apply_too(adapter, self.applied)
            print("\n".join(lines))
        except Exception as error:  # never break the user's import
            print(
                f"jupyter-gpumem could not apply {self.recorded.describe()} to {adapter.name} "
                f"({type(error).__name__}: {error}). {adapter.name} runs with its defaults.",
                file=sys.stderr,
            )

    def _apply(self, adapters: list[Adapter], plan: Plan) -> list[str]:
        """Apply ``plan`` to each of ``adapters``: with several, they share each GPU's allocator limit."""
        share = _shared(plan, len(adapters))
        notes = []
        for adapter in adapters:
            self._set_environment(adapter.environment(share))
            notes.extend(adapter.apply(share))
        self.applied = Applied(plan, tuple(adapters), time.time())
        lines = [
            *self.cache_problem(),
            f"jupyter-gpumem: applied {plan.policy.describe()} to {self.applied.framework}.",
            *_plan_lines(plan),
        ]
        if len(adapters) > 1:
            limits = [format_bytes(g.allocator_limit_bytes) for g in share.gpus if g.allocator_limit_bytes]
            each = f" ({', '.join(limits)} each, per GPU)" if limits else ""
            lines.append(
                f"  {self.applied.framework} are all imported in this kernel, so the policy applies to each, "
                f"and they share each GPU's allocator limit equally{each}."
            )
        return [*lines, *notes]

    def _apply_too(self, adapter: Adapter, applied: Applied) -> list[str]:
        """A second framework imported after the policy went to the first: it gets the same plan."""
        self._set_environment(adapter.environment(applied.plan))
        notes = adapter.apply(applied.plan)
        earlier = applied.framework
        self.applied = Applied(applied.plan, (*applied.adapters, adapter), applied.at)
        return [
            f"jupyter-gpumem: applied {applied.plan.policy.describe()} to {adapter.name} too. {earlier} already "
            f"has this budget on the same GPUs, so together they may use up to {len(self.applied.adapters)} times "
            "it. To share one budget, restart the kernel and import them all before running %gpumem.",
            *notes,
        ]

    def _too_late(self, adapters: list[Adapter], policy: Policy, reasons: list[str]) -> list[str]:
        name = label(adapters)[0]
        return [
            f"Too late: {'; '.join(reasons)}, so {policy.describe()} cannot take effect. Nothing was changed.",
            *("  In force: " + line for a in adapters if a.imported() for line in a.in_force()),
            f"  To get it: restart the kernel, then run %gpumem {policy.describe()} before any {name} code.",
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


def label(adapters: list[Adapter] | tuple[Adapter, ...], joiner: str = "and") -> tuple[str, str | None]:
    """The frameworks' names and versions, for people and for the overhead cache: ("TensorFlow",
    "2.20.0"); ("TensorFlow and PyTorch", "2.20.0+2.13.0")."""
    names = [a.name for a in adapters]
    name = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {joiner} {names[-1]}"
    versions = [a.version() for a in adapters]
    version = versions[0] if len(versions) == 1 else "+".join(v or "unknown" for v in versions)
    return name, version


def _importing(module: str) -> bool:
    """The module's own code is running now (its import has not completed)."""
    spec = getattr(sys.modules.get(module), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _referenced(module: str) -> bool:
    """The notebook's namespace holds the module, one of its submodules, or something defined in it."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return True  # not in IPython: nothing to tell by
    prefix = module + "."
    for value in list(shell.user_ns.values()):
        try:
            name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
            if isinstance(name, str) and (name == module or name.startswith(prefix)):
                return True
        except Exception:  # a user's object may raise anything from its attributes
            continue
    return False


def _shared(plan: Plan, ways: int) -> Plan:
    """``plan`` with each GPU's allocator limit split ``ways`` ways."""
    if ways == 1:
        return plan
    gpus = tuple(
        replace(g, allocator_limit_bytes=g.allocator_limit_bytes // ways if g.allocator_limit_bytes else None)
        for g in plan.gpus
    )
    return replace(plan, gpus=gpus)


def _add(total: Allocator | None, more: Allocator) -> Allocator:
    """Two frameworks' allocators on one GPU, together."""
    if total is None:
        return more
    pool = total.pool + more.pool if total.pool is not None and more.pool is not None else None
    return Allocator(total.in_use + more.in_use, total.peak + more.peak, pool)


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
