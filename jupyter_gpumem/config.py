"""Defaults and ceilings for shared deployments (JupyterHub).

Every setting is a traitlet of ``GpumemConfig``, settable in ``ipython_kernel_config.py``
(``c.GpumemConfig.fraction = 0.4``, ``c.GpumemConfig.max_limit = "20GiB"``) or, as spawners usually do,
through a ``JUPYTER_GPUMEM_*`` environment variable, which is the traitlet's default. They are read when
the extension loads, i.e. at kernel start when it is listed in ``c.InteractiveShellApp.extensions``.

A value that does not parse is reported once (a sentence naming the setting, the value and the accepted
forms) and ignored; the other settings still apply and the kernel starts. Two layers catch it:
``load_config`` a value of a type the trait refuses (``c.GpumemConfig.threads = [1, 2]``), which
traitlets would otherwise raise on, dropping every setting, the ceiling included; ``defaults()`` and
``ceiling()`` a value of the right type that is not a valid setting (``fraction = 1.5``).
"""

from __future__ import annotations

import os
from copy import deepcopy
from difflib import get_close_matches
from typing import Any

from traitlets import Bool, Float, Int, List, TraitType, Unicode, Union, default
from traitlets.config import Config, Configurable
from traitlets.config.loader import DeferredConfig, LazyConfigValue

from .plan import Ceiling
from .policy import Policy, PolicyError, parse_value

SETTINGS = ("fraction", "limit", "growth", "gpus", "threads", "max_fraction", "max_limit")
DEFAULTS = ("fraction", "limit", "growth", "gpus", "threads")  # in the order they combine into a Policy

# What each setting accepts in the IPython configuration, for the sentence when a value has none of these types.
FORMS = {
    "fraction": 'a number such as 0.4, or a string such as "0.4" or "40%"',
    "limit": 'a size string such as "6GiB", or a whole number of bytes such as 6e9',
    "growth": 'True or False, or a string "on" or "off"',
    "gpus": 'a GPU index such as 1, a list such as [0, 2] or ["GPU-<uuid>"], or a string such as "0,2", '
    '"GPU-<uuid>" or "none"',
    "threads": 'a whole number such as 2, or a string such as "2"',
    "max_fraction": 'a number such as 0.5, or a string such as "0.5" or "50%"',
    "max_limit": 'a size string such as "20GiB", or a whole number of bytes such as 2e10',
}


def environment_variable(name: str) -> str:
    """The variable that gives a setting its default: ``max_limit`` -> ``JUPYTER_GPUMEM_MAX_LIMIT``."""
    return f"JUPYTER_GPUMEM_{name.upper()}"


def _env(name: str) -> str:
    return os.environ.get(environment_variable(name), "").strip()


class _Number(Float):  # type: ignore[type-arg]
    """A float or an int, not a bool: True is an int to Python, but no one means it as a fraction."""

    info_text = "a number"

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, bool):
            self.error(obj, value)
        return super().validate(obj, value)


class _Whole(Int):  # type: ignore[type-arg]
    """An int, not a bool."""

    info_text = "a whole number"

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, bool):
            self.error(obj, value)
        return super().validate(obj, value)


class _Setting(Union):
    """A setting: one of its ``trait_types``, by default its environment variable's text ("" when unset).

    The subclass's name is the type ``--help-all`` shows (``--GpumemConfig.fraction=<NumberOrString>``)."""

    def __init__(self, trait_types: list[Any], help: str):
        super().__init__(trait_types, allow_none=True, help=help)
        self.tag(config=True)

    def default_value_repr(self) -> str:
        return f"os.environ.get({environment_variable(self.name or '')!r}, '')"


class NumberOrString(_Setting):
    def __init__(self, help: str):
        super().__init__([_Number(), Unicode()], help)


class BytesOrString(_Setting):
    def __init__(self, help: str):
        super().__init__([_Whole(), Unicode()], help)


class BoolOrString(_Setting):
    def __init__(self, help: str):
        super().__init__([Bool(), Unicode()], help)


class IntOrString(_Setting):
    def __init__(self, help: str):
        super().__init__([_Whole(), Unicode()], help)


class IntListOrString(_Setting):
    def __init__(self, help: str):
        super().__init__([_Whole(), Unicode(), List(Union([_Whole(), Unicode()]))], help)


_DEFAULT_NOTE = (
    "A default, not a cap: users may change it with %gpumem. "
    'None or "": not set, even where the environment variable is.'
)
_CEILING_NOTE = (
    "With both max_fraction and max_limit, the smaller of the two holds on each GPU; a kernel that asks for "
    "no budget gets the ceiling as its budget. Note that the ceiling is cooperative: it binds %gpumem and the "
    "frameworks it configures, not code that bypasses them (CUDA called directly, another process); hard limits "
    "need MIG partitions or MPS."
)


class GpumemConfig(Configurable):
    """jupyter-gpumem's defaults and ceiling for every kernel (docs/configuration.md). Each setting's default
    is its JUPYTER_GPUMEM_* environment variable, which spawners usually set; a value configured here wins.

    Constructing it never raises for a configured value of the wrong type: the value is left out (its
    environment variable or nothing applies instead) and ``refused`` holds a sentence about it."""

    fraction = NumberOrString(
        "Default share of each GPU's memory, as nvidia-smi counts it, that every kernel starts with as its "
        'budget (as if its first cell ran %gpumem fraction=0.4): a number (0.4) or a string ("0.4", "40%"). '
        f"{_DEFAULT_NOTE} Only max_fraction/max_limit bound what a user may ask for."
    )
    limit = BytesOrString(
        'Default budget per GPU as a size: a string ("6GiB", "512MiB"; GiB, MiB, GB or MB) or a whole number '
        f"of bytes. A fraction and a limit replace each other; with both configured, the limit applies. "
        f"{_DEFAULT_NOTE} Only max_fraction/max_limit bound what a user may ask for."
    )
    growth = BoolOrString(
        'Default memory growth: True or "on" (allocate on demand, up to the budget), False or "off" '
        f"(TensorFlow and JAX take the pool at start). {_DEFAULT_NOTE}"
    )
    gpus = IntListOrString(
        'Default GPUs a kernel may use: an index (1), a list ([0, 2] or ["GPU-<uuid>"]) or a string '
        '("0,2", "GPU-<uuid>", or "none" to hide every GPU, as does an empty list). It sets the kernel\'s '
        "CUDA_VISIBLE_DEVICES; it does not stop a user choosing other GPUs with %gpumem gpus=, nor other "
        f"processes from using these. {_DEFAULT_NOTE}"
    )
    threads = IntOrString(
        "Default CPU threads per framework (TensorFlow and PyTorch, intra-op and inter-op): a whole number (2) "
        f'or a string ("2"). {_DEFAULT_NOTE}'
    )
    max_fraction = NumberOrString(
        "Ceiling: no %gpumem in any kernel may ask for more than this share of a GPU, as nvidia-smi counts it; "
        'a number (0.5) or a string ("0.5", "50%"). Asking for more is refused with a sentence naming the '
        f"ceiling, and the earlier policy stays. {_CEILING_NOTE}"
    )
    max_limit = BytesOrString(
        f'Ceiling as a size per GPU: a string ("20GiB") or a whole number of bytes (2e10 too). {_CEILING_NOTE}'
    )

    def __init__(self, **kwargs: Any) -> None:
        # Filled while traitlets loads the configuration (in super().__init__, via _find_my_config).
        self.refused: dict[str, str] = {}  # setting -> the sentence saying its configured value was ignored
        super().__init__(**kwargs)

    @default("fraction")
    def _fraction(self) -> str:
        return _env("fraction")

    @default("limit")
    def _limit(self) -> str:
        return _env("limit")

    @default("growth")
    def _growth(self) -> str:
        return _env("growth")

    @default("gpus")
    def _gpus(self) -> str:
        return _env("gpus")

    @default("threads")
    def _threads(self) -> str:
        return _env("threads")

    @default("max_fraction")
    def _max_fraction(self) -> str:
        return _env("max_fraction")

    @default("max_limit")
    def _max_limit(self) -> str:
        return _env("max_limit")

    def _find_my_config(self, cfg: Config) -> Any:
        """This class's section of ``cfg`` less the values its traits refuse, each remembered in ``refused``.

        traitlets loads a section in one go and, on the first value of a wrong type, rolls back every
        setting and raises: the ceiling would silently vanish with a typo elsewhere. Leaving the refused
        values out here, where traitlets reads the section, keeps the others."""
        section = super()._find_my_config(cfg)
        traits = self.traits(config=True)
        kept = Config()
        for name, value in section.items():
            if name not in traits:
                if name[:1].isupper() or isinstance(value, Config):
                    kept[name] = value  # a subsection, not a setting of ours
                else:
                    self.refused[name] = _unknown(name)
                continue
            trait = traits[name]
            assert isinstance(trait, Union)  # every setting is one
            try:
                resolved = _resolved(self, trait, name, value)
                kept[name] = None if resolved is None else trait.validate(self, resolved)  # None: not set
            except Exception:  # anything a user's value does on the way is that value's fault, not ours
                self.refused[name] = _wrong_type(name, value)
                continue
            self.refused.pop(name, None)
        return kept

    def defaults(self) -> tuple[Policy, list[str]]:
        """The configured default policy, and a sentence for each setting that was ignored."""
        policy, problems = Policy(), []
        for key in DEFAULTS:
            try:
                fields = _policy_fields(key, getattr(self, key))
            except PolicyError as error:
                problems.append(f"The configured default {key} was ignored: {error}")
                continue
            if fields is not None:
                policy = policy.then(Policy(**fields))  # type: ignore[arg-type]
        return policy, problems

    def ceiling(self) -> tuple[Ceiling, list[str]]:
        """The administrator's ceiling, and a sentence for each part that was ignored. max_fraction and
        max_limit are read independently: a bad one never takes the other down with it."""
        problems = []
        caps: dict[str, object] = {}
        for key in ("max_fraction", "max_limit"):
            try:
                caps.update(_policy_fields(key, getattr(self, key)) or {})
            except PolicyError as error:
                problems.append(f"The configured ceiling {key} was ignored: {error}")
        max_fraction = caps.get("fraction")
        max_limit = caps.get("limit_bytes")
        assert max_fraction is None or isinstance(max_fraction, float)
        assert max_limit is None or isinstance(max_limit, int)
        return Ceiling(max_fraction, max_limit), problems


def load_config(parent: Any) -> tuple[GpumemConfig, list[str]]:
    """The configuration in ``parent``'s config (the IPython shell's; None: the environment alone), and one
    sentence for each configured value that was ignored (a type its setting refuses, a name that is no
    setting). Never raises for what the configuration holds: a refused setting keeps its environment
    variable's value, or none, and the others apply. Values of the right type that still do not parse
    (``fraction = 1.5``) are reported by ``defaults()`` and ``ceiling()``."""
    config = GpumemConfig(parent=parent)
    return config, list(config.refused.values())


def _resolved(owner: GpumemConfig, trait: TraitType[Any, Any], name: str, value: Any) -> Any:
    """A configured value as traitlets would set it (``--GpumemConfig.x=`` on a command line, ``.append()``)."""
    if isinstance(value, LazyConfigValue):
        return value.get_value(getattr(owner, name))
    if isinstance(value, DeferredConfig):
        return value.get_value(trait)
    return deepcopy(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _wrong_type(name: str, value: Any) -> str:
    variable = environment_variable(name)
    instead = f"{variable}={_env(name)} from the environment applies" if _env(name) else f"{name} is not set"
    return (
        f"c.GpumemConfig.{name} = {_shown(value)} in the IPython configuration was ignored: {name} takes "
        f"{FORMS[name]}. Until it is corrected, {instead}; the other settings apply."
    )


def _unknown(name: str) -> str:
    close = get_close_matches(name, SETTINGS, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return (
        f"c.GpumemConfig.{name} in the IPython configuration was ignored: it is not a jupyter-gpumem setting; "
        f"{hint}The settings are {', '.join(SETTINGS)}."
    )


def _policy_fields(key: str, value: Any) -> dict[str, object] | None:
    """The Policy fields one setting's value gives (None: not set), as %gpumem reads them.
    Raises PolicyError, a sentence naming the %gpumem argument and its accepted form."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    word = key.removeprefix("max_")  # the %gpumem argument with the same forms
    if word == "limit" and isinstance(value, int):
        if value <= 0:
            raise PolicyError(f"limit={value} must be above zero; use limit=6GiB or a whole number of bytes.")
        return {"limit_bytes": value}
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif isinstance(value, list):
        text = ",".join(str(item).strip() for item in value) or "none"
    else:
        text = str(value).strip()
    return parse_value(word, text)
