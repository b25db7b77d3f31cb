"""The framework in the inline view's and the still picture's words (render/viewtext.framework_name): several
frameworks' names worded from the sample's code in the language in use, else the sample's plain string."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_gpumem import i18n
from jupyter_gpumem.render import viewtext

SAMPLE: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "protocol" / "sample_two_frameworks.json").read_text()
)["sample"]


@pytest.fixture(autouse=True)
def language() -> Iterator[None]:
    yield
    i18n.use_language(None)


@pytest.mark.parametrize(
    ("tag", "expected"),
    [("en", "TensorFlow and PyTorch"), ("ja-JP", "TensorFlow と PyTorch"), ("zh-CN", "TensorFlow 和 PyTorch")],
)
def test_several_frameworks_are_worded_in_the_language_in_use(tag: str, expected: str) -> None:
    i18n.use_language(tag)
    assert viewtext.framework_name(SAMPLE) == expected
    assert expected in viewtext.chart_labels(viewtext.framework_name(SAMPLE))["framework"]


def test_an_older_kernels_plain_string_or_a_code_this_release_lacks_reads_as_the_string() -> None:
    i18n.use_language("ja-JP")
    older = {k: v for k, v in SAMPLE.items() if k != "framework_said"}
    assert viewtext.framework_name(older) == "TensorFlow and PyTorch"
    unknown = {**SAMPLE, "framework_said": {"code": "frameworks_in_a_newer_release", "values": {}}}
    assert viewtext.framework_name(unknown) == "TensorFlow and PyTorch"
    missing_value = {**SAMPLE, "framework_said": {"code": "frameworks_and", "values": {"names": ["TensorFlow"]}}}
    assert viewtext.framework_name(missing_value) == "TensorFlow and PyTorch"
    assert viewtext.framework_name({"framework": None, "framework_said": None}) is None
