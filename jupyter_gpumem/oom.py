"""Recognise a framework's GPU out-of-memory error and read what it says: the tensor that did not fit
(shape, dtype, bytes), the device, the node or op. Pure text work: nothing here imports a framework.

TensorFlow's forms (all in `ResourceExhaustedError.message`):
- TF1: ``OOM when allocating tensor with shape[10000,28,28,32] and type float on
  /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc`` then ``[[Node: conv2d_1/... = Conv2D...]]``
  (the oldest releases: ``tensor of shape [..]``)
- TF2 graph: ``Graph execution error:`` ... ``Detected at node 'sequential/conv2d/Relu'`` ... the OOM line ...
  ``[[{{node sequential/conv2d/Relu}}]]`` ... ``[Op:__inference_test_function_1234]``
- TF2 eager: ``{{function_node __wrapped__MatMul_device_/job:localhost/replica:0/task:0/device:GPU:0}}
  OOM when allocating tensor with shape[50000,50000] and type float on ... [Op:MatMul]``
- XLA: ``Out of memory while trying to allocate 1003520000 bytes.``

PyTorch's (``torch.OutOfMemoryError``, raised as ``torch.cuda.OutOfMemoryError``):
- 2.x: ``CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which
  12.56 GiB is free. ... Of the allocated memory 65.75 GiB is allocated by PyTorch, and 141.73 MiB is reserved
  by PyTorch but unallocated.``
- 1.x: ``CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 15.78 GiB total capacity; ...)``

JAX's (``JaxRuntimeError``, formerly ``XlaRuntimeError``, whose message starts ``RESOURCE_EXHAUSTED:``):
``Out of memory while trying to allocate 1003520000 bytes.``, ``Out of memory allocating N bytes.``, or
``Failed to allocate request for 3.73GiB (4000000000B) on device ordinal 0``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .units import parse_bytes

# Bytes per element for every dtype TensorFlow names in its messages (DataTypeString); None: no fixed size.
DTYPES: dict[str, float | None] = {
    "float": 4,
    "half": 2,
    "bfloat16": 2,
    "double": 8,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
    "qint8": 1,
    "quint8": 1,
    "qint16": 2,
    "quint16": 2,
    "qint32": 4,
    "float8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1,
    "float8_e4m3b11fnuz": 1,
    "float8_e5m2fnuz": 1,
    "int4": 0.5,
    "uint4": 0.5,
    "string": None,
    "resource": None,
    "variant": None,
}
# What users call them (NumPy's names), where TensorFlow's differ.
NUMPY_NAMES = {"float": "float32", "half": "float16", "double": "float64"}

_TENSOR = re.compile(
    r"OOM when allocating tensor (?:with|of) shape\s*\[(?P<shape>[\d,\s]*)\]\s*and type (?P<dtype>\w+)"
    r"(?: on (?P<device>\S+?))?(?: by allocator (?P<allocator>\w+))?(?=[\s,.;\]]|$)"
)
_BYTES = re.compile(r"Out of memory (?:while trying to allocate|allocating) (?P<bytes>\d+) bytes|\((?P<b>\d+)B\)")
_NODE = re.compile(r"\[\[\{\{node (?P<a>[^}]+)\}\}\]\]|\[\[Node: (?P<b>[^\s=]+)|Detected at node '?(?P<c>[^'\s]+)'?")
_OP = re.compile(r"\[Op:(?P<op>[^\]\s]+)")
_DEVICE = re.compile(r"device:(?P<kind>GPU|CPU):(?P<index>\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class OutOfMemory:
    framework: str  # "TensorFlow", "PyTorch", "JAX"
    error: str  # the exception's class name
    shape: tuple[int, ...] | None = None
    dtype: str | None = None  # as the framework names it ("float")
    bytes: int | None = None  # the tensor's size, when the shape and dtype (or the message) say it
    device: str | None = None  # "GPU:0", the framework's numbering
    node: str | None = None
    op: str | None = None
    unused_pool: int | None = None  # reserved by the allocator but unallocated (PyTorch says it)

    @property
    def gpu_index(self) -> int | None:
        """The framework's GPU number, when the message names a GPU."""
        if self.device and self.device.upper().startswith("GPU:"):
            return int(self.device[4:])
        return None

    @property
    def dtype_name(self) -> str | None:
        if self.dtype is None:
            return None
        numpy = NUMPY_NAMES.get(self.dtype)
        return f"{numpy} ({self.dtype})" if numpy else self.dtype


def parse_tensorflow(message: str, error: str = "ResourceExhaustedError") -> OutOfMemory:
    """Whatever the message tells; fields it does not give stay None (an unknown form still yields a report)."""
    shape = dtype = size = device = None
    tensor = _TENSOR.search(message)
    if tensor:
        shape = tuple(int(d) for d in tensor["shape"].replace(" ", "").split(",") if d)
        dtype = tensor["dtype"]
        per_element = DTYPES.get(dtype)
        if per_element is not None:
            size = math.ceil(math.prod(shape) * per_element)
        if tensor["device"]:
            found = _DEVICE.search(tensor["device"])
            device = f"{found['kind'].upper()}:{found['index']}" if found else None
    else:
        size = _bytes(message)
    if device is None:
        found = _DEVICE.search(message)
        device = f"{found['kind'].upper()}:{found['index']}" if found else None
    node = _NODE.search(message)
    op = _OP.search(message)
    return OutOfMemory(
        framework="TensorFlow",
        error=error,
        shape=shape,
        dtype=dtype,
        bytes=size,
        device=device,
        node=next((g for g in node.groups() if g), None) if node else None,
        op=op["op"] if op else None,
    )


_TORCH_SIZE = r"(\d+(?:\.\d+)?\s?[KMGT]iB)"
_TORCH_REQUEST = re.compile(r"Tried to allocate " + _TORCH_SIZE)
_TORCH_UNUSED = re.compile(_TORCH_SIZE + r" is reserved by PyTorch but unallocated")
_TORCH_DEVICE = re.compile(r"\bGPU (?P<index>\d+)\b")
_XLA_ORDINAL = re.compile(r"device ordinal (?P<index>\d+)")


def _bytes(message: str) -> int | None:
    found = _BYTES.search(message)
    return int(found["bytes"] or found["b"]) if found else None


def parse_pytorch(message: str, error: str = "OutOfMemoryError") -> OutOfMemory:
    """PyTorch names the request's size and the GPU, never the tensor's shape."""
    request = _TORCH_REQUEST.search(message)
    unused = _TORCH_UNUSED.search(message)
    device = _TORCH_DEVICE.search(message)
    return OutOfMemory(
        framework="PyTorch",
        error=error,
        bytes=parse_bytes(request[1]) if request else None,
        device=f"GPU:{device['index']}" if device else None,
        unused_pool=parse_bytes(unused[1]) if unused else None,
    )


def parse_jax(message: str, error: str = "JaxRuntimeError") -> OutOfMemory:
    ordinal = _XLA_ORDINAL.search(message)
    return OutOfMemory(
        framework="JAX", error=error, bytes=_bytes(message), device=f"GPU:{ordinal['index']}" if ordinal else None
    )


def recognise(error: BaseException) -> OutOfMemory | None:
    """The out-of-memory report for ``error`` or an exception it was raised from (``__cause__`` /
    ``__context__``), or None when none of them is a framework's GPU out-of-memory error."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = type(current)
        module, name = kind.__module__, kind.__name__
        if name == "ResourceExhaustedError" and module.startswith("tensorflow"):
            message = getattr(current, "message", None) or str(current)
            return parse_tensorflow(str(message), name)
        if name == "OutOfMemoryError" and module.startswith("torch"):
            return parse_pytorch(str(current), name)
        if name in ("JaxRuntimeError", "XlaRuntimeError") and str(current).startswith("RESOURCE_EXHAUSTED"):
            return parse_jax(str(current), name)
        current = current.__cause__ or current.__context__
    return None
