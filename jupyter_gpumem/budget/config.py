"""Defaults and ceilings for shared deployments (JupyterHub).

Every setting is a traitlet of ``GpumemConfig``, settable in ``ipython_kernel_config.py``
(``c.GpumemConfig.fraction = 0.4``, ``c.GpumemConfig.max_limit = "20GiB"``) or, as spawners usually do,
through a ``JUPYTER_GPUMEM_*`` environment variable, which is the traitlet's default. They are read when
the extension loads, i.e. at kernel start when it is listed in ``c.InteractiveShellApp.extensions``.

The defaults follow traitlets' precedence (the kernel's command line, then the user's profile, then the
system-wide files, then the environment). A ceiling does not: it is the lowest that any source sets, each
source read on its own, so that a user's ``c.GpumemConfig.max_fraction = "1"`` in their own profile lowers
nothing and lifts nothing (``ceiling()``).

A value that does not parse is reported once (a sentence naming the setting, the value and the accepted
forms) and ignored; the other settings still apply and the kernel starts. Two layers catch it:
``load_config`` a default of a type the trait refuses (``c.GpumemConfig.threads = [1, 2]``), which
traitlets would otherwise raise on, dropping every setting, the ceiling included; ``defaults()`` a default of
the right type that is not a valid setting (``fraction = 1.5``). ``ceiling()`` reports every bad ceiling,
whatever its type, naming the source it came from; it is also logged, for the administrator.
"""

from __future__ import annotations

import logging
import math
import os
from contextlib import suppress
from copy import deepcopy
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, cast

from traitlets import Bool, Float, Int, List, TraitType, Unicode, Union, default
from traitlets.config import Application, Config, Configurable
from traitlets.config.loader import (
    DeferredConfig,
    JSONFileConfigLoader,
    LazyConfigValue,
    PyFileConfigLoader,
)

from jupyter_gpumem import values
from jupyter_gpumem.budget.plan import Ceiling
from jupyter_gpumem.budget.policy import Policy, PolicyError, limit_refused, parse_value
from jupyter_gpumem.budget.privacy import Level, level_of, most_private
from jupyter_gpumem.gpu.reader import DEADLINE_S
from jupyter_gpumem.i18n import gettext as _

SETTINGS = ("fraction", "limit", "growth", "gpus", "threads", "max_fraction", "max_limit", "privacy")
DEFAULTS = ("fraction", "limit", "growth", "gpus", "threads")  # in the order they combine into a Policy
CEILINGS = ("max_fraction", "max_limit")  # the lowest of every source holds, not the last read
PRIVACY = ("privacy",)  # the most private of every source holds, as for a ceiling

log = logging.getLogger("jupyter_gpumem")


def forms() -> dict[str, str]:
    """What each setting accepts in the IPython configuration, for the sentence when a value has none of these
    types (in the language in use)."""
    return {
        "fraction": _('a number such as 0.4, or a string such as "0.4" or "40%"'),
        "limit": _('a size string such as "6GiB", or a whole number of bytes such as 6e9'),
        "growth": _('True or False, or a string "on" or "off"'),
        "gpus": _(
            'a GPU index such as 1, a list such as [0, 2] or ["GPU-<uuid>"], or a string such as "0,2", '
            '"GPU-<uuid>" or "none"'
        ),
        "threads": _('a whole number such as 2, or a string such as "2"'),
        "max_fraction": _('a number such as 0.5, or a string such as "0.5" or "50%"'),
        "max_limit": _('a size string such as "20GiB", or a whole number of bytes such as 2e10'),
        "privacy": _('"aggregate", "names" or "list"'),
        "nvml_deadline_s": _("a number of seconds from 0 to {most:g}, such as 1 or 0.5").format(most=MAX_DEADLINE_S),
    }


def environment_variable(name: str) -> str:
    """The variable that gives a setting its default: ``max_limit`` -> ``JUPYTER_GPUMEM_MAX_LIMIT``."""
    return f"JUPYTER_GPUMEM_{name.upper()}"


def _env(name: str) -> str:
    return os.environ.get(environment_variable(name), "").strip()


# A driver that has not answered in a minute is stalled: a longer deadline holds cells as long (gpu/reader.py).
MAX_DEADLINE_S = 60.0


class _Number(Float):  # type: ignore[type-arg]
    """A finite float or an int, not a bool: True is an int to Python, but no one means it as a fraction."""

    info_text = "a number"

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, bool):
            self.error(obj, value)
        found = super().validate(obj, value)
        if not math.isfinite(found):  # NaN passes min= and max=
            self.error(obj, value)
        return found


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


class String(_Setting):
    def __init__(self, help: str):
        super().__init__([Unicode()], help)


class IntListOrString(_Setting):
    def __init__(self, help: str):
        super().__init__([_Whole(), Unicode(), List(Union([_Whole(), Unicode()]))], help)


_DEFAULT_NOTE = (
    "A default, not a cap: users may change it with %gpumem. "
    'None or "": not set, even where the environment variable is.'
)
_CEILING_NOTE = (
    "Every source counts, each read on its own: the environment variable, each configuration file (system-wide "
    "and the user's own) and the kernel's command line; the lowest holds, so a user can lower the ceiling but "
    'never lift it, and None or "" in one source removes nothing another sets. A value that does not parse is '
    "reported and ignored; the others still hold. It counts as nvidia-smi does, strict=off too: the CUDA context "
    "and libraries fit under it with the allocator's pool. "
    "With both max_fraction and max_limit, the smaller of the two holds on each GPU; a kernel that asks for "
    "no budget gets the ceiling as its budget. Note that the ceiling is cooperative: it binds %gpumem and the "
    "frameworks it configures, not code that bypasses them (CUDA called directly, another process); hard limits "
    "need MIG partitions or MPS."
)


class GpumemConfig(Configurable):
    """jupyter-gpumem's defaults and ceiling for every kernel (docs/configuration.md). Each setting's default
    is its JUPYTER_GPUMEM_* environment variable, which spawners usually set; a value configured here wins,
    except in the ceiling (max_fraction, max_limit), where the lowest of every source holds (``ceiling()``).

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
        f"(a framework that can take its pool at start does; %gpumem --help says which). {_DEFAULT_NOTE}"
    )
    gpus = IntListOrString(
        'Default GPUs a kernel may use: an index (1), a list ([0, 2] or ["GPU-<uuid>"]) or a string '
        '("0,2", "GPU-<uuid>", or "none" to hide every GPU, as does an empty list). It sets the kernel\'s '
        "CUDA_VISIBLE_DEVICES; it does not stop a user choosing other GPUs with %gpumem gpus=, nor other "
        f"processes from using these. {_DEFAULT_NOTE}"
    )
    threads = IntOrString(
        "Default CPU threads per framework, intra-op and inter-op, for the frameworks that have thread settings "
        f'(%gpumem --help says which): a whole number (2) or a string ("2"). {_DEFAULT_NOTE}'
    )
    max_fraction = NumberOrString(
        "Ceiling: no %gpumem in any kernel may ask for more than this share of a GPU, as nvidia-smi counts it; "
        'a number (0.5) or a string ("0.5", "50%"). Asking for more is refused with a sentence naming the '
        f"ceiling, and the earlier policy stays. {_CEILING_NOTE}"
    )
    max_limit = BytesOrString(
        f'Ceiling as a size per GPU: a string ("20GiB") or a whole number of bytes (2e10 too). {_CEILING_NOTE}'
    )

    privacy = String(
        'What a kernel shows of other Unix users\' GPU processes: "aggregate" (their count and memory per GPU), '
        '"names" (the same per user) or "list" (every process, its PID, user and name). Never a command line. '
        "Default: aggregate under JupyterHub (JUPYTERHUB_USER set), else list. As for a ceiling, every source "
        "counts and the most private holds, so a user cannot show more than the administrator chose. This "
        "limits what jupyter-gpumem shows, not what a user can see: nvidia-smi lists every process on the GPU."
    )

    nvml_deadline_s = _Number(
        DEADLINE_S,
        min=0.0,
        max=MAX_DEADLINE_S,
        help="Seconds a %gpumem command, a framework's import and the out-of-memory advice wait for the NVIDIA "
        "driver before they go on with the last figures it gave, saying since when it has not answered. The "
        "driver is read on a thread of its own, so a stalled driver never holds a cell longer than this. Default: "
        "the JUPYTER_GPUMEM_NVML_DEADLINE_S variable, else 1.",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        # Filled while traitlets loads the configuration (in super().__init__, via _find_my_config).
        self.refused: dict[str, str] = {}  # setting -> the sentence saying its configured value was ignored
        self._refused_ceilings: dict[str, Any] = {}  # max_* -> a value of the wrong type, reported by ceiling()
        self._logged: set[str] = set()
        super().__init__(**kwargs)
        self.nvml_deadline_s  # noqa: B018 - its default is read now, so a bad variable is in ``refused`` at load

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

    @default("privacy")
    def _privacy(self) -> str:
        return _env("privacy")

    @default("nvml_deadline_s")
    def _nvml_deadline_s(self) -> float:
        text = _env("nvml_deadline_s")
        try:
            return values.number(text or DEADLINE_S, 0, MAX_DEADLINE_S)
        except values.Refused:
            self.refused["nvml_deadline_s"] = _(
                "{variable}={text} was ignored: it takes {form}. Until it is corrected, {deadline} s applies; the "
                "other settings apply."
            ).format(
                variable=environment_variable("nvml_deadline_s"),
                text=text,
                form=forms()["nvml_deadline_s"],
                deadline=f"{DEADLINE_S:g}",
            )
            return DEADLINE_S

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
            try:
                kept[name] = _validated(self, traits[name], name, value)
            except Exception:  # anything a user's value does on the way is that value's fault, not ours
                if name in CEILINGS + PRIVACY:
                    self._refused_ceilings[name] = value  # ceiling() names the source it came from
                else:
                    self.refused[name] = _wrong_type(name, value)
                continue
            self.refused.pop(name, None)
            self._refused_ceilings.pop(name, None)
        return kept

    def defaults(self) -> tuple[Policy, list[str]]:
        """The configured default policy, and a sentence for each setting that was ignored."""
        policy, problems = Policy(), []
        for key in DEFAULTS:
            try:
                fields = _policy_fields(key, getattr(self, key))
            except PolicyError as error:
                problems.append(_("The configured default {key} was ignored: {error}").format(key=key, error=error))
                continue
            if fields is not None:
                policy = policy.then(Policy(**fields))  # type: ignore[arg-type]
        return policy, problems

    def ceiling(self) -> tuple[Ceiling, list[str]]:
        """The ceiling: for max_fraction and max_limit each, the lowest value among every source that sets one
        (``ceilings_given``), and a sentence for each value that was ignored, naming its source; each sentence
        is also logged once. A bad value, or None in one source, never takes down another source's ceiling,
        nor max_limit max_fraction's."""
        lowest: dict[str, tuple[float | int, _Given]] = {}
        ignored: list[str] = []
        for given in self.ceilings_given():
            try:
                fields = given.fields(self)
            except _Ignored as error:
                ignored.append(str(error))
                continue
            if fields is None:
                continue  # None or "": this source sets none; it lifts none either
            value = fields["fraction" if given.setting == "max_fraction" else "limit_bytes"]
            assert isinstance(value, float | int)
            if given.setting not in lowest or value < lowest[given.setting][0]:
                lowest[given.setting] = (value, given)
        fraction, fraction_from = lowest.get("max_fraction", (None, None))
        limit, limit_from = lowest.get("max_limit", (None, None))
        assert fraction is None or isinstance(fraction, float)
        assert limit is None or isinstance(limit, int)
        ceiling = Ceiling(
            fraction,
            limit,
            max_fraction_origin=fraction_from.origin() if fraction_from else "",
            max_limit_origin=limit_from.origin() if limit_from else "",
        )
        if ceiling != Ceiling():
            holds = _("Until it is corrected, this server's ceiling is {ceiling}.").format(ceiling=ceiling.describe())
        else:
            holds = _("Until it is corrected, there is no ceiling.")
        problems = [f"{why} {holds}" for why in ignored]
        for problem in problems:
            if problem not in self._logged:
                self._logged.add(problem)
                _warn(application_of(self), problem)
        return ceiling, problems

    def privacy_level(self) -> tuple[Level, list[str]]:
        """The privacy level (privacy.py): the most private that any source sets, else the default; and a
        sentence for each value that was ignored, naming its source, also logged once."""
        levels: list[Level] = []
        problems = []
        for given in self.ceilings_given(PRIVACY):
            level: Level | None = (
                "aggregate" if given.kind == "unreadable" else level_of(given.value)
            )  # ceiling() says why
            if level is None and not _blank(given.value):  # a typo must not show more than was meant
                problems.append(
                    _("{given} was read as aggregate: privacy takes {form}.").format(
                        given=given.shown(), form=forms()["privacy"]
                    )
                )
                level = "aggregate"
            if level is not None:
                levels.append(level)
        chosen = most_private(levels)
        for problem in problems:
            if problem not in self._logged:
                self._logged.add(problem)
                _warn(application_of(self), problem)
        return chosen, problems

    def ceilings_given(self, settings: tuple[str, ...] = CEILINGS) -> list[_Given]:
        """Every value of ``settings`` (max_fraction and max_limit by default) and its source: the environment;
        when an IPython application loaded this configuration (a kernel, a terminal IPython), each file it
        loaded, read again on its own (system-wide ones first, the user's profile last), and its command line;
        last, what this object holds where no source above explains it (``%config``, a value given to the
        constructor)."""
        given = [_Given(s, _env(s), "environment") for s in settings if _env(s)]
        application = application_of(self)
        if application is not None:
            for path in getattr(application, "loaded_config_files", []):
                loaded = _load_file(application, path)
                if isinstance(loaded, str):
                    given.append(_Given("", loaded, "unreadable", path))  # ceiling() says so
                else:
                    given.extend(self._given_in(loaded, settings, "file", path))
            cli = getattr(application, "cli_config", None) or Config()
            given.extend(self._given_in(cli, settings, "command line"))
        for setting in settings:
            value = self._refused_ceilings.get(setting, getattr(self, setting))
            if _blank(value) or any(g.setting == setting and _same(g.value, value) for g in given):
                continue
            given.append(_Given(setting, value, "configuration"))
        return given

    def _given_in(self, config: Config, settings: tuple[str, ...], kind: str, where: str = "") -> list[_Given]:
        """The values of ``settings`` one source's configuration gives this object (its nested sections too, as
        traitlets finds them), each resolved and checked as traitlets would set it where that works."""
        section = Configurable._find_my_config(self, config)
        traits = self.traits(config=True)
        given = []
        for setting in settings:
            if setting in section:
                value = section[setting]
                with suppress(Exception):  # else shown and reported as written
                    value = _validated(self, traits[setting], setting, value)
                given.append(_Given(setting, value, kind, where))
        return given


class _Ignored(Exception):
    """Why one source's ceiling value was ignored (a sentence)."""


@dataclass(frozen=True)
class _Given:
    """One source's value for a ceiling setting. ``kind``: "environment", "file" (``where`` its path), "command
    line", "configuration" (what the configuration object holds that no other source explains), or
    "unreadable": a file that loaded at start but not when read again (``where``; ``value``: the error)."""

    setting: str  # "" for an unreadable file
    value: Any
    kind: str
    where: str = ""

    def shown(self) -> str:
        if self.kind == "environment":
            return _("{variable}={value} in the environment").format(
                variable=environment_variable(self.setting), value=self.value
            )
        if self.kind == "command line":
            return _("--GpumemConfig.{setting}={value} on the kernel's command line").format(
                setting=self.setting, value=self.value
            )
        if self.kind == "file":
            return _("c.GpumemConfig.{setting} = {value} in {file}").format(
                setting=self.setting, value=_shown(self.value), file=self.where
            )
        return _("c.GpumemConfig.{setting} = {value} in the IPython configuration").format(
            setting=self.setting, value=_shown(self.value)
        )

    def origin(self) -> str:
        """The source, for a sentence about the ceiling: "set in /etc/ipython/ipython_kernel_config.py"."""
        if self.kind == "environment":
            return _("set by {variable} in the environment").format(variable=environment_variable(self.setting))
        if self.kind == "command line":
            return _("set on the kernel's command line")
        if self.kind == "file":
            return _("set in {file}").format(file=self.where)
        return _("set in the IPython configuration")

    def fields(self, owner: GpumemConfig) -> dict[str, object] | None:
        """The Ceiling field this value gives (None: not set). Raises _Ignored: a sentence saying why not."""
        if self.kind == "unreadable":
            raise _Ignored(
                _("{file} could not be read again to find the ceilings it sets ({error}).").format(
                    file=self.where, error=self.value
                )
            )
        trait = owner.traits(config=True)[self.setting]
        try:
            value = _validated(owner, trait, self.setting, self.value)
        except Exception as error:
            raise _Ignored(
                _("{given} was ignored: {setting} takes {form}.").format(
                    given=self.shown(), setting=self.setting, form=forms()[self.setting]
                )
            ) from error
        try:
            return _policy_fields(self.setting, value)
        except PolicyError as error:
            raise _Ignored(_("{given} was ignored: {error}").format(given=self.shown(), error=error)) from error


def application_of(configurable: Configurable) -> Application | None:
    """The application whose configuration reaches ``configurable`` through its parents (IPKernelApp in a
    kernel: shell -> kernel -> app), if any."""
    parent = configurable.parent
    while parent is not None:
        if isinstance(parent, Application):
            return parent
        parent = parent.parent
    return None


def _warn(application: Application | None, text: str) -> None:
    """Log ``text`` for the administrator: on the package's logger, or, in a kernel where it has no handler,
    on the kernel application's, which writes to the kernel's own stderr (the server's log). The package's
    logger would fall to logging's last resort there, the notebook's stderr: lost at kernel start, and
    the sentence twice in a cell that runs %load_ext (the notebook already shows it once)."""
    target = log if log.hasHandlers() or application is None else application.log
    target.warning("jupyter-gpumem: %s", text)


def _load_file(application: Application, path: str) -> Config | str:
    """A configuration file the application loaded, read again on its own with the application's loader
    (IPython's understands ``load_subconfig(..., profile=)``); or why that failed."""
    directory, name = os.path.split(path)
    if name.endswith(".json"):
        loader_class = getattr(application, "json_config_loader_class", JSONFileConfigLoader)
    else:
        loader_class = getattr(application, "python_config_loader_class", PyFileConfigLoader)
    try:
        loaded = loader_class(name, path=directory, log=log).load_config()
    except Exception as error:  # it loaded once; whatever changed since is reported, not raised
        return f"{type(error).__name__}: {error}"
    assert isinstance(loaded, Config)
    return loaded


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def load_config(parent: Any) -> tuple[GpumemConfig, list[str]]:
    """The configuration in ``parent``'s config (the IPython shell's; None: the environment alone), and one
    sentence for each configured value that was ignored (a default of a type its setting refuses, a name that
    is no setting). Never raises for what the configuration holds: a refused default keeps its environment
    variable's value, or none, and the others apply. Defaults of the right type that still do not parse
    (``fraction = 1.5``) are reported by ``defaults()``; every bad ceiling, of any type, by ``ceiling()``,
    which reads each of the parent's application's sources on its own."""
    config = GpumemConfig(parent=parent)
    return config, list(config.refused.values())


def _validated(owner: GpumemConfig, trait: TraitType[Any, Any], name: str, value: Any) -> Any:
    """A configured value as traitlets would set it, checked against its trait (None: not set).
    Raises whatever the value does on the way."""
    resolved = _resolved(owner, trait, name, value)
    if not isinstance(trait, Union):  # nvml_deadline_s: a plain number, never unset
        return cast(Any, trait).validate(owner, resolved)
    return None if resolved is None else trait.validate(owner, resolved)


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
    if _env(name):
        instead = _("{variable}={value} from the environment applies").format(variable=variable, value=_env(name))
    elif name == "nvml_deadline_s":
        instead = _("the default {deadline} s applies").format(deadline=f"{DEADLINE_S:g}")
    else:
        instead = _("{name} is not set").format(name=name)
    return _(
        "c.GpumemConfig.{name} = {value} in the IPython configuration was ignored: {name} takes {form}. Until it "
        "is corrected, {instead}; the other settings apply."
    ).format(name=name, value=_shown(value), form=forms()[name], instead=instead)


def _unknown(name: str) -> str:
    close = get_close_matches(name, SETTINGS, n=1)
    if close:
        said = _(
            "c.GpumemConfig.{name} in the IPython configuration was ignored: it is not a jupyter-gpumem setting; "
            "did you mean {close}? The settings are {settings}."
        )
    else:
        said = _(
            "c.GpumemConfig.{name} in the IPython configuration was ignored: it is not a jupyter-gpumem setting; "
            "The settings are {settings}."
        )
    return said.format(name=name, close=close[0] if close else "", settings=", ".join(SETTINGS))


def _policy_fields(key: str, value: Any) -> dict[str, object] | None:
    """The Policy fields one setting's value gives (None: not set), as %gpumem reads them.
    Raises PolicyError, a sentence naming the %gpumem argument and its accepted form."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    word = key.removeprefix("max_")  # the %gpumem argument with the same forms
    if word == "limit" and isinstance(value, int) and not isinstance(value, bool):
        try:
            return {"limit_bytes": values.byte_count(value)}
        except values.Refused as refused:
            raise PolicyError(limit_refused(refused, value)) from None
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif isinstance(value, list):
        text = ",".join(str(item).strip() for item in value) or "none"
    else:
        text = str(value).strip()
    return parse_value(word, text)
