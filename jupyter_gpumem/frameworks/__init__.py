"""One module per framework: apply a plan, tell whether it is too late, report what is in force."""

from __future__ import annotations

from .base import Adapter
from .tensorflow import TensorFlow

ADAPTERS: dict[str, type[Adapter]] = {"tensorflow": TensorFlow}

__all__ = ["ADAPTERS", "Adapter", "TensorFlow"]
