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
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

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
_BYTES = re.compile(r"Out of memory while trying to allocate (?P<bytes>\d+) bytes")
_NODE = re.compile(r"\[\[\{\{node (?P<a>[^}]+)\}\}\]\]|\[\[Node: (?P<b>[^\s=]+)|Detected at node '?(?P<c>[^'\s]+)'?")
_OP = re.compile(r"\[Op:(?P<op>[^\]\s]+)")
_DEVICE = re.compile(r"device:(?P<kind>GPU|CPU):(?P<index>\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class OutOfMemory:
    framework: str  # "TensorFlow"
    error: str  # the exception's class name
    shape: tuple[int, ...] | None = None
    dtype: str | None = None  # as the framework names it ("float")
    bytes: int | None = None  # the tensor's size, when the shape and dtype (or the message) say it
    device: str | None = None  # "GPU:0", the framework's numbering
    node: str | None = None
    op: str | None = None

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
        allocated = _BYTES.search(message)
        size = int(allocated["bytes"]) if allocated else None
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


def recognise(error: BaseException) -> OutOfMemory | None:
    """The out-of-memory report for ``error`` or an exception it was raised from (``__cause__`` /
    ``__context__``), or None when none of them is a framework's GPU out-of-memory error."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = type(current)
        if kind.__name__ == "ResourceExhaustedError" and kind.__module__.startswith("tensorflow"):
            message = getattr(current, "message", None) or str(current)
            return parse_tensorflow(str(message), kind.__name__)
        current = current.__cause__ or current.__context__
    return None
