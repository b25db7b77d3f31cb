"""`jupyter_gpumem.batched`: run a function over batches of its inputs and return what the whole call
would have returned (story S5: evaluating 10000 images on a 1 GB card).

    accuracy = batched(model.evaluate, x_test, y_test, verbose=0)         # sample-weighted mean
    predictions = batched(model.predict, x_test, reduce="concat", verbose=0)

Without ``batch_size`` it takes the out-of-memory advisor's batch for inputs of this length, else it
tries the whole input; each time a batch runs out of GPU memory it retries that batch at the size
the advisor computes from the failure (at most half the last one). ``batch_size="auto"`` predicts the
largest batch that fits before running any (``largest_batch`` with ``fn`` on the first rows), and
retries the same way if one still runs out. An explicit number is used as given.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal

from IPython.core.interactiveshell import InteractiveShell
from IPython.display import DisplayHandle, display

from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import ngettext
from jupyter_gpumem.kernel.largest import measured
from jupyter_gpumem.kernel.oom import recognise
from jupyter_gpumem.kernel.runtime import current, runtime

Reduce = Callable[[list[Any], list[int]], Any]
_REDUCE_NAMES = ("mean", "sum", "concat")


def batched(
    fn: Callable[..., Any],
    *arrays: Any,
    batch_size: int | Literal["auto"] | None = None,
    reduce: str | Reduce = "mean",
    progress: bool = True,
    **kwargs: Any,
) -> Any:
    """``fn(*batches, **kwargs)`` for consecutive batches of ``arrays`` (sliced along their first
    dimension), combined by ``reduce``: "mean" (weighted by each batch's number of samples, so a
    shorter last batch counts for what it holds), "sum", "concat" (along the first dimension), or a
    callable ``reduce(results, sizes)``. Results may be numbers, arrays, tensors, or lists, tuples and
    dicts of them (Keras evaluate/predict). Bad arguments raise before any batch runs.

    ``batch_size``: a number is used as given; None takes the out-of-memory advisor's batch (else all);
    "auto" predicts the largest batch that fits with ``largest_batch``, ``fn`` run on the first rows at a
    few small sizes (where it cannot, it says why and goes on as with None)."""
    length = _check(fn, arrays, batch_size, reduce)
    combine = reduce if callable(reduce) else _REDUCERS[reduce]
    fixed = batch_size if batch_size != "auto" else None
    size = fixed or (_predicted(fn, arrays, kwargs, length) if batch_size == "auto" else None) or _advised(length)
    bar = _Progress(length) if progress else None
    results: list[Any] = []
    sizes: list[int] = []
    start = 0
    while start < length:
        stop = min(length, start + size)
        try:
            results.append(fn(*(a[start:stop] for a in arrays), **kwargs))
        except Exception as error:
            smaller = None if fixed else _after_oom(error, stop - start)
            if smaller is None:
                raise
            size = smaller
            continue
        sizes.append(stop - start)
        start = stop
        if bar:
            bar.show(start, len(sizes), size)
    return combine(results, sizes)


def _check(fn: Any, arrays: tuple[Any, ...], batch_size: Any, reduce: Any) -> int:
    if not callable(fn):
        raise TypeError(f"batched: the first argument must be the function to run, not {type(fn).__name__}.")
    if not arrays:
        raise ValueError("batched: give at least one array to split into batches, e.g. batched(fn, x, y).")
    lengths = []
    for position, array in enumerate(arrays, 1):
        try:
            lengths.append(len(array))
            array[0:0]
        except TypeError as error:
            raise TypeError(
                f"batched: input {position} ({type(array).__name__}) cannot be split into batches: {error}."
            ) from None
    if len(set(lengths)) > 1:
        raise ValueError(
            f"batched: the inputs have different lengths ({', '.join(map(str, lengths))}); they must have one "
            "sample per row each."
        )
    if (
        batch_size is not None
        and batch_size != "auto"
        and (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size <= 0)
    ):
        raise ValueError(
            f"batched: batch_size must be a whole number above 0 (or None or 'auto' to pick one), not {batch_size!r}."
        )
    if not callable(reduce) and reduce not in _REDUCE_NAMES:
        raise ValueError(
            f"batched: reduce={reduce!r} is not one of {', '.join(map(repr, _REDUCE_NAMES))} or a function "
            "reduce(results, sizes)."
        )
    if lengths[0] == 0:
        raise ValueError("batched: the inputs are empty; there is nothing to run.")
    return lengths[0]


def _predicted(fn: Callable[..., Any], arrays: tuple[Any, ...], kwargs: dict[str, Any], length: int) -> int | None:
    """largest_batch's answer for ``fn`` on the first rows, at most all of them; None (said) where it has none."""
    found = measured(
        lambda *rows: fn(*rows, **kwargs),
        lambda n: tuple(a[:n] for a in arrays),
        sizes=[n for n in (2, 4, 8, 16) if n <= length] or [length],
        at_most=length,
    )
    if not found.batch_size:
        said = _("batched: no batch size predicted, so it goes on without one.")
        print(f"{said} {found.problem}" if found.problem else said)
        return None
    return found.batch_size


def _advised(length: int) -> int:
    """The advisor's batch when its last out-of-memory error was for inputs of this length, else all."""
    loaded = current()
    advice = loaded.advisor.last if loaded is not None else None
    if advice is not None and advice.first_dim == length and advice.batch_size:
        return advice.batch_size
    return length


def _after_oom(error: Exception, size: int) -> int | None:
    """The batch size to retry with after ``error``, or None when it is not a GPU out-of-memory error
    (or the batch cannot get smaller)."""
    report = recognise(error)
    if report is None or size <= 1:
        return None
    advice = runtime().advisor.advise(report)
    fitted = advice.batch_size if advice.first_dim == size and advice.batch_size else size
    return max(1, min(fitted, size // 2))


# ---------------------------------------------------------------------- reducing


def _weighted_mean(results: list[Any], sizes: list[int]) -> Any:
    total = sum(sizes)
    return _zip(results, lambda values: sum(v * (n / total) for v, n in zip(values, sizes, strict=True)))


def _sum(results: list[Any], sizes: list[int]) -> Any:
    return _zip(results, lambda values: sum(values[1:], values[0]))


def _concat(results: list[Any], sizes: list[int]) -> Any:
    # A list of arrays is a structure (a model's outputs); a list of numbers is data to join.
    return _zip(
        results, _concatenate, structure=lambda item: _is_array(item) or isinstance(item, Mapping | list | tuple)
    )


def _zip(results: list[Any], leaf: Callable[[list[Any]], Any], structure: Callable[[Any], bool] = bool) -> Any:
    """Apply ``leaf`` across the batches' results, element by element through dicts, and through lists
    and tuples whose items are ``structure``."""
    first = results[0]
    if isinstance(first, Mapping):
        return {key: _zip([r[key] for r in results], leaf, structure) for key in first}
    if isinstance(first, list | tuple) and first and all(structure(item) for item in first):
        merged = [_zip([r[i] for r in results], leaf, structure) for i in range(len(first))]
        return tuple(merged) if isinstance(first, tuple) else merged
    return leaf(results)


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _concatenate(values: list[Any]) -> Any:
    """Join along the first dimension with the library the values come from (already imported: they exist)."""
    library = type(values[0]).__module__.split(".")[0]
    for adapter in ADAPTERS.values():
        if library in adapter.array_modules:
            return adapter().concatenate(values)
    if _is_array(values[0]) and "numpy" in sys.modules:
        return sys.modules["numpy"].concatenate(values, axis=0)
    if isinstance(values[0], list | tuple):
        return type(values[0])(item for value in values for item in value)
    raise TypeError(f"batched: reduce='concat' cannot join results of type {type(values[0]).__name__}.")


_REDUCERS: dict[str, Reduce] = {"mean": _weighted_mean, "sum": _sum, "concat": _concat}


# ---------------------------------------------------------------------- progress


class _Progress:
    """A one-line progress bar in the notebook output, updated in place."""

    WIDTH = 30

    def __init__(self, length: int):
        self.length = length
        self.handle: DisplayHandle | None = None

    def show(self, done: int, batches: int, size: int) -> None:
        filled = math.floor(self.WIDTH * done / self.length)
        text = ngettext(
            "batched: [{bar}] {done}/{length} samples, {batches} batch of up to {size}",
            "batched: [{bar}] {done}/{length} samples, {batches} batches of up to {size}",
            batches,
        ).format(
            bar="#" * filled + "." * (self.WIDTH - filled), done=done, length=self.length, batches=batches, size=size
        )
        if not InteractiveShell.initialized():
            return  # plain Python: no notebook to show it in
        plain = {"text/plain": text}
        if self.handle is None:
            self.handle = display(plain, raw=True, display_id=True)  # type: ignore[no-untyped-call]
        else:
            self.handle.update(plain, raw=True)  # type: ignore[no-untyped-call]
