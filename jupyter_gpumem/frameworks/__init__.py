"""One module per framework: apply a plan, tell whether it is too late, report what is in force."""

from __future__ import annotations

from jupyter_gpumem.frameworks.base import Adapter
from jupyter_gpumem.frameworks.cupy import CuPy
from jupyter_gpumem.frameworks.jax import Jax
from jupyter_gpumem.frameworks.pytorch import PyTorch
from jupyter_gpumem.frameworks.tensorflow import TensorFlow

# The one list of the frameworks jupyter-gpumem supports: framework= names, in the order framework=auto looks for
# them. The magic's help, framework='s accepted names and the sentences that name them all derive from it
# (docs/contributing.md, "Add a framework"; tests/frameworks/test_lists.py holds the rest of the code to it).
ADAPTERS: dict[str, type[Adapter]] = {"tensorflow": TensorFlow, "pytorch": PyTorch, "jax": Jax, "cupy": CuPy}

__all__ = ["ADAPTERS", "Adapter", "CuPy", "Jax", "PyTorch", "TensorFlow"]
