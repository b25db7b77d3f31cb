"""What the budget layer knows of a framework: its name, what it takes without a budget, its version, and
its allocator's figures. The adapters in jupyter_gpumem.frameworks provide these; the decisions here
never import a framework or an adapter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from jupyter_gpumem.words import Said

if TYPE_CHECKING:
    from jupyter_gpumem.budget.plan import Plan


class Framework(Protocol):
    """A framework as the State and the Controller see it: frameworks.base.Adapter implements it for
    every framework of frameworks.ADAPTERS (docs/frameworks.md)."""

    name: str  # for people: "TensorFlow"
    module: str  # for imports: "tensorflow"
    library_bytes: int  # its libraries' handles and workspaces per GPU, outside the allocator (estimate)
    takes: Said  # what it takes of a GPU without a policy, after its name
    placing: str  # how code places work on GPU 1
    free_earlier: str | None  # how to free tensors of earlier cells from its pool; None: it has no pool

    @property
    def default_phrase(self) -> Said: ...

    def imported(self) -> bool: ...

    def importable(self) -> bool: ...

    def version(self) -> str | None: ...

    def environment(self, plan: Plan) -> dict[str, str]: ...

    def initialised(self) -> bool: ...

    def too_late(self, plan: Plan) -> str | None: ...

    def gpu_problem(self, plan: Plan) -> str | None: ...

    def apply(self, plan: Plan) -> list[str]: ...

    def in_force(self) -> list[str]: ...

    def memory_in_use(self, cell: bool = False) -> tuple[Allocator, ...]: ...


class Allocator(NamedTuple):
    """The framework's allocator on one GPU, in bytes."""

    in_use: int  # by tensors now
    peak: int  # by tensors at most so far
    pool: int | None  # reserved from the GPU; None where the framework does not tell

    def plus(self, more: Allocator) -> Allocator:
        """Two frameworks' allocators on one GPU, together."""
        pool = self.pool + more.pool if self.pool is not None and more.pool is not None else None
        return Allocator(self.in_use + more.in_use, self.peak + more.peak, pool)


def label(adapters: Sequence[Framework], joiner: str = "and") -> tuple[str, str | None]:
    """The frameworks' names and versions, for people and for the overhead cache: ("TensorFlow",
    "2.20.0"); ("TensorFlow and PyTorch", "2.20.0+2.13.0"). Several names are a Said (``frameworks_and`` or
    ``frameworks_or``): as a str the English the cache keys by, as a code's value worded in each surface's
    language ("TensorFlow と PyTorch")."""
    names = [a.name for a in adapters]
    if len(names) == 1:
        name: str = names[0]
    elif joiner == "or":
        name = Said("frameworks_or", names=names[:-1], last=names[-1])
    else:
        name = Said("frameworks_and", names=names[:-1], last=names[-1])
    versions = [a.version() for a in adapters]
    version = versions[0] if len(versions) == 1 else "+".join(v or "unknown" for v in versions)
    return name, version
