"""One module per framework: apply a plan, tell whether it is too late, report what is in force."""

from __future__ import annotations

from .base import Adapter
from .jax import Jax
from .pytorch import PyTorch
from .tensorflow import TensorFlow

# framework= names, in the order framework=auto looks for them.
ADAPTERS: dict[str, type[Adapter]] = {"tensorflow": TensorFlow, "pytorch": PyTorch, "jax": Jax}

__all__ = ["ADAPTERS", "Adapter", "Jax", "PyTorch", "TensorFlow"]
