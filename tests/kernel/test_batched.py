"""`jupyter_gpumem.batched` returns what the unbatched call would, with an uneven last batch: a real
Keras model on TensorFlow (CPU) and plain numpy functions; bad arguments fail before any work."""

from __future__ import annotations

import numpy as np
import pytest

from jupyter_gpumem import batched

N = 103  # batches of 10 leave a last batch of 3


@pytest.fixture(scope="module")
def model_and_data():
    import tensorflow as tf

    tf.keras.utils.set_random_seed(7)
    model = tf.keras.Sequential(
        [tf.keras.Input((6,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(3, "softmax")]
    )
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N, 6)).astype("float32")
    y = rng.integers(0, 3, size=N)
    return model, x, y


def test_keras_evaluate_in_batches_equals_the_whole_evaluation(model_and_data):
    model, x, y = model_and_data
    whole = model.evaluate(x, y, verbose=0)
    in_batches = batched(model.evaluate, x, y, batch_size=10, verbose=0, progress=False)
    assert isinstance(in_batches, list) and np.allclose(in_batches, whole, rtol=1e-5)
    as_dict = batched(model.evaluate, x, y, batch_size=10, verbose=0, return_dict=True, progress=False)
    expected = model.evaluate(x, y, verbose=0, return_dict=True)
    assert as_dict.keys() == expected.keys()
    assert all(np.isclose(as_dict[k], expected[k], rtol=1e-5) for k in expected)


def test_the_mean_is_weighted_by_samples_not_batches(model_and_data):
    model, x, y = model_and_data
    whole_loss = model.evaluate(x, y, verbose=0)[0]
    per_batch = [model.evaluate(x[i : i + 10], y[i : i + 10], verbose=0)[0] for i in range(0, N, 10)]
    naive = sum(per_batch) / len(per_batch)  # what the S5 blog did
    assert not np.isclose(naive, whole_loss, rtol=1e-5)  # so this test can tell the two apart
    assert np.isclose(batched(model.evaluate, x, y, batch_size=10, verbose=0, progress=False)[0], whole_loss, rtol=1e-5)


def test_keras_predict_in_batches_concatenates(model_and_data):
    model, x, _ = model_and_data
    predicted = batched(model.predict, x, batch_size=10, reduce="concat", verbose=0, progress=False)
    assert predicted.shape == (N, 3) and np.allclose(predicted, model.predict(x, verbose=0), atol=1e-6)


def test_plain_functions_with_every_reduce():
    x = np.arange(N, dtype="float64")
    assert np.isclose(batched(lambda a: (a**2).mean(), x, batch_size=7, progress=False), (x**2).mean())
    assert batched(lambda a: float(a.sum()), x, batch_size=7, reduce="sum", progress=False) == x.sum()
    doubled = batched(lambda a: a * 2, x, batch_size=7, reduce="concat", progress=False)
    assert np.array_equal(doubled, x * 2)
    assert batched(lambda a: [int(v) for v in a], x, batch_size=7, reduce="concat", progress=False) == list(range(N))
    two = batched(lambda a, b: (a + b, a - b), x, x, batch_size=7, reduce="concat", progress=False)
    assert isinstance(two, tuple) and np.array_equal(two[0], 2 * x) and np.array_equal(two[1], 0 * x)
    sizes_seen = batched(lambda a: None, x, batch_size=7, reduce=lambda results, sizes: sizes, progress=False)
    assert sizes_seen == [7] * 14 + [5]


def test_tensorflow_tensors_are_joined_by_tensorflow():
    import tensorflow as tf

    x = tf.range(N)
    joined = batched(lambda a: a + 1, x, batch_size=10, reduce="concat", progress=False)
    assert isinstance(joined, tf.Tensor) and joined.numpy().tolist() == list(range(1, N + 1))


class Calls:
    def __init__(self):
        self.count = 0

    def __call__(self, *args, **kwargs):
        self.count += 1
        return 0.0


@pytest.mark.parametrize(
    ("arrays", "options", "error", "words"),
    [
        ((np.zeros(5), np.zeros(6)), {}, ValueError, "different lengths (5, 6)"),
        ((np.zeros(5),), {"batch_size": 0}, ValueError, "batch_size must be a whole number above 0"),
        ((np.zeros(5),), {"batch_size": -3}, ValueError, "batch_size must be a whole number above 0"),
        ((np.zeros(5),), {"batch_size": 2.5}, ValueError, "not 2.5"),
        ((np.zeros(5),), {"batch_size": True}, ValueError, "not True"),
        ((np.zeros(5),), {"reduce": "median"}, ValueError, "reduce='median' is not one of 'mean', 'sum', 'concat'"),
        ((), {}, ValueError, "give at least one array"),
        ((np.zeros(0),), {}, ValueError, "the inputs are empty"),
        ((42,), {}, TypeError, "input 1 (int) cannot be split into batches"),
    ],
)
def test_bad_arguments_fail_before_any_work(arrays, options, error, words):
    fn = Calls()
    with pytest.raises(error, match=r"^batched: ") as raised:
        batched(fn, *arrays, **options)
    assert words in str(raised.value)
    assert fn.count == 0


def test_a_function_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="the first argument must be the function to run, not list"):
        batched([1, 2], np.zeros(3))


def oom_above(limit: int):
    """A function that runs out of GPU memory, as TensorFlow says it, when a batch has more than ``limit`` rows."""
    import tensorflow as tf

    seen = []

    def run(a):
        seen.append(len(a))
        if len(a) > limit:
            message = (
                f"OOM when allocating tensor with shape[{len(a)},1000] and type float on /device:GPU:0 by allocator"
            )
            raise tf.errors.ResourceExhaustedError(None, None, message)
        return float(a.sum())

    return run, seen


def test_without_a_batch_size_an_out_of_memory_batch_is_retried_smaller():
    run, seen = oom_above(30)
    x = np.ones(N)
    assert batched(run, x, reduce="sum", progress=False) == N
    assert seen[:3] == [103, 51, 25] and max(seen[3:]) <= 25 and sum(s for s in seen if s <= 30) == N


def test_an_explicit_batch_size_is_kept_and_its_out_of_memory_error_raised():
    import tensorflow as tf

    run, seen = oom_above(30)
    with pytest.raises(tf.errors.ResourceExhaustedError):
        batched(run, np.ones(N), batch_size=50, progress=False)
    assert seen == [50]


def test_other_errors_from_the_function_are_raised_as_they_are():
    def broken(a):
        raise KeyError("label")

    with pytest.raises(KeyError, match="label"):
        batched(broken, np.ones(N), progress=False)


@pytest.mark.kernel
def test_in_a_kernel_it_uses_the_advised_batch_and_shows_a_progress_bar(kernel_with):
    kernel = kernel_with("s5_small_card")
    kernel.run("%load_ext jupyter_gpumem\nimport numpy as np, jupyter_gpumem")
    message = (
        "OOM when allocating tensor with shape[10000,28,28,32] and type float on "
        "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
    )
    kernel.run(f"import tensorflow as tf\nraise tf.errors.ResourceExhaustedError(None, None, {message!r})")
    msg_id = kernel.client.execute(
        "sizes = jupyter_gpumem.batched(lambda a: None, np.zeros(10000), reduce=lambda r, s: s)\nprint(sizes)"
    )
    shown, updates, printed = [], [], ""
    while True:
        msg = kernel.client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "display_data":
            shown.append(content["data"]["text/plain"])
        elif kind == "update_display_data":
            updates.append(content["data"]["text/plain"])
        elif kind == "stream":
            printed += content["text"]
        elif kind == "status" and content["execution_state"] == "idle":
            break
    assert printed == f"{[1800] * 5 + [1000]}\n"  # the advisor's ~1800 for these 10000 samples
    assert len(shown) == 1 and len(updates) == 5
    assert updates[-1] == "batched: [##############################] 10000/10000 samples, 6 batches of up to 1800"
