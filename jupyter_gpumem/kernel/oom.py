"""Recognise a framework's out-of-memory error and read what it says: the tensor that did not fit (shape,
dtype, bytes), the device, the node or op, and what the message states of the memory left. Pure text work:
nothing here imports a framework. tests/fixtures/oom/ holds the real messages, one per file, that this is
tested on: every era of each framework, every device.

TensorFlow's forms (all in `ResourceExhaustedError.message`):
- 0.x: ``OOM when allocating tensor with shapedim { size: 10000 } dim { size: 14 }`` then ``[[Node: X = Conv2D[...,
  _device="/job:localhost/replica:0/task:0/gpu:0"]...]]``; up to 1.4 ``... with shape[256,112,112,64]``: no type, and
  the device only in the node line.
- TF1: ``OOM when allocating tensor with shape[10000,28,28,32] and type float on
  /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc`` then ``[[Node: conv2d_1/... = Conv2D...]]``
  (1.12-1.13 ``[[{{node X}} = Conv2D...]]``, 1.13-2.5 ``[[node X (defined at file.py:66) ]]``; the oldest releases:
  ``tensor of shape [..]``); ``2 root error(s) found. (0) Resource exhausted: ...`` when several failed.
- TF2 graph: ``Graph execution error:`` ... ``Detected at node 'sequential/conv2d/Relu'`` ... the OOM line ...
  ``[[{{node sequential/conv2d/Relu}}]]`` ... ``[Op:__inference_test_function_1234]``
- TF2 eager: ``{{function_node __wrapped__MatMul_device_/job:localhost/replica:0/task:0/device:GPU:0}}
  OOM when allocating tensor with shape[50000,50000] and type float on ... [Op:MatMul]``
- XLA: ``Out of memory while trying to allocate 1003520000 bytes.``; no size at all: ``failed to allocate memory``.
- tensorflow-directml and intel-extension-for-tensorflow: the same, on ``device:DML:0`` / ``device:XPU:0``.

PyTorch's (``torch.OutOfMemoryError`` since 1.13; a plain ``RuntimeError`` before, and on Apple MPS, in
intel-extension-for-pytorch and in torch-directml, so the wording decides, not the class):
- 2.x: ``CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which
  12.56 GiB is free. ... Of the allocated memory 65.75 GiB is allocated by PyTorch, and 141.73 MiB is reserved
  by PyTorch but unallocated.`` (``HIP`` on ROCm, ``XPU`` on Intel GPUs; 2.1 spelled it ``total capacty``)
- 1.x: ``CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 15.78 GiB total capacity; ...; 1.19 MiB free;
  14.73 GiB reserved in total by PyTorch)`` (``... cached)`` up to 1.4)
- 0.x: ``cuda runtime error (2) : out of memory at /pytorch/torch/lib/THC/generic/THCStorage.cu:58``; outside the
  allocator: ``CUDA error: out of memory``
- MPS: ``MPS backend out of memory (MPS allocated: 9.57 GiB, other allocations: 17.35 GiB, max allowed:
  27.20 GiB). Tried to allocate 292.50 MiB on private pool.`` (``GB``/``MB`` before 2.2, also 1024-based)
- torch-directml: ``Could not allocate tensor with 4915840 bytes. There is not enough GPU video memory available!``

JAX's (``JaxRuntimeError``, formerly ``XlaRuntimeError``, before that a plain ``RuntimeError``; the message starts
``RESOURCE_EXHAUSTED:``, in the oldest jaxlib ``Resource exhausted:``): ``Out of memory while trying to allocate
1003520000 bytes.``, ``Out of memory allocating N bytes.``, ``Failed to allocate request for 3.73GiB (4000000000B) on
device ordinal 0``; on a TPU ``XLA:TPU compile permanent error. Ran out of memory in memory space hbm.`` or ``Error
allocating device buffer: Attempting to allocate 15.65G. That was not possible. There are 11.08G free.``

CuPy's (cupy/cuda/memory.pyx; ``cupy.cuda.memory.OutOfMemoryError``, a ``MemoryError``), exact sizes of its memory
pool: since 7.0 ``Out of memory allocating 25,600,000 bytes (allocated so far: 3,635,267,072 bytes).``, what the pool
held from the GPU, and with a pool limit set ``(allocated so far: ..., limit set to: 1,073,741,824 bytes).``; before 7.0
``out of memory to allocate 1073741824 bytes (total 12373894656 bytes)``, where the total counts the request too.
A raw allocation outside the pool fails with ``CUDARuntimeError: cudaErrorMemoryAllocation: out of memory`` (module
``cupy_backends.cuda.api.runtime``, ``cupy.cuda.runtime`` before 8.0), the same class as every other CUDA failure.
Neither names a device.
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
    r"OOM when allocating tensor (?:with|of) shape\s*"
    r"(?:\[(?P<shape>[\d,\s]*)\]|(?P<dims>(?:\s*dim\s*\{\s*size:\s*\d+\s*\})+))"
    r"(?:\s*and type (?P<dtype>\w+))?(?: on (?P<device>\S+?))?(?: by allocator (?P<allocator>\w+))?(?=[\s,.;\]]|$)"
)
_BYTES = re.compile(r"Out of memory (?:while trying to allocate|allocating) (?P<bytes>\d+) bytes|\((?P<b>\d+)B\)")
_NODE = re.compile(
    r"\[\[\{\{node (?P<a>[^}]+)\}\}|\[\[Node: (?P<b>[^\s=]+)|\[\[node (?P<d>[^\s(\]]+)"
    r"|Detected at node '?(?P<c>[^'\s]+)'?"
)
_OP = re.compile(r"\[Op:(?P<op>[^\]\s]+)")
# "/job:localhost/replica:0/task:0/device:GPU:0", and before TF 1.5 ".../task:0/gpu:0"
_DEVICE = re.compile(r"(?:device:|/)(?P<kind>GPU|CPU|DML|XPU):(?P<index>\d+)", re.IGNORECASE)
_TF_ACCELERATORS = {"DML": "DirectML", "XPU": "XPU"}  # tensorflow-directml, intel-extension-for-tensorflow


@dataclass(frozen=True)
class OutOfMemory:
    framework: str  # the framework's name for people, as its adapter spells it ("PyTorch")
    error: str  # the exception's class name
    shape: tuple[int, ...] | None = None
    dtype: str | None = None  # as the framework names it ("float")
    bytes: int | None = None  # the tensor's size, when the shape and dtype (or the message) say it
    device: str | None = None  # "GPU:0" (the framework's numbering), "CPU:0", "XPU:0", "DML:0", "MPS", "TPU"
    node: str | None = None
    op: str | None = None
    unused_pool: int | None = None  # reserved by the allocator but unallocated (PyTorch says it)
    rounded: bool = False  # `bytes` comes from a figure the framework printed rounded ("20.00 MiB"): about that
    free: int | None = None  # the memory the message says was free (MPS: its limit less what is allocated)
    # The kind of device when the message tells it: "CUDA", "ROCm", "MPS", "XPU", "DirectML", "TPU"; None: not told
    # (TensorFlow's and JAX's GPU messages read the same on NVIDIA and AMD).
    accelerator: str | None = None
    pool_held: int | None = None  # what the framework's memory pool held from the GPU (CuPy's "allocated so far")
    pool_limit: int | None = None  # the pool's own limit, when the message states one (CuPy's "limit set to")

    @property
    def gpu_index(self) -> int | None:
        """The framework's GPU number, when the message names a GPU."""
        if self.device and self.device.upper().startswith("GPU:"):
            return int(self.device[4:])
        return None

    @property
    def measurable(self) -> bool:
        """NVML can have figures for this device: an NVIDIA GPU, or a GPU the message does not say the kind of.
        Not for host memory, nor Apple, Intel, AMD or DirectML GPUs, nor TPUs: NVML sees only NVIDIA GPUs."""
        on_cpu = (self.device or "").upper().startswith("CPU")
        return not on_cpu and self.accelerator in (None, "CUDA")

    @property
    def pool_limit_reached(self) -> bool:
        """The request would have taken the pool past its own limit; else, with a limit stated, the GPU itself ran out
        below it (CuPy raises the same error, limit and all, when CUDA refuses the memory)."""
        if self.pool_limit is None or self.pool_held is None or self.bytes is None:
            return False
        return self.pool_held + self.bytes > self.pool_limit

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
        dims = re.findall(r"\d+", tensor["shape"]) if tensor["shape"] is not None else _dims(tensor["dims"])
        shape = tuple(int(d) for d in dims)
        dtype = tensor["dtype"]
        per_element = DTYPES.get(dtype) if dtype else None
        if per_element is not None:
            size = math.ceil(math.prod(shape) * per_element)
        device = _tf_device(tensor["device"] or "")
    else:
        size = _bytes(message)
    device = device or _tf_device(message)  # TF < 1.5 names it only in the node line: _device="/.../gpu:0"
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
        accelerator=_TF_ACCELERATORS.get(device.partition(":")[0]) if device else None,
    )


def _dims(text: str) -> list[str]:
    """TF 0.x: ``dim { size: 10000 } dim { size: 14 }``."""
    return re.findall(r"size:\s*(\d+)", text)


def _tf_device(text: str) -> str | None:
    found = _DEVICE.search(text)
    return f"{found['kind'].upper()}:{found['index']}" if found else None


def _bytes(message: str) -> int | None:
    found = _BYTES.search(message)
    return int(found["bytes"] or found["b"]) if found else None


# PyTorch's sizes as its allocators print them (c10's format_size): "0 bytes", "1024.00 KiB", "20.00 MiB"; the MPS
# allocator printed the same 1024-based sizes as "KB", "MB", "GB" until it was aligned with the others.
_TORCH_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_TORCH_UNITS |= {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
_TORCH_SIZE = r"(\d+(?:\.\d+)?) ?(bytes|[KMGT]i?B)\b"
# The wording, not the class, says it is an out-of-memory error, and on which kind of device.
_TORCH_WORDINGS = (
    (
        re.compile(r"\bCUDA out of memory|\bcuda runtime error \(2\) : out of memory|\bCUDA error: ?out of memory"),
        "CUDA",
    ),
    (re.compile(r"\bHIP out of memory|\bHIP error: ?out of memory"), "ROCm"),
    (re.compile(r"\bXPU out of memory"), "XPU"),
    (re.compile(r"\bMPS backend out of memory"), "MPS"),
    (re.compile(r"\bCould not allocate tensor with \d+ bytes\. There is not enough GPU video memory"), "DirectML"),
)
_TORCH_REQUEST = re.compile(r"Tried to allocate " + _TORCH_SIZE)
_TORCH_EXACT_REQUEST = re.compile(r"Could not allocate tensor with (\d+) bytes")  # torch-directml
_TORCH_FREE = re.compile(r"of which " + _TORCH_SIZE + r" is free|; " + _TORCH_SIZE + r" free;")
_TORCH_UNUSED = re.compile(_TORCH_SIZE + r" is reserved by PyTorch but unallocated")
_MPS_LIMIT = re.compile(rf"MPS allocated: {_TORCH_SIZE}, other allocations: {_TORCH_SIZE}, max allowed: {_TORCH_SIZE}")
_TORCH_DEVICE = re.compile(r"\bGPU\s+(?P<index>\d+)\b")
_TORCH_DEVICE_NAMES = {"CUDA": "GPU", "ROCm": "GPU", "XPU": "XPU"}  # PyTorch says "GPU 0" for each of them


def _torch_size(number: str, unit: str) -> int:
    return round(float(number) * _TORCH_UNITS[unit])


def _torch_sizes(found: re.Match[str] | None) -> list[int]:
    """The sizes a match holds, in order (groups come in number, unit pairs; unmatched ones are skipped)."""
    if found is None:
        return []
    groups = found.groups()
    return [_torch_size(n, u) for n, u in zip(groups[::2], groups[1::2], strict=True) if n is not None]


def pytorch_accelerator(message: str) -> str | None:
    """The kind of device PyTorch's message is about, or None when it is not one of its out-of-memory errors."""
    return next((kind for wording, kind in _TORCH_WORDINGS if wording.search(message)), None)


def parse_pytorch(message: str, error: str = "OutOfMemoryError") -> OutOfMemory:
    """PyTorch names the request's size and the GPU, never the tensor's shape."""
    accelerator = pytorch_accelerator(message)
    request = _TORCH_REQUEST.search(message)
    exact = _TORCH_EXACT_REQUEST.search(message)
    size = int(exact[1]) if exact else _torch_size(*request.groups()) if request else None
    free = next(iter(_torch_sizes(_TORCH_FREE.search(message))), None)
    mps = _torch_sizes(_MPS_LIMIT.search(message))
    if mps:
        allocated, other, limit = mps
        free = max(0, limit - allocated - other)
    unused = _torch_sizes(_TORCH_UNUSED.search(message))
    number = _TORCH_DEVICE.search(message)
    kind = _TORCH_DEVICE_NAMES.get(accelerator or "CUDA")
    device = "MPS" if accelerator == "MPS" else f"{kind}:{number['index']}" if kind and number else None
    return OutOfMemory(
        framework="PyTorch",
        error=error,
        bytes=size,
        device=device,
        unused_pool=unused[0] if unused else None,
        rounded=request is not None and exact is None and request[2] != "bytes",
        free=free,
        accelerator=accelerator,
    )


_XLA_ORDINAL = re.compile(r"device ordinal (?P<index>\d+)")
# XLA's status code leads the message; then it must be about memory (RESOURCE_EXHAUSTED also means other limits).
_XLA_OUT_OF_MEMORY = re.compile(
    r"\s*(?:RESOURCE_EXHAUSTED|Resource exhausted):.*?"
    r"(?:Out of memory|Failed to allocate|Ran out of memory|Attempting to (?:allocate|reserve))",
    re.DOTALL,
)
_XLA_TPU = re.compile(r"XLA:TPU|memory space hbm|_HBM\d")
# The TPU runtime's sizes ("15.65G", "530.00M"), taken as 1024-based like the rest of XLA's.
_TPU_UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_TPU_SIZE = r"(\d+(?:\.\d+)?)([BKMGT])\b"
_TPU_BUFFER = re.compile(rf"Attempting to allocate {_TPU_SIZE}\. That was not possible\. There are {_TPU_SIZE} free")


def _tpu_size(number: str, unit: str) -> int:
    return round(float(number) * _TPU_UNITS[unit])


def parse_jax(message: str, error: str = "JaxRuntimeError") -> OutOfMemory:
    ordinal = _XLA_ORDINAL.search(message)
    tpu = _XLA_TPU.search(message) is not None
    device = "TPU" if tpu else f"GPU:{ordinal['index']}" if ordinal else None
    buffer = _TPU_BUFFER.search(message)  # the TPU runtime: the request and the free memory, rounded
    size, free = (
        (_tpu_size(*buffer.groups()[:2]), _tpu_size(*buffer.groups()[2:])) if buffer else (_bytes(message), None)
    )
    return OutOfMemory(
        framework="JAX",
        error=error,
        bytes=size,
        device=device,
        rounded=buffer is not None,
        free=free,
        accelerator="TPU" if tpu else None,
    )


_CUPY_POOL = re.compile(
    r"Out of memory allocating (?P<size>[\d,]+) bytes"
    r"(?: \(allocated so far: (?P<held>[\d,]+) bytes(?:, limit set to: (?P<limit>[\d,]+) bytes)?\))?"
)
# Before 7.0 (7.0.0a1 with the limit): the total is what the pool held plus the request.
_CUPY_POOL_OLD = re.compile(
    r"out of memory to allocate (?P<size>\d+) bytes "
    r"\(total (?P<total>\d+) bytes(?:, limit set to (?P<limit>\d+) bytes)?\)"
)
_CUDA_OUT_OF_MEMORY = re.compile(r"cudaErrorMemoryAllocation:")  # CUDARuntimeError: the error's name leads
_SIZE_T_MINUS_ONE = 2**64 - 1  # the figure MemoryAsyncPool gives for "not counted" (a size_t set to -1)


def _number(text: str | None) -> int | None:
    return int(text.replace(",", "")) if text else None


def parse_cupy(message: str, error: str = "OutOfMemoryError") -> OutOfMemory:
    """CuPy states its pool's figures exactly, never a device or a shape."""
    size = held = limit = None
    if found := _CUPY_POOL.search(message):
        size, held, limit = _number(found["size"]), _number(found["held"]), _number(found["limit"])
    elif found := _CUPY_POOL_OLD.search(message):
        size, limit = int(found["size"]), _number(found["limit"])
        held = int(found["total"]) - size
    return OutOfMemory(
        framework="CuPy",
        error=error,
        bytes=size,
        accelerator="CUDA" if _CUDA_OUT_OF_MEMORY.match(message) else None,  # the CUDA runtime's own name
        pool_held=held if held != _SIZE_T_MINUS_ONE else None,
        pool_limit=limit,
    )


def recognise(error: BaseException) -> OutOfMemory | None:
    """The out-of-memory report for ``error`` or an exception it was raised from (``__cause__`` /
    ``__context__``), or None when none of them is a framework's out-of-memory error."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        report = _read(current)
        if report is not None:
            return report
        current = current.__cause__ or current.__context__
    return None


def _read(error: BaseException) -> OutOfMemory | None:
    kind = type(error)
    module, name = kind.__module__, kind.__name__
    if name == "ResourceExhaustedError" and module.startswith("tensorflow"):
        message = getattr(error, "message", None) or str(error)
        return parse_tensorflow(str(message), name)
    if name == "OutOfMemoryError" and module.startswith("torch"):
        return parse_pytorch(str(error), name)
    message = str(error)
    if module.startswith(("cupy.", "cupy_backends.")):
        if name == "OutOfMemoryError":
            return parse_cupy(message, name)
        # CuPy's class for every CUDA failure (an illegal address, no device...): the error's name decides.
        return parse_cupy(message, name) if name == "CUDARuntimeError" and _CUDA_OUT_OF_MEMORY.match(message) else None
    if name in ("JaxRuntimeError", "XlaRuntimeError"):  # XLA's class for every failure: the message decides
        return parse_jax(message, name) if _XLA_OUT_OF_MEMORY.match(message) else None
    if not isinstance(error, RuntimeError):
        return None
    # A generic class (PyTorch before 1.13, and always on MPS, in intel-extension-for-pytorch and torch-directml;
    # jaxlib before XlaRuntimeError): the message decides.
    if _XLA_OUT_OF_MEMORY.match(message):
        return parse_jax(message, name)
    if pytorch_accelerator(message):
        return parse_pytorch(message, name)
    return None
