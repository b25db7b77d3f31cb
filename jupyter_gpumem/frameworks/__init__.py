"""One module per framework: apply a plan, tell whether it is too late, report what is in force."""

from __future__ import annotations

from jupyter_gpumem.frameworks.base import Adapter
from jupyter_gpumem.frameworks.jax import Jax
from jupyter_gpumem.frameworks.pytorch import PyTorch
from jupyter_gpumem.frameworks.tensorflow import TensorFlow

# framework= names, in the order framework=auto looks for them.
ADAPTERS: dict[str, type[Adapter]] = {"tensorflow": TensorFlow, "pytorch": PyTorch, "jax": Jax}

__all__ = ["ADAPTERS", "Adapter", "Jax", "PyTorch", "TensorFlow"]
