"""A kernel no sidebar follows words %gpumem in its locale (LANG, LC_ALL, as gettext reads them), English where a
message has no translation (docs/i18n-plumbing.md). Real kernels on the stand-in NVML, in a PID namespace of their own
with a framework that has started and holds no pool yet (test_kernel_containers' Recorder), so that `%gpumem status`
says a reason from the code catalogue (``own_no_pool``) inside a sentence of the magic's own, beside its headline and a
refusal: each worded from the language's built catalogue, never its English."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_kernel_containers import RECORDER, SPEC, UNSHARE, ContainedKernel, _unshare_works, scenario

from jupyter_gpumem import i18n, standin
from jupyter_gpumem.words import CATALOGUE

pytestmark = pytest.mark.kernel

LOCALE = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


@pytest.fixture
def contained_in(
    tmp_path: Path, standin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., ContainedKernel]]:
    """contained_in(locale variables) -> a real kernel in its own PID namespace, its locale only those variables."""
    if not _unshare_works():
        pytest.skip("unshare --pid --fork --mount-proc needs root (CI runs as root)")
    spec = tmp_path / "jupyter" / "kernels" / SPEC
    spec.mkdir(parents=True)
    argv = [*UNSHARE, sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": SPEC, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    started: list[ContainedKernel] = []

    def start(env: dict[str, str]) -> ContainedKernel:
        path = tmp_path / "container.scenario"
        standin.write_scenario(path, scenario("container_host_pids", OUTER=4190003))
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JUPYTER_GPUMEM_", "CUDA_", "TF_", "XLA_", "PYTORCH_")) and k not in LOCALE
        }
        base["LD_LIBRARY_PATH"] = ""
        base["XDG_CACHE_HOME"] = str(tmp_path / "cache")
        kernel = ContainedKernel({**standin.environment(standin_dir, path, base=base), **env}, path)
        started.append(kernel)
        return kernel

    yield start
    for kernel in started:
        kernel.stop()


def translated(language: str, message: str, context: str | None = None) -> str:
    """A message in a language, from its built catalogue; the test is meaningless if it is English."""
    catalogue = i18n.translation(language)
    words = catalogue.pgettext(context, message) if context else catalogue.gettext(message)
    assert words != message, f"{message!r} is not translated in {language}: this test needs a translated message"
    return words


def status_with_no_pool(kernel: ContainedKernel) -> str:
    """%gpumem status once the Recorder has started and holds no pool: this kernel's memory unknown, own_no_pool."""
    kernel.run("%load_ext jupyter_gpumem")
    assert kernel.run(RECORDER).status == "ok"
    assert kernel.run("%gpumem limit=8GiB").status == "ok"  # the Recorder is the framework the policy is for
    kernel.run("recorder.pools = (Allocator(0, 0, 0),); recorder.started = True")
    return kernel.run("%gpumem status").stdout


@pytest.mark.parametrize(
    ("env", "language"),
    [({"LANG": "ja_JP.UTF-8"}, "ja_JP"), ({"LC_ALL": "zh_CN.UTF-8", "LANG": "C.UTF-8"}, "zh_CN")],
)
def test_a_kernel_in_a_japanese_or_chinese_locale_words_what_is_translated_and_the_rest_in_english(
    contained_in, env: dict[str, str], language: str
):
    kernel = contained_in(env)
    assert kernel.run("import jupyter_gpumem.i18n as i; print(i.language())").stdout == f"{language}\n"

    status = status_with_no_pool(kernel)
    no_pool = translated(language, CATALOGUE["own_no_pool"], "own_no_pool").format(framework="Recorder")
    unknown = translated(language, "this kernel's memory is unknown, not 0: {why}").format(why=no_pool)
    # The status's line on this kernel's GPU: the magic's sentence and the code's reason in the locale's language.
    assert any(line.startswith(f"  GPU 0: {unknown}") for line in status.splitlines()), status
    assert CATALOGUE["own_no_pool"].format(framework="Recorder") not in status
    headline = translated(language, "jupyter-gpumem · NVIDIA driver {driver} · this kernel: pid {pid}")
    assert status.startswith(headline.format(driver="550.54.15", pid=1) + "\n")
    refused = kernel.run("%gpumem fraction=2")
    nothing = translated(language, "{error} Nothing was changed.")
    assert refused.stderr.rstrip().endswith(nothing.format(error="").strip()), refused.stderr
    assert "Nothing was changed" not in refused.stderr and "is outside" not in refused.stderr


def test_a_kernel_in_an_english_or_traditional_chinese_locale_words_it_all_in_english(contained_in):
    for env in ({"LANG": "C.UTF-8"}, {"LANG": "zh_TW.UTF-8"}):
        kernel = contained_in(env)
        status = status_with_no_pool(kernel)
        assert CATALOGUE["own_no_pool"].format(framework="Recorder") in status, env
