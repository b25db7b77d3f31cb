"""The magic's own messages in a real kernel: HTML in a notebook frontend, like `%gpumem status`, with the same
lines as the text terminals and logs get."""

from __future__ import annotations

import html

import pytest

pytestmark = pytest.mark.kernel


def _same_lines(shown: dict) -> str:
    """The output's text, after checking that its HTML has each of its lines (one paragraph each)."""
    text, markup = shown["data"]["text/plain"], shown["data"]["text/html"]
    assert "jp-GpuMem-messages" in markup and "<style>" in markup
    for line in text.splitlines():
        assert f">{html.escape(line.strip(), quote=False)}</p>" in markup
    return text


def test_a_policy_request_is_html_in_a_notebook_with_its_text_beside_it(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")

    reply = kernel.run("%gpumem fraction=0.5 gpus=1")

    assert reply.status == "ok" and len(reply.displayed) == 1
    text = _same_lines(reply.displayed[0])
    assert text.startswith("jupyter-gpumem: fraction=0.5 gpus=1 recorded (%gpumem).")
    assert 'class="jp-GpuMem-detail"' in reply.displayed[0]["data"]["text/html"]  # the indented lines


def test_the_lines_a_framework_import_applies_are_html_too(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run("%gpumem fraction=0.5 gpus=1")

    reply = kernel.run("import torch")

    assert reply.status == "ok" and len(reply.displayed) == 1
    assert _same_lines(reply.displayed[0]).startswith("jupyter-gpumem: applied fraction=0.5 gpus=1 to PyTorch")
