"""The out-of-memory parser on recorded TensorFlow messages, and the advisor in a real kernel on the S5
stand-in scenario (story S5: a GT 730 with 979 MiB, 802 MiB in use)."""

from __future__ import annotations

import pytest

from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.kernel.advisor import diagnose, friendly
from jupyter_gpumem.kernel.oom import (
    DTYPES,
    OutOfMemory,
    parse_cupy,
    parse_jax,
    parse_pytorch,
    parse_tensorflow,
    recognise,
)
from jupyter_gpumem.units import MiB

S5_BYTES = 10000 * 28 * 28 * 32 * 4  # 957 MiB

TF1 = (
    "OOM when allocating tensor with shape[10000,28,28,32] and type float on "
    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
    '\t [[Node: conv2d_1/convolution = Conv2D[T=DT_FLOAT, data_format="NHWC", padding="VALID", '
    'strides=[1, 1, 1, 1], use_cudnn_on_gpu=true, _device="/job:localhost/replica:0/task:0/device:GPU:0"]'
    "(_arg_conv2d_1_input_0_0/_7, conv2d_1/kernel/read)]]\n"
    "Hint: If you want to see a list of allocated tensors when OOM happens, add report_tensor_allocations_upon_oom "
    "to RunOptions for current allocation info."
)
TF1_OLDEST = (
    "OOM when allocating tensor of shape [10000,28,28,32] and type float\n"
    "\t [[Node: conv2d_1/convolution = Conv2D[T=DT_FLOAT]]]"
)
TF2_GRAPH = (
    "Graph execution error:\n\n"
    "Detected at node 'sequential/conv2d/Relu' defined at (most recent call last):\n"
    '    File "<frozen runpy>", line 198, in _run_module_as_main\n'
    '    File "/usr/lib/python3/site-packages/keras/engine/training.py", line 1947, in test_step\n'
    "      y_pred = self(x, training=False)\n"
    "Node: 'sequential/conv2d/Relu'\n"
    "OOM when allocating tensor with shape[10000,28,28,32] and type float on "
    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
    "\t [[{{node sequential/conv2d/Relu}}]]\n"
    "Hint: If you want to see a list of allocated tensors when OOM happens, add report_tensor_allocations_upon_oom "
    "to RunOptions for current allocation info. This isn't available when running in Eager mode.\n"
    " [Op:__inference_test_function_1234]"
)
TF2_EAGER = (
    "{{function_node __wrapped__MatMul_device_/job:localhost/replica:0/task:0/device:GPU:1}} "
    "OOM when allocating tensor with shape[50000,50000] and type half on "
    "/job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc [Op:MatMul] name: "
)
XLA = (
    "Graph execution error:\n\nDetected at node StatefulPartitionedCall defined at (most recent call last):\n"
    "Out of memory while trying to allocate 1003520000 bytes.\n"
    "\t [[{{node StatefulPartitionedCall}}]] [Op:__inference_one_step_on_iterator_812]"
)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (TF1, OutOfMemory("TensorFlow", "E", (10000, 28, 28, 32), "float", S5_BYTES, "GPU:0", "conv2d_1/convolution")),
        (
            TF1_OLDEST,
            OutOfMemory("TensorFlow", "E", (10000, 28, 28, 32), "float", S5_BYTES, None, "conv2d_1/convolution"),
        ),
        (
            TF2_GRAPH,
            OutOfMemory(
                "TensorFlow",
                "E",
                (10000, 28, 28, 32),
                "float",
                S5_BYTES,
                "GPU:0",
                "sequential/conv2d/Relu",
                "__inference_test_function_1234",
            ),
        ),
        (TF2_EAGER, OutOfMemory("TensorFlow", "E", (50000, 50000), "half", 50000 * 50000 * 2, "GPU:1", None, "MatMul")),
        (
            XLA,
            OutOfMemory(
                "TensorFlow",
                "E",
                bytes=S5_BYTES,
                node="StatefulPartitionedCall",
                op="__inference_one_step_on_iterator_812",
            ),
        ),
        ("failed to allocate something, for reasons", OutOfMemory("TensorFlow", "E")),
    ],
    ids=["tf1", "tf1-oldest", "tf2-graph", "tf2-eager", "xla", "unknown"],
)
def test_every_known_message_form_is_read(message, expected):
    assert parse_tensorflow(message, "E") == expected


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_dtype_tensorflow_names_gives_the_size(dtype):
    report = parse_tensorflow(f"OOM when allocating tensor with shape[64,1024] and type {dtype} on /device:GPU:0 by")
    assert report.dtype == dtype
    per_element = DTYPES[dtype]
    assert report.bytes == (None if per_element is None else int(64 * 1024 * per_element))


def test_every_dtype_is_sized_as_tensorflow_sizes_it():
    import tensorflow as tf

    for dtype, per_element in DTYPES.items():
        if per_element is not None and per_element < 1:
            continue  # sub-byte types: see the test below
        size = tf.as_dtype(dtype).size
        assert per_element == (size or None), dtype  # TensorFlow says 0 for those without a fixed size


def test_a_shape_written_with_spaces_is_read():
    report = parse_tensorflow(
        "OOM when allocating tensor with shape[10000, 28, 28, 32] and type float on /device:GPU:0"
    )
    assert (report.shape, report.bytes) == ((10000, 28, 28, 32), S5_BYTES)


def test_the_device_the_tensor_was_allocated_on_wins_over_other_devices_the_message_names():
    message = (
        "{{function_node __wrapped__ConcatV2_device_/job:localhost/replica:0/task:0/device:GPU:0}} "
        "OOM when allocating tensor with shape[1024] and type float on /job:localhost/replica:0/task:0/device:GPU:1 "
        "by allocator GPU_1_bfc [Op:ConcatV2]"
    )
    report = parse_tensorflow(message)
    assert (report.device, report.gpu_index) == ("GPU:1", 1)


def test_without_a_device_on_the_tensor_line_the_device_elsewhere_in_the_message_is_used():
    message = TF1_OLDEST.replace("Conv2D[T=DT_FLOAT]", 'Conv2D[T=DT_FLOAT, _device="/job:localhost/device:gpu:1"]')
    assert parse_tensorflow(message).device == "GPU:1"


def test_only_a_gpu_gives_a_gpu_number():
    assert OutOfMemory("TensorFlow", "E", device="GPU:3").gpu_index == 3
    assert OutOfMemory("TensorFlow", "E", device="CPU:0").gpu_index is None
    assert OutOfMemory("TensorFlow", "E").gpu_index is None


def test_a_report_names_tensorflows_error_and_numpys_name_for_half():
    report = parse_tensorflow(TF2_EAGER)
    assert (report.error, report.dtype_name) == ("ResourceExhaustedError", "float16 (half)")


def error(module, name, message):
    """An exception of a framework's class, by its module and name (recognise() imports no framework)."""
    return type(name, (Exception,), {"__module__": module})(message)


def test_another_librarys_out_of_memory_error_is_not_taken_for_pytorchs():
    cupys = recognise(error("cupy.cuda.memory", "OutOfMemoryError", "Out of memory allocating 1,024 bytes"))
    assert (cupys.framework, cupys.bytes) == ("CuPy", 1024)
    assert recognise(error("torch.cuda", "CudaError", "CUDA error: out of memory")) is None
    assert recognise(error("torch.cuda", "OutOfMemoryError", TORCH1)).bytes == 2 * MiB


@pytest.mark.parametrize("name", ["JaxRuntimeError", "XlaRuntimeError"])
def test_only_jaxs_resource_exhausted_errors_are_recognised_under_either_class_name(name):
    exhausted = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1003520000 bytes."
    assert recognise(error("jaxlib.xla_extension", name, exhausted)).bytes == 1003520000
    assert recognise(error("jaxlib.xla_extension", name, "INTERNAL: ptxas exited")) is None
    assert recognise(error("my_module", "ValueError", exhausted)) is None


def test_an_out_of_memory_error_raised_while_handling_another_is_found():
    try:
        try:
            raise error("torch.cuda", "OutOfMemoryError", TORCH2)
        except Exception:
            raise RuntimeError("the training loop failed")  # noqa: B904 - implicit chaining is the point
    except RuntimeError as outer:
        assert outer.__cause__ is None and outer.__context__ is not None
        assert recognise(outer).framework == "PyTorch"


@pytest.mark.parametrize(("dtype", "elements", "size"), [("int4", 7, 4), ("uint4", 1, 1), ("int4", 1001, 501)])
def test_a_sub_byte_tensor_of_odd_length_needs_its_last_half_byte_rounded_up(dtype, elements, size):
    report = parse_tensorflow(f"OOM when allocating tensor with shape[{elements}] and type {dtype} on /device:GPU:0 by")
    assert report.bytes == size


def test_scalars_and_names_for_people():
    report = parse_tensorflow("OOM when allocating tensor with shape[] and type double on /device:GPU:0 by allocator X")
    assert (report.shape, report.bytes, report.dtype_name) == ((), 8, "float64 (double)")
    assert parse_tensorflow(TF1).dtype_name == "float32 (float)"
    assert parse_tensorflow(TF1).bytes // MiB == 957


@pytest.mark.parametrize(
    ("n", "friendly_n"), [(1849, 1800), (10000, 10000), (123, 120), (99, 99), (5, 5), (26_431, 26_000)]
)
def test_friendly_rounds_down_to_two_significant_digits(n, friendly_n):
    assert friendly(n) == friendly_n


def test_a_real_resource_exhausted_error_is_recognised_also_behind_another_exception():
    import tensorflow as tf

    oom = tf.errors.ResourceExhaustedError(None, None, TF1)
    assert recognise(oom).shape == (10000, 28, 28, 32)
    try:
        try:
            raise oom
        except tf.errors.ResourceExhaustedError as error:
            raise RuntimeError("evaluation failed") from error
    except RuntimeError as wrapped:
        assert recognise(wrapped).node == "conv2d_1/convolution"
    assert recognise(ValueError("OOM when allocating tensor with shape[1] and type float")) is None
    assert recognise(tf.errors.InvalidArgumentError(None, None, "bad shape")) is None


TORCH2 = (
    "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 12.56 GiB "
    "is free. Including non-PyTorch memory, this process has 66.54 GiB memory in use. Of the allocated memory "
    "65.75 GiB is allocated by PyTorch, and 141.73 MiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation."
)
TORCH1 = (
    "CUDA out of memory. Tried to allocate 2.00 MiB (GPU 1; 15.78 GiB total capacity; 14.56 GiB already "
    "allocated; 1.19 MiB free; 14.73 GiB reserved in total by PyTorch)"
)
JAX_FORMS = {
    "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1003520000 bytes.": (1003520000, None),
    "RESOURCE_EXHAUSTED: Failed to allocate request for 3.73GiB (4000000000B) on device ordinal 1": (
        4000000000,
        "GPU:1",
    ),
    "RESOURCE_EXHAUSTED: Out of memory allocating 40000000000000 bytes.": (40000000000000, None),
}


def test_pytorch_messages_give_the_request_the_gpu_and_the_unused_pool():
    assert parse_pytorch(TORCH2) == OutOfMemory(
        "PyTorch",
        "OutOfMemoryError",
        bytes=20 * 1024 * MiB,
        device="GPU:0",
        unused_pool=round(141.73 * MiB),
        rounded=True,  # "20.00 GiB": about
        free=round(12.56 * 1024 * MiB),
        accelerator="CUDA",
    )
    assert parse_pytorch(TORCH1) == OutOfMemory(
        "PyTorch",
        "OutOfMemoryError",
        bytes=2 * MiB,
        device="GPU:1",
        rounded=True,
        free=round(1.19 * MiB),
        accelerator="CUDA",
    )


@pytest.mark.parametrize("message", JAX_FORMS)
def test_jax_messages_give_the_request(message):
    size, device = JAX_FORMS[message]
    assert parse_jax(message) == OutOfMemory("JAX", "JaxRuntimeError", bytes=size, device=device)


def test_real_pytorch_and_jax_errors_are_recognised():
    import jax.numpy as jnp
    import torch

    assert recognise(torch.cuda.OutOfMemoryError(TORCH2)).framework == "PyTorch"
    # PyTorch before 1.13 raised a plain RuntimeError: recognised by its message.
    assert recognise(RuntimeError("CUDA out of memory. Tried to allocate 2.00 MiB")).framework == "PyTorch"
    try:
        jnp.zeros((10**13,), dtype=jnp.float32).block_until_ready()  # 40 TB: refused on the CPU as on a GPU
    except Exception as error:  # jax.errors.JaxRuntimeError
        report = recognise(error)
    assert report == OutOfMemory("JAX", "JaxRuntimeError", bytes=4 * 10**13)
    try:
        jnp.ones(3).reshape(4)
    except Exception as error:
        assert recognise(error) is None


CUPY_FORMS = {
    # CuPy 7 and later: exact figures with thousands separators; "allocated so far" is what the pool held
    "Out of memory allocating 25,600,000 bytes (allocated so far: 3,635,267,072 bytes).": (
        25_600_000,
        3_635_267_072,
        None,
    ),
    "Out of memory allocating 805,306,368 bytes (allocated so far: 536,870,912 bytes, limit set to: 1,073,741,824 "
    "bytes).": (805_306_368, 536_870_912, 1 << 30),
    "Out of memory allocating 512 bytes": (512, None, None),  # MemoryAsyncPool without its statistics
    # ... which in CuPy 10 to 14 pass a size_t set to -1 for "not counted"
    "Out of memory allocating 512 bytes (allocated so far: 18,446,744,073,709,551,615 bytes).": (512, None, None),
    # before 7.0 the total counts the request; 7.0.0a1 alone stated the limit in this form
    "out of memory to allocate 1200000000 bytes (total 7204800000 bytes)": (1_200_000_000, 6_004_800_000, None),
    "out of memory to allocate 1024 bytes (total 5120 bytes, limit set to 4096 bytes)": (1024, 4096, 4096),
}


@pytest.mark.parametrize("message", CUPY_FORMS)
def test_cupy_messages_give_the_exact_request_what_the_pool_held_and_its_limit(message):
    size, held, limit = CUPY_FORMS[message]
    assert parse_cupy(message) == OutOfMemory(
        "CuPy", "OutOfMemoryError", bytes=size, pool_held=held, pool_limit=limit
    )  # no device, no shape: CuPy names neither


def test_cupys_pool_limit_is_reached_only_when_the_request_would_take_the_pool_past_it():
    reached = parse_cupy(next(m for m, (_, _, limit) in CUPY_FORMS.items() if limit == 1 << 30))
    assert reached.pool_limit_reached  # 512 MiB held + 768 MiB asked > 1024 MiB
    below = parse_cupy(
        "Out of memory allocating 1,024 bytes (allocated so far: 2,048 bytes, limit set to: 4,096 bytes)."
    )
    assert not below.pool_limit_reached  # CUDA refused it below the limit: the GPU itself was full
    assert not parse_cupy("Out of memory allocating 25,600,000 bytes (allocated so far: 0 bytes).").pool_limit_reached


def test_real_cupy_errors_are_recognised_by_their_class_and_the_cuda_errors_name():
    from cupy.cuda.memory import OutOfMemoryError
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    # CuPy builds the message itself from its figures: today's wording, read back exactly.
    report = recognise(OutOfMemoryError(805_306_368, 536_870_912, 1 << 30))
    assert (report.bytes, report.pool_held, report.pool_limit, report.device) == (
        805_306_368,
        536_870_912,
        1 << 30,
        None,
    )
    assert recognise(OutOfMemoryError(3 * 10**12, 0)).pool_limit is None
    assert recognise(CUDARuntimeError(2)) == OutOfMemory("CuPy", "CUDARuntimeError", accelerator="CUDA")
    for status in (1, 100, 700):  # an invalid value, no device, an illegal address
        assert recognise(CUDARuntimeError(status)) is None, str(CUDARuntimeError(status))


def test_a_cuda_error_that_only_mentions_memory_allocation_gets_no_diagnosis():
    hostile = "cudaErrorIllegalAddress: an illegal memory access was encountered (after cudaErrorMemoryAllocation:)"
    assert recognise(error("cupy_backends.cuda.api.runtime", "CUDARuntimeError", hostile)) is None
    assert recognise(RuntimeError("cudaErrorMemoryAllocation: out of memory")) is None  # not CuPy's class
    assert recognise(error("mycupy.memory", "OutOfMemoryError", "Out of memory allocating 1,024 bytes")) is None
    assert recognise(error("cupy.cuda.memory", "OutOfMemoryError", "something else")) == OutOfMemory(
        "CuPy", "OutOfMemoryError"
    )  # CuPy's own class: a report even when the wording is unknown, as for TensorFlow's


def no_gpu_figures() -> Reading:
    return Reading(Snapshot(0.0, 1, ()), State(Policy(), None, (), True, None), False, {}, {})


def test_cupys_pool_limit_reached_is_said_with_how_to_raise_it_or_free_the_pool():
    lines = diagnose(parse_cupy(next(iter(m for m in CUPY_FORMS if "limit set to:" in m))), no_gpu_figures(), [], None)
    assert lines.lines == (
        "jupyter-gpumem: CuPy ran out of GPU memory (OutOfMemoryError).",
        "  The allocation that did not fit: 768 MiB.",  # exact: no "about"
        "  CuPy's memory pool held 512 MiB of its limit of 1024 MiB: this allocation would have gone past it.",
        "  GPU memory figures: not available (no driver, or the GPU could not be told).",
        "  Fix: run the work in smaller batches, e.g. jupyter_gpumem.batched(model.evaluate, x, y, batch_size=64), "
        "and halve it until it fits.",
        "  Also likely: CuPy's memory pool reached its limit (1024 MiB): ask for a larger budget with %gpumem (CuPy "
        "takes a new pool limit at once), or del arrays you no longer need and give the pool's free blocks back with "
        "%gpumem free.",
    )
    assert lines.batch_size is None  # CuPy gives no shape, so no batch is claimed


def test_cupy_below_its_limit_or_without_one_says_what_its_pool_held_and_no_limit_cause():
    below = parse_cupy(
        "Out of memory allocating 1,048,576 bytes (allocated so far: 0 bytes, limit set to: 4,194,304 bytes)."
    )
    text = "\n".join(diagnose(below, no_gpu_figures(), [], None).lines)
    assert "  CuPy's memory pool held 0 bytes, within its limit of 4 MiB: the GPU itself ran out first." in text
    assert "reached its limit" not in text
    text = "\n".join(diagnose(parse_cupy(next(iter(CUPY_FORMS))), no_gpu_figures(), [], None).lines)
    assert "  CuPy's memory pool held 3467 MiB from the GPU." in text and "limit" not in text


def test_cupys_raw_cuda_error_says_it_may_be_pinned_host_memory():
    lines = diagnose(
        parse_cupy("cudaErrorMemoryAllocation: out of memory", "CUDARuntimeError"), no_gpu_figures(), [], None
    )
    assert lines.lines[:2] == (
        "jupyter-gpumem: CuPy ran out of GPU memory (CUDARuntimeError).",
        "  CUDA refused an allocation outside CuPy's memory pool, of a size the message does not say: GPU memory, or "
        "pinned host memory.",
    )


# ---------------------------------------------------------------------- in a real kernel

RAISE = "import tensorflow as tf\nraise tf.errors.ResourceExhaustedError(None, None, {message!r})"


@pytest.mark.kernel
def test_s5_the_advice_follows_the_traceback_with_the_users_numbers(kernel_with):
    kernel = kernel_with("s5_small_card")
    kernel.run("%load_ext jupyter_gpumem")
    reply = kernel.run(RAISE.format(message=TF1))
    assert reply.status == "error" and "ResourceExhaustedError" in reply.error  # the traceback is untouched
    out = reply.stdout
    assert out.startswith("jupyter-gpumem: TensorFlow ran out of GPU memory (ResourceExhaustedError).")
    assert "The tensor that did not fit: shape [10000, 28, 28, 32], float32 (float), 957 MiB, on GPU:0." in out
    assert "In node conv2d_1/convolution." in out
    assert "GPU 0 GeForce GT 730: this kernel holds 802 MiB as nvidia-smi counts it" in out
    assert "802 MiB used of 979 MiB" in out
    assert "No budget set: 177 MiB of the GPU is free." in out
    assert "Fix: a batch of at most ~1800 of 10000 fits in the 177 MiB free (98 KiB per sample in this tensor)" in out
    assert "growth is off" in out
    assert "other processes hold" not in out  # nobody else is on this card
    assert (
        kernel.run(
            "print(__import__('jupyter_gpumem.kernel.runtime').kernel.runtime.runtime().advisor.last.batch_size)"
        ).stdout
        == "1800\n"
    )


@pytest.mark.kernel
def test_within_a_budget_the_free_part_of_the_budget_is_what_counts(kernel_with):
    kernel = kernel_with("s5_small_card")
    kernel.run("%load_ext jupyter_gpumem\n%gpumem limit=900MiB strict=off")
    out = kernel.run(RAISE.format(message=TF2_GRAPH)).stdout
    assert "Budget: 900 MiB (92% of the GPU); 98 MiB of it is free." in out
    assert "Fix: a batch of at most ~1000 of 10000 fits in the 98 MiB free" in out
    assert "In node sequential/conv2d/Relu / op __inference_test_function_1234." in out
    assert "the budget is too small for this tensor alone (900 MiB)" in out


@pytest.mark.kernel
def test_unrelated_errors_and_unknown_forms(kernel_with):
    kernel = kernel_with("s5_small_card")
    kernel.run("%load_ext jupyter_gpumem")
    unrelated = kernel.run("raise ValueError('OOM when allocating tensor with shape[1] and type float')")
    assert unrelated.status == "error" and unrelated.stdout == "" and unrelated.stderr == ""
    unknown = kernel.run(RAISE.format(message="CUDA_ERROR_OUT_OF_MEMORY: out of memory")).stdout
    assert "The message does not say which tensor did not fit." in unknown
    assert "No budget set: 177 MiB of the GPU is free." in unknown
    assert "Fix: run the work in smaller batches" in unknown


@pytest.mark.kernel
def test_without_a_driver_the_advice_still_names_the_tensor(kernel_with):
    kernel = kernel_with("no_driver")
    kernel.run("%load_ext jupyter_gpumem")
    out = kernel.run(RAISE.format(message=TF2_EAGER)).stdout
    assert "shape [50000, 50000], float16 (half), 4768 MiB, on GPU:1." in out
    assert "GPU memory figures: not available" in out


@pytest.mark.kernel
def test_pytorch_out_of_memory_gets_figures_and_the_fragmentation_cause(kernel_with):
    kernel = kernel_with("s5_small_card")
    kernel.run("%load_ext jupyter_gpumem")
    message = TORCH2.replace("20.00 GiB", "200.00 MiB").replace("141.73 MiB", "150.00 MiB")
    reply = kernel.run(f"import torch\nraise torch.cuda.OutOfMemoryError({message!r})")
    assert reply.status == "error" and "OutOfMemoryError" in reply.error
    out = reply.stdout
    assert out.startswith("jupyter-gpumem: PyTorch ran out of GPU memory (OutOfMemoryError).")
    assert "The allocation that did not fit: about 200 MiB." in out
    assert "No budget set: 177 MiB of the GPU is free." in out
    assert "Fix: run the work in smaller batches" in out
    assert (
        "Also likely: PyTorch holds 150 MiB reserved but unallocated, in pieces too small for this request "
        "(fragmentation): torch.cuda.empty_cache() gives them back; %gpumem growth=on before CUDA starts "
        "(expandable segments) avoids it."
    ) in out
    assert "growth is off" not in out  # PyTorch takes no pool at start


@pytest.mark.kernel
def test_a_real_jax_resource_exhausted_error_gets_the_advice(kernel_with):
    kernel = kernel_with("s5_small_card")
    kernel.run("%load_ext jupyter_gpumem")
    reply = kernel.run("import jax.numpy as jnp\njnp.zeros((10**13,), dtype=jnp.float32).block_until_ready()")
    assert reply.status == "error" and "RESOURCE_EXHAUSTED" in reply.error
    assert reply.stdout.startswith("jupyter-gpumem: JAX ran out of GPU memory (JaxRuntimeError).")
    assert "The allocation that did not fit: 38146973 MiB." in reply.stdout
    assert "growth is off, so JAX reserved its pool when it started" in reply.stdout


@pytest.mark.kernel
def test_a_real_cupy_out_of_memory_error_at_its_pool_limit_gets_the_advice(kernel_with):
    kernel = kernel_with("s5_small_card")
    kernel.run("%load_ext jupyter_gpumem")
    reply = kernel.run("import cupy\nraise cupy.cuda.memory.OutOfMemoryError(300 * 2**20, 600 * 2**20, 800 * 2**20)")
    assert reply.status == "error" and "OutOfMemoryError" in reply.error  # the traceback is untouched
    out = reply.stdout
    assert out.startswith("jupyter-gpumem: CuPy ran out of GPU memory (OutOfMemoryError).")
    assert "The allocation that did not fit: 300 MiB." in out
    assert "CuPy's memory pool held 600 MiB of its limit of 800 MiB" in out
    assert "GPU 0 GeForce GT 730: this kernel holds 802 MiB as nvidia-smi counts it" in out  # no device named: its GPU
    assert "Also likely: CuPy's memory pool reached its limit (800 MiB)" in out
    assert "growth is off" not in out  # CuPy takes no pool at start
