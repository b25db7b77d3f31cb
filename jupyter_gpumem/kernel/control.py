"""The kernel's GPU memory policy: recorded, applied to the frameworks at the right moment, published
as one immutable State.

Order of events a user meets:
- %gpumem before the framework is imported: the policy is recorded, the variables the framework reads
  at import are set, and the import watch applies the rest the moment `import tensorflow` completes.
- imported but not initialised: applied at once.
- initialised: nothing changes; the user is told what is in force and how to get what they asked.

Threads: every method but ``read`` runs on the main thread (the magic, the import of a framework) and
ends by publishing a new State (one reference, replaced whole). The sampler thread calls only
``read``, which uses the State it finds and never decides targets or plans (docs/architecture.md).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from IPython.display import display

from jupyter_gpumem.budget import limits
from jupyter_gpumem.budget.attribution import Matcher, listed, pid_stance
from jupyter_gpumem.budget.config import GpumemConfig
from jupyter_gpumem.budget.environ import EnvironmentChanges
from jupyter_gpumem.budget.framework_interface import Allocator, Framework, label
from jupyter_gpumem.budget.overhead import Calibration, Overhead, estimate
from jupyter_gpumem.budget.plan import Ceiling, Plan, make_plan, started_with
from jupyter_gpumem.budget.policy import Policy, PolicyError
from jupyter_gpumem.budget.privacy import Rule, this_user
from jupyter_gpumem.budget.reading import Reading, reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.frameworks import ADAPTERS, Adapter
from jupyter_gpumem.frameworks.choice import targets
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.gpu.snapshot import take_snapshot
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.kernel.importhook import ImportWatch, importing
from jupyter_gpumem.render import html, messages
from jupyter_gpumem.words import Said


class Controller:
    def __init__(
        self,
        config: GpumemConfig,
        *,
        problems: list[str] | None = None,
        adapters: Mapping[str, Adapter] | None = None,
        snapshot: Callable[..., Snapshot] | None = None,
        referenced: Callable[[str], bool] = lambda module: True,
        calibration: Calibration | None = None,
        environment: EnvironmentChanges | None = None,
    ):
        """``problems``: configuration sentences to show at load; ``adapters``: every supported framework
        (name -> adapter, in framework=auto's order); ``snapshot(cpu_window_s=0.0)``: reads NVML (and the
        host's process table: take_snapshot, waiting ``config.nvml_deadline_s`` at most); ``referenced(module)``:
        the notebook refers to that module (framework=auto with several imported)."""
        self.config = config
        self.ceiling, ceiling_problems = config.ceiling()
        level, privacy_problems = config.privacy_level()
        self.privacy = Rule(level, this_user())  # what every surface shows of other users' processes
        self.problems = [*(problems or []), *ceiling_problems, *privacy_problems]
        self.adapters = dict(adapters) if adapters is not None else {n: a() for n, a in ADAPTERS.items()}
        self.calibration = calibration or Calibration()
        self.matcher = Matcher()  # fed by read(): which listed process is this kernel's, in a container
        self.snapshot = snapshot or (lambda cpu_window_s=0.0: take_snapshot(cpu_window_s, config.nvml_deadline_s))
        self._referenced = referenced
        self._environment = environment or EnvironmentChanges()
        every = targets(Policy(), self.adapters, referenced)
        self.state = self._state(Policy(), None, every, all(a.imported() for a in every))  # load_defaults plans
        self._imports = ImportWatch(self._on_import)
        self._imports.watch(a.module for a in self.adapters.values())

    # ------------------------------------------------------------------ main thread: requests

    def load_defaults(self) -> list[str]:
        """Apply the configured defaults (at extension load); lines to show."""
        defaults, problems = self.config.defaults()
        lines = [*self.problems, *problems]
        # With only a ceiling configured, the ceiling itself becomes each kernel's budget (make_plan).
        if not defaults.is_empty or self.ceiling != Ceiling():
            try:
                lines.extend(self.request(defaults, source=_("configured defaults")))
            except PolicyError as error:
                lines.append(_("The configured defaults were not applied: {error}").format(error=error))
                if not defaults.is_empty and self.ceiling != Ceiling():
                    # The ceiling still binds this kernel: it is the budget, as when no default is configured.
                    lines.extend(self._ceiling_alone())
        return lines

    def _ceiling_alone(self) -> list[str]:
        """Apply the ceiling alone as the budget (at extension load, when the defaults cannot hold under it)."""
        try:
            return self.request(Policy(), source=_("configured defaults"))
        except PolicyError as error:
            return [_("This server's ceiling was not applied: {error}").format(error=error)]

    def request(self, asked: Policy, source: str = "%gpumem") -> list[str]:
        """Record and, when possible, apply ``asked`` on top of the current policy; lines to show.
        Raises PolicyError (the sentence) when it cannot hold here; then nothing has changed.

        One line through: decide (policy -> frameworks -> plan -> State), refuse what cannot hold, act
        (apply, or record until the import), then say it from the State now published."""
        policy = self.state.policy.then(asked)
        if self.state.applied and policy == self.state.policy:
            return messages.already(policy)
        snapshot = self.snapshot()
        state = self._decide(policy, snapshot, plan_empty=True)
        assert state.plan is not None
        if policy.mps:
            cuda = [a.name for a in self.adapters.values() if a.imported() and a.initialised()]
            refusal = limits.mps_refusal(state.plan, self._environment.environ, cuda)
            if refusal:
                raise PolicyError(refusal)
        late = [reason for a in state.adapters if (reason := a.too_late(state.plan))]
        if late:
            return messages.too_late(state.adapters, policy, late)
        if state.together:
            lines = self._apply(state)
        else:
            self._record(state)
            installed = len(state.adapters) > 1 or state.adapters[0].importable()
            lines = [*self.cache_problem(), *messages.recorded(self.state, source, installed)]
        mps = messages.mps_applied(self._environment.environ) if policy.mps else []
        notes = [note.words() for note in state.plan.notes]
        return [*messages.unchecked(snapshot), *notes, *lines, *mps]

    def reset(self) -> list[str]:
        if self.state.applied:
            return messages.cannot_reset(self.state)
        if self.state.policy.is_empty:
            return [_("jupyter-gpumem: no policy is recorded; nothing to forget.")]
        forgotten = self.state.policy
        self._environment.restore()
        state = self._decide(Policy(), self.snapshot())
        self._record(state)
        return messages.forgotten(forgotten, state)

    def recheck(self, snapshot: Snapshot) -> None:
        """A policy recorded while the driver had never answered is planned on the GPUs once it has (the main
        thread: %gpumem status); one already applied stays as it is until the user asks again."""
        state = self.state
        if state.plan is not None and state.plan.unchecked and not state.applied and snapshot.stalled_since is None:
            self._record(self._decide(state.policy, snapshot))

    def close(self) -> None:
        """Stop watching imports (the extension is unloaded, or a test is done with this Controller)."""
        self._imports.stop()

    @property
    def has_policy(self) -> bool:
        return self.state.plan is not None

    # ------------------------------------------------------------------ any thread: reading

    def read(self, snapshot: Snapshot) -> Reading:
        """This kernel's memory on every GPU against the published State. Where the framework has
        started and tells its pool, the overhead outside the pool is measured (and remembered for the
        next kernel). Never starts a framework: its figures are read only once it has started."""
        state = self.state  # one State for the whole reading, whatever the main thread publishes meanwhile
        # A framework whose import is still running on the main thread is left alone: touching the
        # half-made module from this thread can break that import.
        started = [a for a in state.adapters if a.imported() and not importing(a.module) and a.initialised()]
        allocators: dict[str, Allocator] = {}
        if started:
            uuids = _framework_uuids(state.plan, snapshot, self._environment.environ.get("CUDA_VISIBLE_DEVICES"))
            for adapter in started:
                for uuid, allocator in zip(uuids, adapter.memory_in_use(), strict=False):
                    known = allocators.get(uuid)
                    allocators[uuid] = known.plus(allocator) if known else allocator
        # Every sample goes to the matcher, before the framework starts too: what was listed then did not
        # "appear" when it started.
        matches = self.matcher.observe(snapshot, {u: a.pool for u, a in allocators.items()}, allocators.keys())
        name, version = overhead_key(started) if started else (state.framework or Said("the_framework"), None)
        if started:
            stance = pid_stance(snapshot)
            confirmed = {  # measured only where NVML lists this kernel (exact or matched), never from an estimate
                d.uuid: own.bytes
                for d in snapshot.devices
                if d.uuid and (own := listed(d, stance, matches.get(d.uuid))) is not None and own.bytes is not None
            }
            pools = {uuid: a.pool for uuid, a in allocators.items() if a.pool is not None}
            self.calibration.observe(snapshot, pools, name, version, owns=confirmed)
        library_bytes = sum(a.library_bytes for a in started)

        def overhead(device: Device) -> Overhead:
            measured = self.calibration.measured(device.uuid)
            remembered = self.calibration.planned(device, snapshot.driver_version, name, version)
            return measured or remembered or estimate(device, name, library_bytes)

        budgets = {g.uuid: g.budget_bytes for g in state.plan.gpus} if state.plan else {}
        return reading(
            snapshot,
            state,
            started=bool(started),
            allocators=allocators,
            measured=self.calibration.measured,
            matches=matches,
            overhead=overhead,
            limits=limits.read(snapshot, self._environment.environ, budgets),
            privacy=self.privacy,
        )

    def framework_uuids(self, reading: Reading) -> list[str]:
        """The framework's GPUs by NVML uuid, in the framework's order (its GPU:i is the i-th)."""
        return _framework_uuids(reading.plan, reading.snapshot, self._environment.environ.get("CUDA_VISIBLE_DEVICES"))

    def cache_problem(self) -> list[str]:
        """The overhead cache's one warning line, the first time it is asked for; then nothing."""
        problem, self.calibration.problem = self.calibration.problem, None
        return [problem] if problem else []

    def status_lines(self, reading: Reading) -> list[str]:
        """The policy and its plan, how this kernel's memory splits against it now, and which limits are hard."""
        return [*self.cache_problem(), *messages.status(reading.state, reading), *messages.limit_lines(reading)]

    # ------------------------------------------------------------------ internals

    def _state(self, policy: Policy, plan: Plan | None, adapters: Sequence[Framework], together: bool) -> State:
        framework = label(adapters, "and" if together else "or")[0]
        decided = len(adapters) == 1 or any(a.imported() for a in adapters)
        return State(policy, plan, tuple(adapters), together, framework if decided else None, self.ceiling)

    def _decide(self, policy: Policy, snapshot: Snapshot | None, plan_empty: bool = False) -> State:
        """The State ``policy`` would make here, not yet published: the frameworks it is for, and its plan
        on this machine's GPUs (for one framework until several are imported: then they share it). An empty
        policy has a plan only under a ceiling (or when asked for: ``plan_empty``); ``snapshot`` None: read
        one only if there is something to plan."""
        adapters = targets(policy, self.adapters, self._referenced)
        together = all(a.imported() for a in adapters)
        plan = None
        if plan_empty or not policy.is_empty or self.ceiling != Ceiling():
            plan = self._plan(policy, snapshot or self.snapshot(), adapters if together else adapters[:1])
        return self._state(policy, plan, adapters, together)

    def _record(self, state: State) -> None:
        """Publish a recorded State and set what its frameworks read at import."""
        if state.plan is not None:
            self._set_environment(state.plan, state.adapters)
        self.state = state

    def _set_environment(self, plan: Plan, adapters: Sequence[Framework]) -> None:
        """What the frameworks read at import, and what CUDA reads when it starts (mps=on)."""
        for adapter in adapters:
            self._environment.set(adapter.environment(plan))
        if plan.policy.mps:
            before = self._environment.original(limits.PINNED)
            self._environment.set(limits.mps_environment(plan, self._environment.environ, before))
        else:
            self._environment.put_back(limits.PINNED)

    def _plan(self, policy: Policy, snapshot: Snapshot, adapters: Sequence[Framework]) -> Plan:
        """The plan for ``policy`` on this snapshot, setting aside on each GPU what an earlier kernel
        measured there (same GPU model, driver and framework versions), else the estimate: the CUDA
        context once, and each framework's libraries."""
        name, version = overhead_key(adapters)
        library_bytes = sum(a.library_bytes for a in adapters)

        def overhead(device: Device) -> Overhead:
            remembered = self.calibration.planned(device, snapshot.driver_version, name, version)
            return remembered or estimate(device, name, library_bytes)

        # As the kernel started (a hub's spawner gives each user their GPUs so, or a MIG slice): what %gpumem set is
        # its own choice within that.
        visible = self._environment.original("CUDA_VISIBLE_DEVICES")
        order = self._environment.original("CUDA_DEVICE_ORDER")
        return make_plan(policy, snapshot, overhead, self.ceiling, visible, order)

    def _apply(self, state: State) -> list[str]:
        """Apply the State's plan to each of its frameworks; with several, they share each GPU's limit."""
        assert state.plan is not None
        share = state.plan.shared(len(state.adapters))
        notes = []
        self._set_environment(share, state.adapters)
        for adapter in state.adapters:
            notes.extend(adapter.apply(share))
        self.state = replace(state, applied_at=time.time(), no_gpu=_no_gpu(state.adapters, share))
        return [*self.cache_problem(), *messages.applied(self.state, share, notes)]

    def _on_import(self, module: str) -> None:
        """Right after `import <framework>` completed, on the importing thread (the notebook's)."""
        adapter = next(a for a in self.adapters.values() if a.module == module)
        state = self.state
        others = [a for a in self.adapters.values() if a is not adapter]
        if state.policy.framework == "auto" and any(importing(other.module) for other in others):
            return  # imported by another framework's import, not by the notebook; its environment is set
        try:
            if state.applied:
                if state.policy.framework == "auto" and adapter not in state.adapters:
                    say(self._apply_too(adapter, state))
            elif state.plan is None or adapter not in targets(state.policy, self.adapters, self._referenced):
                self.state = self._decide(state.policy, None)  # nothing to apply: only the names change
            else:
                snapshot = self.snapshot()
                plan = self._plan(state.policy, snapshot, [adapter])
                say([*messages.unchecked(snapshot), *self._apply(self._state(state.policy, plan, [adapter], True))])
        except Exception as error:  # never break the user's import
            print(
                _(
                    "jupyter-gpumem could not apply {policy} to {framework} ({error_type}: {error}). {framework} runs "
                    "with its defaults."
                ).format(
                    policy=state.policy.describe(), framework=adapter.name, error_type=type(error).__name__, error=error
                ),
                file=sys.stderr,
            )

    def _apply_too(self, adapter: Framework, applied: State) -> list[str]:
        """A second framework imported after the policy went to the first: it gets the same plan."""
        assert applied.plan is not None
        self._set_environment(applied.plan, [adapter])
        notes = adapter.apply(applied.plan)
        adapters = [*applied.adapters, adapter]
        state = replace(
            self._state(applied.policy, applied.plan, adapters, True),
            applied_at=applied.applied_at,
            no_gpu=_no_gpu(adapters, applied.plan),
        )
        self.state = state
        return messages.applied_too(adapter, applied, state, notes)


def say(lines: list[str]) -> None:
    """The kernel's messages as HTML in a notebook frontend (like %gpumem status), the same lines as text in a
    terminal or a log."""
    display(html.lines(lines))  # type: ignore[no-untyped-call]


def _no_gpu(adapters: Sequence[Framework], plan: Plan) -> str | None:
    """Why the plan holds on no GPU, when none of the frameworks it is applied to uses one."""
    problems = [problem for a in adapters if (problem := a.gpu_problem(plan))]
    return " ".join(problems) if problems and len(problems) == len(adapters) else None


def overhead_key(adapters: Sequence[Framework]) -> tuple[str, str | None]:
    """The frameworks' names and versions as the overhead cache keys an entry: ("TensorFlow and PyTorch",
    "2.20.0+2.13.0"), always in English (budget's ``label``, which no catalogue translates), so a kernel that changes
    its language neither misses the entries it remembered nor writes them again under another name. Sentences name
    the frameworks in the language in use with render's ``framework_names``."""
    return label(adapters, "and")


def _framework_uuids(plan: Plan | None, snapshot: Snapshot, visible: str | None) -> list[str]:
    if plan is not None and plan.cuda_visible_devices is not None:
        return [g.uuid for g in plan.gpus]  # CUDA_VISIBLE_DEVICES (or set_visible_devices): just these, in order
    if visible is not None and not any(entry.strip().startswith("MIG-") for entry in visible.split(",")):
        return [d.uuid or "" for d in started_with(visible, snapshot.devices)[0]]  # as the kernel started: "1"
    return [d.uuid or "" for d in snapshot.devices]
