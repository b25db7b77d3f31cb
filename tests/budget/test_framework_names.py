"""Several frameworks' names (budget/framework_interface.py ``label``) are a code with the names as a list: each
surface words them in its language ("TensorFlow、PyTorch と JAX"), while the English the sentence fields and the
overhead cache key by stays what it was ("TensorFlow, PyTorch and JAX")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_gpumem import i18n
from jupyter_gpumem.budget.framework_interface import label
from jupyter_gpumem.budget.overhead import Calibration, cache_key, estimate
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.units import MiB
from jupyter_gpumem.words import CATALOGUE, Said, word_wire

GPU = "GPU-1"


class Named:
    """What label reads of a framework: its name and version."""

    def __init__(self, name: str, version: str = "1.0"):
        self.name, self._version = name, version

    def version(self) -> str:
        return self._version


TF, TORCH, JAX = Named("TensorFlow"), Named("PyTorch"), Named("JAX")


@pytest.fixture
def language() -> Iterator[None]:
    """Leaves the process in its environment's language, whatever a test chose."""
    yield
    i18n.use_language(None)


def a100(own_mib: int | None = None) -> Device:
    processes = () if own_mib is None else (GpuProcess(7, GPU, own_mib * MiB, "compute", "python", "a", 0.0, True),)
    return Device(
        0, GPU, "NVIDIA A100", total_bytes=40960 * MiB, used_bytes=0, free_bytes=40960 * MiB, processes=processes,
        compute_capability=(8, 0),
    )  # fmt: skip


def test_one_framework_is_its_name_and_several_are_english_as_a_str_and_a_code_on_the_wire() -> None:
    assert label([TF]) == ("TensorFlow", "1.0") and not isinstance(label([TF])[0], Said)
    both, version = label([TF, TORCH])
    assert (both, version) == ("TensorFlow and PyTorch", "1.0+1.0")
    every = label([TF, TORCH, JAX], "or")[0]
    assert every == "TensorFlow, PyTorch or JAX" and f"{every}" == "TensorFlow, PyTorch or JAX"
    said = Said("policy_in_force", frameworks=label([TF, TORCH, JAX])[0])
    assert said == "in force in TensorFlow, PyTorch and JAX"  # the sentence field older sidebars show
    assert said.wire() == {
        "code": "policy_in_force",
        "values": {
            "frameworks": {"code": "frameworks_and", "values": {"names": ["TensorFlow", "PyTorch"], "last": "JAX"}}
        },
    }
    assert word_wire(said.wire(), CATALOGUE) == said


@pytest.mark.parametrize(
    ("tag", "in_force", "started_first"),
    [
        ("ja-JP", "TensorFlow、PyTorch と JAX で適用中", "TensorFlow または PyTorch"),
        ("zh-CN", "已在 TensorFlow、PyTorch 和 JAX 中生效", "TensorFlow 或 PyTorch"),
    ],
)
def test_a_kernel_in_japanese_or_chinese_words_several_frameworks_in_it(
    language: None, tag: str, in_force: str, started_first: str
) -> None:
    i18n.use_language(tag)
    assert Said("policy_in_force", frameworks=label([TF, TORCH, JAX])[0]).words() == in_force
    assert started_first in Said("policy_started_first", frameworks=label([TF, TORCH], "or")[0]).words()


def test_the_overhead_basis_words_its_frameworks_in_the_language_and_the_cache_keeps_its_english_key(
    language: None, tmp_path
) -> None:
    both, version = label([TF, TORCH])
    assert str(estimate(a100(), both, 0).describe()) == "estimated: TensorFlow and PyTorch on Ampere/Ada (compute 8.0)"
    i18n.use_language("ja-JP")
    assert estimate(a100(), both, 0).describe().words() == "推定: Ampere/Ada 上の TensorFlow と PyTorch (compute 8.0)"
    assert "フレームワーク" in estimate(a100(), Said("the_framework"), 0).describe().words()
    calibration = Calibration(tmp_path / "overhead.json")
    [measured] = calibration.observe(
        Snapshot(0.0, 7, (a100(own_mib=3000),), "550.54.15"), {GPU: 2000 * MiB}, both, version
    )
    assert measured.describe().words() == "実測: NVML の数値から TensorFlow と PyTorch のプールを引いた値"
    key = cache_key(a100(), "550.54.15", both, version)
    assert key == "NVIDIA A100 | driver 550.54.15 | TensorFlow and PyTorch 1.0+1.0"
    assert (tmp_path / "overhead.json").read_text().count(key) == 1
