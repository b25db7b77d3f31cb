"""What the adapters say reaches the user inside translated sentences ("Not in force: {why}", "Too late:
{reasons}"), so a Japanese or Chinese kernel words it too: no English sentence glued into a translated one."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest

from jupyter_gpumem import i18n
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.frameworks.tensorflow import TensorFlow
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.units import MiB
from tests.frameworks.test_tensorflow_adapter import CPU_BUILD, CUDA_BUILD, RecordingTfConfig

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")
# Two English words in a row, outside the API names, package names and commands the glossary keeps.
ENGLISH = re.compile(r"\b[A-Za-z]{2,} [a-z]{2,}\b")
KEPT = re.compile(r"pip install [^ ]+( --index-url [^ ]+)?|'[^']*'|jupyter-gpumem|[\w.]+\([^)]*\)")


@pytest.fixture
def language() -> Iterator[None]:
    yield
    i18n.use_language(None)


def no_gpu(tf_sees: int, build: dict) -> str | None:
    plan = make_plan(parse(["fraction=0.5"]), nvml.read(os.getpid(), HostProcesses().lookup), lambda d: OVERHEAD)
    return TensorFlow(RecordingTfConfig(tf_sees, build)).gpu_problem(plan)


def test_a_japanese_kernel_words_why_a_cpu_only_tensorflow_uses_no_gpu(scenario, language):
    scenario("s1_two_gpus")
    i18n.use_language("ja-JP")
    said = no_gpu(0, CPU_BUILD)
    assert said is not None
    assert said.startswith("TensorFlow 2.x は CPU 専用ビルド")
    assert "予算は適用されません" in said
    assert not ENGLISH.search(KEPT.sub("", said)), said


def test_a_chinese_kernel_lists_the_missing_libraries_with_its_own_separator(scenario, language):
    scenario("s1_two_gpus")
    i18n.use_language("zh-CN")
    said = no_gpu(0, CUDA_BUILD)
    assert said is not None
    assert said.startswith("TensorFlow 2.x 为 CUDA 12.5.1、cuDNN 9 构建，但未找到 GPU")
    assert not ENGLISH.search(KEPT.sub("", said)), said


def test_a_count_mismatch_and_the_settings_in_force_are_worded_in_japanese(scenario, language):
    scenario("s1_two_gpus")
    i18n.use_language("ja-JP")
    tensorflow = TensorFlow(RecordingTfConfig(3))
    plan = make_plan(parse(["fraction=0.5"]), nvml.read(os.getpid(), HostProcesses().lookup), lambda d: OVERHEAD)
    mismatch = tensorflow.gpu_problem(plan)
    assert mismatch is not None and mismatch.startswith("TensorFlow が認識する GPU は 3 個ですが、NVML では 2 個です")
    lines = tensorflow.in_force()
    assert lines[0] == "TensorFlow 2.x: CPU スレッド intra-op デフォルト (全コア)、inter-op デフォルト"
    assert lines[1] == "TensorFlow GPU:0: memory_limit なし (ほぼすべてを確保)、メモリ増大オフ"
    for line in lines:
        assert not ENGLISH.search(KEPT.sub("", line)), line


def test_english_stays_the_code_own_words(scenario, language):
    scenario("s1_two_gpus")
    i18n.use_language("en")
    assert TensorFlow(RecordingTfConfig(1)).in_force() == [
        "TensorFlow 2.x: CPU threads intra-op default (all cores), inter-op default",
        "TensorFlow GPU:0: no memory limit (takes nearly all), growth off",
    ]
