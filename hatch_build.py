"""The wheel's and the editable install's catalogues: the .mo (gettext) and .json (JupyterLab) of every
committed .po, built with babel by jupyter_gpumem/i18n/build.py, so a build needs no Node for them
([tool.hatch.build.hooks.custom] in pyproject.toml; they are the wheel's artifacts, never committed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":  # the sdist carries the .po files; its wheel builds from them
            return
        root = Path(self.root)
        # Loaded by its path: importing the package would import what the build environment does not have.
        spec = importlib.util.spec_from_file_location(
            "_gpumem_i18n_build", root / "jupyter_gpumem" / "i18n" / "build.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for path in module.build(root / "jupyter_gpumem" / "locale", self.metadata.version):
            self.app.display_info(f"i18n: {path.relative_to(root)}")
