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

from .config import GpumemConfig
from .frameworks import ADAPTERS, Adapter
from .model import Snapshot
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
        plan = make_plan(policy, take_snapshot(), adapter.overhead_bytes, self.ceiling)
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
        return [f"jupyter-gpumem: {policy.describe()} recorded ({source}). {when}", *_plan_lines(plan)]

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
            return make_plan(self.recorded, snapshot, self.adapter().overhead_bytes, self.ceiling)
        except PolicyError:
            return None

    def status_lines(self) -> list[str]:
        if self.applied:
            applied = self.applied
            when = time.strftime("%H:%M:%S", time.localtime(applied.at))
            lines = [f"Policy: {applied.plan.policy.describe()}, in force in {applied.framework} since {when}."]
            return [*lines, *_plan_lines(applied.plan)]
        if self.recorded.is_empty and self.ceiling != Ceiling():
            return [
                f"Policy: none set; this server's ceiling ({self.ceiling.describe()}) is the budget, "
                "applied when the framework is imported."
            ]
        if self.recorded.is_empty:
            return ["Policy: none set; a framework takes its defaults (TensorFlow: nearly all of every GPU)."]
        return [f"Policy: {self.recorded.describe()}, recorded and waiting for the framework's import."]

    # ------------------------------------------------------------------ internals

    def adapter(self) -> Adapter:
        # framework=auto: the one imported, else the one importable (TensorFlow is the only one so far).
        return ADAPTERS["tensorflow"]()

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
            plan = make_plan(self.recorded, take_snapshot(), adapter.overhead_bytes, self.ceiling)
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
                "CUDA context and libraries (estimated)"
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


_controller: Controller | None = None


def controller(shell: Any = None) -> Controller:
    """This kernel's one Controller, made on first use (configuration read from the shell's config)."""
    global _controller
    if _controller is None:
        _controller = Controller(GpumemConfig(parent=shell))
    return _controller
