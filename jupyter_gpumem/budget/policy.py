"""What the user asked for: `%gpumem fraction=0.4 gpus=1 threads=2 ...`, parsed and checked.

A Policy says nothing about any particular GPU; plan.py turns it into per-GPU budgets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace

from jupyter_gpumem import values
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.units import format_mib

# threads=, intra=, inter=: TensorFlow takes any int32 and then fails every op it cannot give a pool of that many
# threads (issue 43); beyond the largest machines' CPU count, more threads only starve the others.
MAX_THREADS = 1024
# framework=: a name's form only. Which names exist is the adapters' registry's to say (frameworks.ADAPTERS, a
# higher layer): frameworks.choice.targets refuses a name it lacks, with the names it has.
FRAMEWORK_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


class PolicyError(ValueError):
    """Bad input: the message is one sentence for the user, naming the argument and the accepted form."""


@dataclass(frozen=True)
class Policy:
    fraction: float | None = None  # of each selected GPU's total memory, as nvidia-smi counts it
    limit_bytes: int | None = None  # the same as an absolute budget
    limit_as_typed: str | None = field(default=None, compare=False)  # "6GiB": echoed as the user wrote it
    growth: bool | None = None
    gpus: tuple[str, ...] | None = None  # NVML indices or UUIDs; () hides every GPU
    intra_threads: int | None = None
    inter_threads: int | None = None
    framework: str = "auto"  # "auto", or a name as typed (lower case): frameworks.choice.named resolves it
    strict: bool = True  # False: the framework's raw meaning (the allocator pool only)
    mps: bool | None = None  # True: the budget also becomes this process's MPS pinned limit (a hard cap)

    @property
    def is_empty(self) -> bool:
        return self == Policy()

    def then(self, newer: Policy) -> Policy:
        """This policy with what ``newer`` sets on top; a fraction and a limit replace each other."""
        changes = {f.name: getattr(newer, f.name) for f in fields(newer) if getattr(newer, f.name) is not None}
        changes.pop("framework", None)
        changes.pop("strict", None)
        merged = replace(self, **changes)
        if newer.fraction is not None:
            merged = replace(merged, limit_bytes=None, limit_as_typed=None)
        if newer.limit_bytes is not None:
            merged = replace(merged, fraction=None, limit_as_typed=newer.limit_as_typed)
        if newer.framework != "auto":
            merged = replace(merged, framework=newer.framework)
        if not newer.strict:
            merged = replace(merged, strict=False)
        return merged

    @property
    def limit_text(self) -> str:
        """The limit as the user typed it, else in MiB."""
        if self.limit_as_typed:
            return self.limit_as_typed
        return format_mib(self.limit_bytes).replace(" ", "")

    def describe(self) -> str:
        """The policy as the arguments that would give it."""
        words = []
        if self.fraction is not None:
            words.append(f"fraction={self.fraction:g}")
        if self.limit_bytes is not None:
            words.append(f"limit={self.limit_text}")
        if self.growth is not None:
            words.append(f"growth={'on' if self.growth else 'off'}")
        if self.gpus is not None:
            words.append(f"gpus={','.join(self.gpus) or 'none'}")
        if self.intra_threads is not None and self.intra_threads == self.inter_threads:
            words.append(f"threads={self.intra_threads}")
        else:
            if self.intra_threads is not None:
                words.append(f"intra={self.intra_threads}")
            if self.inter_threads is not None:
                words.append(f"inter={self.inter_threads}")
        if self.framework != "auto":
            words.append(f"framework={self.framework}")
        if not self.strict:
            words.append("strict=off")
        if self.mps is not None:
            words.append(f"mps={'on' if self.mps else 'off'}")
        return " ".join(words) or _("(nothing set)")


def accepted(key: str) -> str:
    """The forms a setting accepts, as a refusal shows them, in the language in use."""
    return {
        "fraction": _("fraction=0.4 (a number above 0 and at most 1)"),
        "limit": _("limit=6GiB (a size with a unit: GiB, MiB, GB or MB)"),
        "growth": _("growth=on or growth=off"),
        "gpus": _("gpus=1, gpus=0,2, gpus=GPU-<uuid> or gpus=none"),
        "threads": _("threads=2 (a whole number from 1 to {most})").format(most=MAX_THREADS),
        "intra": _("intra=2 (a whole number from 1 to {most})").format(most=MAX_THREADS),
        "inter": _("inter=1 (a whole number from 1 to {most})").format(most=MAX_THREADS),
        "framework": _("framework=auto or a framework's name (%gpumem --help lists them)"),
        "strict": _("strict=on or strict=off"),
        "mps": _("mps=on or mps=off"),
    }[key]


SETTINGS = ("fraction", "limit", "growth", "gpus", "threads", "intra", "inter", "framework", "strict", "mps")


def _switch(key: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in ("on", "true", "yes", "1"):
        return True
    if lowered in ("off", "false", "no", "0"):
        return False
    raise PolicyError(
        _("{key}={value} is not on or off; use {accepted}.").format(key=key, value=value, accepted=accepted(key))
    )


def limit_refused(refused: values.Refused, value: object) -> str:
    """The sentence for a ``limit=`` that ``values.size`` or ``values.byte_count`` refused."""
    said = {
        "not_size": _("limit={value} is not a size; use {accepted}."),
        "not_positive": _("limit={value} must be above zero; use {accepted}."),
        "too_large": _("limit={value} is beyond any GPU's memory (at most {most}); use {accepted}."),
    }[refused.kind]
    return said.format(value=values.shown(value), most=f"{values.MAX_BYTES >> 40} TiB", accepted=accepted("limit"))


def _count(key: str, value: str) -> int:
    try:
        return values.whole(value, 1, MAX_THREADS)
    except values.Refused:
        raise PolicyError(
            _("{key}={value} is not a whole number from 1 to {most}; use {accepted}.").format(
                key=key, value=values.shown(value), most=MAX_THREADS, accepted=accepted(key)
            )
        ) from None


def parse_value(key: str, value: str) -> dict[str, object]:
    """One ``key=value`` as Policy fields. Raises PolicyError with the sentence to show."""
    if key == "fraction":
        try:
            return {"fraction": values.fraction(value)}
        except values.Refused as refused:
            said = {
                "not_number": _("fraction={value} is not a number; use {accepted}."),
                "outside": _("fraction={value} is outside (0, 1]; use {accepted}."),
            }[refused.kind]
            raise PolicyError(said.format(value=values.shown(value), accepted=accepted(key))) from None
    if key == "limit":
        try:
            return {"limit_bytes": values.size(value), "limit_as_typed": value}
        except values.Refused as refused:
            raise PolicyError(limit_refused(refused, value)) from None
    if key == "growth":
        return {"growth": _switch(key, value)}
    if key == "strict":
        return {"strict": _switch(key, value)}
    if key == "mps":
        return {"mps": _switch(key, value)}
    if key == "gpus":
        if value.lower() == "none":
            return {"gpus": ()}
        items = tuple(item.strip() for item in value.split(","))
        for item in items:
            if not (values.DIGITS.fullmatch(item) or item.startswith(("GPU-", "MIG-"))):
                raise PolicyError(
                    _("gpus={value} names no GPU in {item}; use {accepted}.").format(
                        value=values.shown(value), item=repr(values.shown(item)), accepted=accepted(key)
                    )
                )
        if len(set(items)) != len(items):
            raise PolicyError(
                _("gpus={value} names a GPU twice; use {accepted}.").format(value=value, accepted=accepted(key))
            )
        return {"gpus": items}
    if key == "threads":
        count = _count(key, value)
        return {"intra_threads": count, "inter_threads": count}
    if key == "intra":
        return {"intra_threads": _count(key, value)}
    if key == "inter":
        return {"inter_threads": _count(key, value)}
    if key == "framework":
        name = value.lower()
        if not FRAMEWORK_NAME.fullmatch(name):
            raise PolicyError(
                _("framework={value} is not a framework's name; use {accepted}.").format(
                    value=values.shown(value), accepted=accepted(key)
                )
            )
        return {"framework": name}
    known = ", ".join(SETTINGS)
    raise PolicyError(
        _("{key}= is not a %gpumem setting; the settings are {known} (see %gpumem --help).").format(
            key=key, known=known
        )
    )


def parse(words: list[str]) -> Policy:
    """``["fraction=0.5", "gpus=1"]`` -> Policy. Raises PolicyError naming the offending argument."""
    seen: dict[str, str] = {}
    values: dict[str, object] = {}
    for word in words:
        key, sep, value = word.partition("=")
        key = key.strip().lower()
        if not sep or not value.strip():
            raise PolicyError(
                _("{word} is not key=value; write for example %gpumem fraction=0.4 (see %gpumem --help).").format(
                    word=repr(word)
                )
            )
        if key in seen:
            raise PolicyError(
                _("{key}= is given twice ({first} and {second}); give it once.").format(
                    key=key, first=seen[key], second=word
                )
            )
        seen[key] = word
        values.update(parse_value(key, value.strip()))
    if "fraction" in seen and "limit" in seen:
        raise PolicyError(
            _("{fraction} and {limit} contradict each other: give a fraction or a limit, not both.").format(
                fraction=seen["fraction"], limit=seen["limit"]
            )
        )
    if "threads" in seen and ("intra" in seen or "inter" in seen):
        other = seen.get("intra") or seen["inter"]
        raise PolicyError(
            _(
                "{threads} and {other} contradict each other: threads= sets both intra and inter; give threads= "
                "alone, or intra= and inter=."
            ).format(threads=seen["threads"], other=other)
        )
    if values.get("gpus") == () and ("fraction" in seen or "limit" in seen):
        budget = seen.get("fraction") or seen["limit"]
        raise PolicyError(
            _("gpus=none and {budget} contradict each other: with no GPU there is nothing to budget.").format(
                budget=budget
            )
        )
    if values.get("gpus") == () and values.get("mps"):
        raise PolicyError(
            _("gpus=none and {mps} contradict each other: with no GPU there is nothing to cap.").format(mps=seen["mps"])
        )
    return Policy(**values)  # type: ignore[arg-type]
