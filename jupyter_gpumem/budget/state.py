"""The kernel's one truth about its policy: what was asked, the plan it makes on this machine, which
frameworks it is for, and whether (and on which GPUs) it is in force.

The Controller decides a new State on the main thread whenever the policy changes or a framework's
import completes, and publishes it by replacing one reference. Everything else only reads it: the
sampler thread every interval, and every surface (the magic's messages, status, explain, the sidebar,
the warnings). None of them decides again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from jupyter_gpumem.budget.framework_interface import Framework, label
from jupyter_gpumem.budget.plan import Ceiling, Plan
from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.words import Said


@dataclass(frozen=True)
class State:
    policy: Policy  # recorded, or applied once applied_at is set
    plan: Plan | None  # None: no policy and no ceiling, so no budget anywhere
    adapters: tuple[Framework, ...]  # the frameworks the policy is for (applied to, once applied)
    together: bool  # all of them are imported, so they share the budget; else it goes to whichever is imported
    framework: str | None  # whose figures these are; None while several are candidates and none is imported
    ceiling: Ceiling = field(default_factory=Ceiling)
    applied_at: float | None = None  # time.time() when the plan was applied to the frameworks
    no_gpu: str | None = None  # applied, but in force on no GPU: why, from the framework's own build

    @property
    def applied(self) -> bool:
        return self.applied_at is not None

    @property
    def in_force(self) -> frozenset[str]:
        """The GPUs (by uuid) on which the plan's budget is in force in the framework."""
        if not self.applied or self.no_gpu or self.plan is None:
            return frozenset()
        return frozenset(g.uuid for g in self.plan.gpus if g.budget_bytes is not None)

    @property
    def frameworks(self) -> str:
        """For people: "TensorFlow"; "TensorFlow and PyTorch" (all imported: both get it);
        "TensorFlow or JAX" (whichever is imported)."""
        return label(self.adapters, "and" if self.together else "or")[0]

    @property
    def takes(self) -> Said:
        """What the framework(s) take of a GPU without a budget, as a sentence's end."""
        if len(self.adapters) == 1:
            return self.adapters[0].default_phrase
        return Said("takes_each", defaults=[a.default_phrase for a in self.adapters])

    @property
    def imports(self) -> str:
        """ "`import tensorflow`", or "`import tensorflow`, `import torch`" for several."""
        return ", ".join(f"`import {a.module}`" for a in self.adapters)

    def since(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.applied_at)) if self.applied_at else ""
