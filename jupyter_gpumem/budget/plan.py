"""A Policy made concrete for this machine's GPUs: per selected GPU a budget as nvidia-smi counts it,
split into the framework's allocator limit and the CUDA context/library overhead outside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from jupyter_gpumem import values
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.policy import Policy, PolicyError
from jupyter_gpumem.gpu.model import Device, MigDevice, Snapshot
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import ngettext
from jupyter_gpumem.units import MiB, format_mib
from jupyter_gpumem.words import Said, word


@dataclass(frozen=True)
class Ceiling:
    """An administrator's maximum per GPU, as nvidia-smi counts it (JUPYTER_GPUMEM_MAX_FRACTION / _MAX_LIMIT):
    each the lowest that any source sets (config.py)."""

    max_fraction: float | None = None
    max_limit_bytes: int | None = None
    # Where each was set, as a phrase ("set in /etc/ipython/ipython_kernel_config.py"); "": not known.
    max_fraction_origin: str = field(default="", compare=False)
    max_limit_origin: str = field(default="", compare=False)

    def budget_bytes(self, total_bytes: int) -> int | None:
        caps = []
        if self.max_limit_bytes is not None:
            caps.append(self.max_limit_bytes)
        if self.max_fraction is not None:
            caps.append(int(self.max_fraction * total_bytes))
        return min(caps) if caps else None

    def origin(self, total_bytes: int) -> str:
        """Where the cap that binds on a GPU of ``total_bytes`` was set: "set by JUPYTER_GPUMEM_MAX_FRACTION in
        the environment" (or "set by the administrator" where that is not known)."""
        limit_binds = self.max_limit_bytes is not None and (
            self.max_fraction is None or self.max_limit_bytes <= int(self.max_fraction * total_bytes)
        )
        return (self.max_limit_origin if limit_binds else self.max_fraction_origin) or _("set by the administrator")

    def describe(self) -> str:
        parts = []
        if self.max_fraction is not None:
            parts.append(_("{fraction} of each GPU").format(fraction=f"{self.max_fraction:g}"))
        if self.max_limit_bytes is not None:
            parts.append(format_mib(self.max_limit_bytes))
        return word("join_and", {}).join(parts)


@dataclass(frozen=True)
class GpuPlan:
    index: int  # NVML index (PCI order)
    uuid: str
    name: str
    total_bytes: int
    budget_bytes: int | None  # None: no cap asked for
    overhead: Overhead  # CUDA context + libraries set aside, outside the allocator's limit
    allocator_limit_bytes: int | None  # what the framework's allocator is capped at
    # strict=off under a ceiling: the ceiling's cap on this GPU, where the allocator limit was lowered from the
    # budget so that it plus the overhead stays under it, as nvidia-smi counts it. None: not lowered.
    ceiling_bytes: int | None = None
    # The MIG slice of this GPU the kernel runs on: total_bytes is the slice's, and CUDA_VISIBLE_DEVICES names it.
    slice: MigDevice | None = None

    @property
    def overhead_bytes(self) -> int:
        return self.overhead.bytes


@dataclass(frozen=True)
class Plan:
    policy: Policy
    gpus: tuple[GpuPlan, ...] = ()  # the GPUs the kernel may use, in PCI order
    hidden: tuple[Device, ...] = ()  # the GPUs it may not touch
    lost: tuple[Device, ...] = ()  # GPUs lost when it was made (fell off the bus): no budget there
    no_gpu: str | None = None  # why there is no GPU to plan for (no driver, none visible)
    # Made while the driver had never answered: no GPU could be checked, so none is hidden either.
    unchecked: bool = False
    notes: tuple[Said, ...] = ()  # what the plan changed from what was asked (a budget lowered to the driver's)

    @property
    def cuda_visible_devices(self) -> str | None:
        """CUDA_VISIBLE_DEVICES by UUID (robust to enumeration order; a MIG slice by its own), or None to leave it
        alone."""
        if self.policy.gpus is None or self.unchecked:
            return None
        return ",".join(g.slice.uuid if g.slice and g.slice.uuid else g.uuid for g in self.gpus) or "-1"

    def shared(self, ways: int) -> Plan:
        """This plan with each GPU's allocator limit split ``ways`` ways (frameworks sharing a budget)."""
        if ways == 1:
            return self
        gpus = tuple(
            replace(g, allocator_limit_bytes=g.allocator_limit_bytes // ways if g.allocator_limit_bytes else None)
            for g in self.gpus
        )
        return replace(self, gpus=gpus)


def kernel_slices(visible: str | None, devices: tuple[Device, ...]) -> dict[str, MigDevice | None]:
    """The MIG slice this kernel runs on, for each GPU in MIG mode (by the GPU's uuid; None: not known) that it can
    use: the slices CUDA_VISIBLE_DEVICES names (``MIG-<uuid>``, or the older ``MIG-GPU-<uuid>/<gi>/<ci>``), else
    the slice its own process is on, else the GPU's only slice. Where it names slices, GPUs it names no slice of
    are absent: the kernel cannot use them."""
    named: dict[str, MigDevice] = {}
    for entry in (item.strip() for item in (visible or "").split(",")):
        for device in devices:
            for mig in device.mig_devices if device.uuid else ():
                old = entry.startswith("MIG-GPU-") and entry.count("/") == 2
                if (mig.uuid and mig.uuid == entry) or (
                    old and device.uuid == entry[4:].split("/")[0] and str(mig.gpu_instance_id) == entry.split("/")[1]
                ):
                    named.setdefault(device.uuid or "", mig)
    found: dict[str, MigDevice | None] = {}
    for device in devices:
        if not device.mig_enabled or device.uuid is None:
            continue
        if named:
            if device.uuid in named:
                found[device.uuid] = named[device.uuid]
            continue
        on = {p.gpu_instance_id for p in device.processes if p.is_self and p.gpu_instance_id is not None}
        by_process = [m for m in device.mig_devices if m.gpu_instance_id in on]
        only = list(device.mig_devices) if len(device.mig_devices) == 1 else []
        candidates = by_process or only
        found[device.uuid] = candidates[0] if candidates else None
    return found


def visible_indices(visible: str, devices: Sequence[tuple[int, str | None]]) -> tuple[list[int], bool]:
    """The GPUs a CUDA_VISIBLE_DEVICES without MIG slices names (NVML indices, in its order), read as CUDA reads it:
    entries separated by commas, each an index in CUDA's count or a GPU's UUID (or a prefix of one that only it
    has); the list ends at the first entry that names no GPU, or one already named, so "" and "-1" name none. And
    whether an index named one (CUDA counts in NVML's order only with CUDA_DEVICE_ORDER=PCI_BUS_ID or GPUs all
    alike). ``devices``: (NVML index, uuid) of every GPU. The one reading of the list: limits.cuda_order too."""
    named: list[int] = []
    by_index = False
    for item in (entry.strip() for entry in visible.split(",")):
        index = values.DIGITS.fullmatch(item) is not None
        if index:
            match = [i for i, _ in devices if i == int(item)]
        elif item.startswith("GPU-"):
            match = [i for i, uuid in devices if uuid and uuid.startswith(item)]
        else:
            match = []
        if len(match) != 1 or match[0] in named:
            break
        named.append(match[0])
        by_index = by_index or index
    return named, by_index


def started_with(visible: str, devices: tuple[Device, ...]) -> tuple[tuple[Device, ...], bool]:
    """``visible_indices`` as the devices themselves."""
    indices, by_index = visible_indices(visible, [(d.index, d.uuid) for d in devices])
    by = {d.index: d for d in devices}
    return tuple(by[i] for i in indices), by_index


def _order_uncertain(visible: str, order: str | None, devices: tuple[Device, ...]) -> Said | None:
    """Said where CUDA may count the indices of ``visible`` otherwise than NVML: without PCI_BUS_ID, CUDA counts
    fastest first, which is NVML's (PCI bus) order only among GPUs all of one model."""
    models = {d.name for d in devices}
    if order == "PCI_BUS_ID" or len(devices) < 2 or (len(models) == 1 and None not in models):
        return None
    return Said("cuda_order_uncertain", visible=visible)


def _refuse_outside(policy: Policy, usable: tuple[Device, ...], visible: str, uncertain: Said | None) -> None:
    """gpus= may name only GPUs the kernel started with: the server chose them (a hub's spawner, to keep each user
    on their own), and a UUID in CUDA_VISIBLE_DEVICES would reach past its choice."""
    if policy.gpus is None or all(_named(item, usable) for item in policy.gpus):
        return
    if usable:
        said = ngettext(
            "gpus={gpus}: this kernel started with CUDA_VISIBLE_DEVICES={visible}, so it can use GPU {usable} only "
            "(the GPU the server gave it); pick it, or ask whoever runs the server for others.",
            "gpus={gpus}: this kernel started with CUDA_VISIBLE_DEVICES={visible}, so it can use GPUs {usable} only "
            "(the GPUs the server gave it); pick from those, or ask whoever runs the server for others.",
            len(usable),
        )
    else:
        said = _(
            "gpus={gpus}: this kernel started with CUDA_VISIBLE_DEVICES={visible}, so it can use no GPU (the server "
            "gave it none); leave gpus= out, or ask whoever runs the server for a GPU."
        )
    text = said.format(
        gpus=",".join(policy.gpus),
        visible=visible,
        usable=word("join_and", {}).join(str(d.index) for d in usable),
    )
    raise PolicyError(f"{text} {uncertain.words()}" if uncertain else text)


def _named(item: str, devices: tuple[Device, ...]) -> list[Device]:
    """The GPU a gpus= item names: an NVML index or a whole UUID."""
    if values.DIGITS.fullmatch(item):
        return [d for d in devices if d.index == int(item)]
    return [d for d in devices if d.uuid == item]


def _select(policy: Policy, devices: tuple[Device, ...]) -> tuple[list[Device], list[Device]]:
    if policy.gpus is None:
        return list(devices), []
    chosen = []
    for item in policy.gpus:
        match = _named(item, devices)
        if not match:
            known = ", ".join(str(d.index) for d in devices) or _("none")
            raise PolicyError(
                _(
                    "gpus={gpus}: there is no GPU {item} here (GPUs on this machine: {known}; see %gpumem status)."
                ).format(gpus=",".join(policy.gpus), item=item, known=known)
            )
        if match[0].lost:
            raise PolicyError(
                _("gpus={gpus}: GPU {item} is lost (fell off the bus); pick another.").format(
                    gpus=",".join(policy.gpus), item=item
                )
            )
        chosen.append(match[0])
    chosen.sort(key=lambda d: d.index)
    return chosen, [d for d in devices if d not in chosen]


def _budget(policy: Policy, ceiling: Ceiling, device: Device, total: int) -> int | None:
    if policy.fraction is not None:
        budget: int | None = int(policy.fraction * total)
        asked = f"fraction={policy.fraction:g}"
    elif policy.limit_bytes is not None:
        budget = policy.limit_bytes
        asked = f"limit={policy.limit_text}"
        if budget > total:
            raise PolicyError(
                _("{asked} is more than GPU {index}'s {total} ({name}); give a smaller limit or a fraction.").format(
                    asked=asked, index=device.index, total=format_mib(total), name=device.name
                )
            )
    else:
        return ceiling.budget_bytes(total)  # no cap asked: the administrator's ceiling, if any
    cap = ceiling.budget_bytes(total)
    if cap is not None and budget is not None and budget > cap:
        raise PolicyError(
            _(
                "{asked} is above this server's ceiling of {ceiling} ({cap} on GPU {index}), {origin}; ask for less."
            ).format(
                asked=asked,
                ceiling=ceiling.describe(),
                cap=format_mib(cap),
                index=device.index,
                origin=ceiling.origin(total),
            )
        )
    return budget


def _at_driver_limit(policy: Policy, device: Device, budget: int | None) -> tuple[int | None, Said | None]:
    """A budget above the hard limit the driver enforces on this kernel's cgroup is planned at that limit, and
    the plan says so."""
    limit = device.driver_limit
    if budget is None or limit is None or budget <= limit.hard_bytes:
        return budget, None
    if policy.fraction is not None:
        asked = f"fraction={policy.fraction:g}"
    elif policy.limit_bytes is not None:
        asked = f"limit={policy.limit_text}"
    else:
        asked = _("this server's ceiling")
    said = Said(
        "planned_at_driver_limit",
        asked=asked,
        asked_bytes=budget,
        index=device.index,
        limit_bytes=limit.hard_bytes,
        cgroup=limit.cgroup,
    )
    return limit.hard_bytes, said


def make_plan(
    policy: Policy,
    snapshot: Snapshot,
    overhead: Callable[[Device], Overhead],
    ceiling: Ceiling = Ceiling(),
    visible: str | None = None,
    order: str | None = None,
) -> Plan:
    """``overhead``: what to set aside on a GPU for the CUDA context and libraries; ``visible``: the kernel's
    CUDA_VISIBLE_DEVICES as it started (None: not set), ``order`` its CUDA_DEVICE_ORDER. The kernel may use only
    the GPUs that names (a MIG slice it names is the GPU's memory for this kernel); the others are hidden, and
    gpus= naming one is refused. Raises PolicyError (a sentence) when the policy cannot hold on this machine's
    GPUs."""
    if snapshot.problem:
        return Plan(policy, no_gpu=snapshot.problem)
    silent = stalled(snapshot)
    if silent is not None and not snapshot.devices:
        return Plan(policy, no_gpu=Said("stalled_plan_later", stalled=silent), unchecked=True)
    slices = kernel_slices(visible, snapshot.devices)
    usable = snapshot.devices
    notes: list[Said] = []
    no_gpu = None if snapshot.devices else Said("no_gpus")
    if any(entry.strip().startswith("MIG-") for entry in (visible or "").split(",")):
        usable = tuple(d for d in snapshot.devices if d.uuid in slices)  # only the GPUs of the slices it names
    elif visible is not None:  # as a hub's spawner gives each user their GPUs: "1", "0,2", "GPU-<uuid>"
        named, by_index = started_with(visible, snapshot.devices)
        usable = tuple(sorted(named, key=lambda d: d.index))
        uncertain = _order_uncertain(visible, order, snapshot.devices) if by_index else None
        _refuse_outside(policy, usable, visible, uncertain)
        if uncertain is not None:
            notes.append(uncertain)
        if not usable and snapshot.devices:
            no_gpu = Said("no_gpu_visible", visible=visible)
    selected, hidden = _select(policy, usable)
    hidden = sorted([*hidden, *(d for d in snapshot.devices if d not in usable)], key=lambda d: d.index)
    lost = tuple(d for d in selected if d.lost)  # only where gpus= did not name it (_select refuses that)
    gpus = []
    for device in selected:
        if device.lost:
            continue
        if device.uuid is None or device.total_bytes is None:
            if device.uuid is None:
                said = _(
                    "GPU {index} does not report its UUID, so no budget can be planned for it; leave it out with gpus=."
                )
            else:
                said = _(
                    "GPU {index} does not report its memory, so no budget can be planned for it; leave it out "
                    "with gpus=."
                )
            raise PolicyError(said.format(index=device.index))
        piece = slices.get(device.uuid, None)
        if device.uuid in slices and (piece is None or piece.total_bytes is None):
            raise PolicyError(Said("mig_slice_not_known", index=device.index))
        total = piece.total_bytes if piece is not None and piece.total_bytes is not None else device.total_bytes
        budget, note = _at_driver_limit(policy, device, _budget(policy, ceiling, device, total))
        if note is not None:
            notes.append(note)
        aside = overhead(device)
        limit = budget
        cap = ceiling.budget_bytes(total)
        lowered = None
        if budget is not None and policy.strict:
            limit = budget - aside.bytes
            if limit < 64 * MiB:
                raise PolicyError(
                    _(
                        "{policy} gives GPU {index} a budget of {budget}, which leaves nothing for tensors after about "
                        "{aside} of CUDA context and libraries; ask for more, or add strict=off for the allocator pool "
                        "alone."
                    ).format(
                        policy=policy.describe(),
                        index=device.index,
                        budget=format_mib(budget),
                        aside=format_mib(aside.bytes),
                    )
                )
        elif budget is not None and cap is not None and budget + aside.bytes > cap:
            # strict=off is the allocator pool alone, but a ceiling is as nvidia-smi counts it: the context and
            # libraries outside the pool must fit under it too.
            limit, lowered = cap - aside.bytes, cap
            if limit < 64 * MiB:
                raise PolicyError(
                    _(
                        "{policy} on GPU {index}: this server's ceiling of {ceiling} ({cap} there, as nvidia-smi "
                        "counts it, {origin}) leaves nothing for tensors after about {aside} of CUDA context and "
                        "libraries, and strict=off cannot go over it."
                    ).format(
                        policy=policy.describe(),
                        index=device.index,
                        ceiling=ceiling.describe(),
                        cap=format_mib(cap),
                        origin=ceiling.origin(total),
                        aside=format_mib(aside.bytes),
                    )
                )
        gpus.append(
            GpuPlan(
                index=device.index,
                uuid=device.uuid,
                name=device.name or "unknown GPU",
                total_bytes=total,
                budget_bytes=budget,
                overhead=aside,
                allocator_limit_bytes=limit,
                ceiling_bytes=lowered,
                slice=piece,
            )
        )
    return Plan(policy, gpus=tuple(gpus), hidden=tuple(hidden), lost=lost, no_gpu=no_gpu, notes=tuple(notes))
