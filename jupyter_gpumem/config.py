"""Defaults and ceilings for shared deployments (JupyterHub).

Every setting is a traitlet of ``GpumemConfig``, settable in ``ipython_kernel_config.py``
(``c.GpumemConfig.fraction = 0.4``) or, as spawners usually do, through an environment variable.
They are read when the extension loads, i.e. at kernel start when it is listed in
``c.InteractiveShellApp.extensions``. A setting that does not parse is reported once and ignored.
"""

from __future__ import annotations

import os

from traitlets import Unicode, default
from traitlets.config import Configurable

from .plan import Ceiling
from .policy import Policy, PolicyError, parse, parse_value


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


class GpumemConfig(Configurable):
    fraction = Unicode(help="Default share of each GPU for every kernel, e.g. 0.4. Env: JUPYTER_GPUMEM_FRACTION.").tag(
        config=True
    )
    limit = Unicode(help="Default absolute budget per GPU, e.g. 6GiB. Env: JUPYTER_GPUMEM_LIMIT.").tag(config=True)
    growth = Unicode(help="Default memory growth, on or off. Env: JUPYTER_GPUMEM_GROWTH.").tag(config=True)
    gpus = Unicode(help="Default GPUs a kernel may use, e.g. 0 or GPU-<uuid>. Env: JUPYTER_GPUMEM_GPUS.").tag(
        config=True
    )
    threads = Unicode(help="Default CPU threads per framework, e.g. 2. Env: JUPYTER_GPUMEM_THREADS.").tag(config=True)
    max_fraction = Unicode(
        help="Ceiling: no kernel may ask for more of a GPU than this share. Env: JUPYTER_GPUMEM_MAX_FRACTION. "
        "Cooperative: it binds %gpumem, not code that bypasses it; MIG or MPS limits are the hard kind."
    ).tag(config=True)
    max_limit = Unicode(help="Ceiling as a size, e.g. 20GiB. Env: JUPYTER_GPUMEM_MAX_LIMIT.").tag(config=True)

    @default("fraction")
    def _fraction(self) -> str:
        return _env("JUPYTER_GPUMEM_FRACTION")

    @default("limit")
    def _limit(self) -> str:
        return _env("JUPYTER_GPUMEM_LIMIT")

    @default("growth")
    def _growth(self) -> str:
        return _env("JUPYTER_GPUMEM_GROWTH")

    @default("gpus")
    def _gpus(self) -> str:
        return _env("JUPYTER_GPUMEM_GPUS")

    @default("threads")
    def _threads(self) -> str:
        return _env("JUPYTER_GPUMEM_THREADS")

    @default("max_fraction")
    def _max_fraction(self) -> str:
        return _env("JUPYTER_GPUMEM_MAX_FRACTION")

    @default("max_limit")
    def _max_limit(self) -> str:
        return _env("JUPYTER_GPUMEM_MAX_LIMIT")

    def defaults(self) -> tuple[Policy, list[str]]:
        """The configured default policy, and a sentence for each setting that was ignored."""
        policy, problems = Policy(), []
        for key in ("fraction", "limit", "growth", "gpus", "threads"):
            value = getattr(self, key)
            if not value:
                continue
            try:
                policy = policy.then(parse([f"{key}={value}"]))
            except PolicyError as error:
                problems.append(f"The configured default {key} was ignored: {error}")
        return policy, problems

    def ceiling(self) -> tuple[Ceiling, list[str]]:
        max_fraction = max_limit = None
        problems = []
        try:
            if self.max_fraction:
                max_fraction = float(parse_value("fraction", self.max_fraction)["fraction"])  # type: ignore[arg-type]
            if self.max_limit:
                max_limit = int(parse_value("limit", self.max_limit)["limit_bytes"])  # type: ignore[call-overload]
        except PolicyError as error:
            problems.append(f"The configured ceiling was ignored: {error}")
        return Ceiling(max_fraction, max_limit), problems
