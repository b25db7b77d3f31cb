"""Fixtures and helpers for the browser tests and benchmarks: a real JupyterLab server (with the
stand-in NVML) and Debian's chromium driven by Playwright.

The browser is the system's `chromium` (apt), launched through its executable path: Playwright
never downloads one here. `.ci/setup` installs it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from jupyter_gpumem import standin

ARTIFACTS = Path(__file__).parents[1] / "artifacts"
SCENARIOS = Path(__file__).parents[1] / "fixtures" / "scenarios"
TOKEN = "gpumem-ui-test"
CHROMIUM_FLAGS = [
    "--no-sandbox",  # CI runs as root in a container
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError(
            "Debian's chromium is needed for the browser tests: apt-get install chromium (.ci/setup does)."
        )
    return path


@dataclass
class Lab:
    url: str
    root: Path
    scenario: Path

    app: str = "jupyterlab"

    def notebook_url(self, name: str) -> str:
        if self.app == "notebook":
            return f"{self.url}/notebooks/{name}?token={TOKEN}"
        return f"{self.url}/lab/tree/{name}?token={TOKEN}&reset"

    def set_scenario(self, text: str) -> None:
        standin.write_scenario(self.scenario, text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_notebook(path: Path, cells: list[str], kernel: str = "python3") -> None:
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c}
                    for c in cells
                ],
                "metadata": {"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )


KERNEL_IDLE = """() => {
  const kernel = window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel;
  return kernel?.status === 'idle';
}"""


def open_notebook(page: Page, lab: Lab, name: str, cells: list[str], kernel: str = "python3") -> None:
    write_notebook(lab.root / name, cells, kernel)
    page.goto(lab.notebook_url(name))
    page.wait_for_function(KERNEL_IDLE, timeout=90_000)


def run_cell(page: Page, index: int, timeout_ms: float = 5_000) -> str:
    """Click into cell ``index``, press Shift+Enter, wait for it to finish; its output text."""
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(index)  # the active notebook
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout_ms)
    return "".join(cell.locator(".jp-OutputArea-output").all_inner_texts())


def open_sidebar(page: Page) -> None:
    page.locator('.jp-SideBar [data-id="jupyter-gpumem-panel"]').click()
    expect(page.locator("#jupyter-gpumem-panel")).to_be_visible()


SIDEBAR_WIDTH = """async width => {
  // The right side area's share of the main split panel, as dragging its handle would set it.
  const split = window.jupyterapp.shell._hsplitPanel;
  const panel = document.getElementById('jupyter-gpumem-panel');
  for (let i = 0; i < 5 && Math.abs(panel.getBoundingClientRect().width - width) > 0.5; i++) {
    const [left, main, right] = split.relativeSizes();
    const wanted = right * (width / panel.getBoundingClientRect().width);
    split.setRelativeSizes([left, main + right - wanted, wanted]);
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  return panel.getBoundingClientRect().width;
}"""


def set_sidebar_width(page: Page, width: int) -> None:
    """Make the (open) GPU Memory panel ``width`` pixels wide."""
    got = page.evaluate(SIDEBAR_WIDTH, width)
    assert abs(got - width) <= 0.5, f"the panel is {got} px wide, not {width}"
    wait_for_layout(page)


def set_theme(page: Page, dark: bool) -> None:
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    page.evaluate(f"() => window.jupyterapp.commands.execute('apputils:change-theme', {{ theme: '{theme}' }})")
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{str(not dark).lower()}'")
    # The theme's stylesheet is in once its variables are.
    page.wait_for_function(
        "dark => (getComputedStyle(document.body).getPropertyValue('--jp-layout-color1').trim() === 'white') !== dark",
        arg=dark,
    )
    wait_for_layout(page)  # the theme manager shows the page again a frame later, and the chart redraws


# Two frames laid out.
FRAMES = "() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)))"
# The chart, where it draws, as wide as its box (within a pixel: plotly takes the box's fractional width): plotly
# redraws a frame or more after a resize. It does not draw where it is hidden (fewer than two samples) or out of
# sight (scrolled away in the panel or the page: widgets/chart.ts draws nothing then).
PLOT_FOLLOWED = """() => {
  const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
  if (!gd?._fullLayout || gd.style.visibility === 'hidden') return true;
  let { top, bottom, left, right } = gd.parentNode.getBoundingClientRect();
  for (let box = gd.parentNode.parentElement; box; box = box.parentElement) {
    if (getComputedStyle(box).overflow === 'visible') continue;
    const r = box.getBoundingClientRect();
    top = Math.max(top, r.top); bottom = Math.min(bottom, r.bottom);
    left = Math.max(left, r.left); right = Math.min(right, r.right);
  }
  const seen = bottom > Math.max(top, 0) && right > Math.max(left, 0) && top < innerHeight && left < innerWidth;
  return !seen || Math.abs(gd._fullLayout.width - gd.parentNode.clientWidth) <= 1;
}"""


def wait_for_layout(page: Page) -> None:
    """Until the panel has followed a new width or theme: what a test reads or shoots then is the new layout,
    however loaded the machine."""
    page.evaluate(FRAMES)
    page.wait_for_function(PLOT_FOLLOWED, timeout=10_000)


def looks(page: Page) -> Iterator[tuple[str, int, str]]:
    """Each theme and sidebar width the screenshots are taken at, set in turn: ("light", 250, "light, 250 px"),
    … ("dark", 600, …); the light theme again at the end."""
    ARTIFACTS.mkdir(exist_ok=True)
    for dark in (False, True):
        set_theme(page, dark)
        theme = "dark" if dark else "light"
        for width in (250, 600):
            set_sidebar_width(page, width)
            yield theme, width, f"{theme}, {width} px"
    set_theme(page, False)


# A kernel that cannot import jupyter_gpumem (as if it were not installed in its environment), and a
# kernel that is not Python at all: both real kernels, started by the server from their kernelspecs.
BLOCKER = """import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "jupyter_gpumem" or name.startswith("jupyter_gpumem."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, NotInstalled())
"""

ECHO_KERNEL = """from ipykernel.kernelapp import IPKernelApp
from ipykernel.kernelbase import Kernel


class EchoKernel(Kernel):
    implementation = "echo"
    implementation_version = "1.0"
    language = "echo"
    language_version = "1.0"
    language_info = {"name": "echo", "mimetype": "text/plain", "file_extension": ".txt"}
    banner = "Echo: prints each cell back"

    async def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False, **kw):
        if not silent:
            self.send_response(self.iopub_socket, "stream", {"name": "stdout", "text": code})
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}


if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=EchoKernel)
"""


def write_kernelspecs(share: Path) -> None:
    """``without-gpumem`` (Python, jupyter_gpumem not importable), ``echo`` (not Python) and ``shared`` (Python,
    with the privacy a hub's spawner would set: other users' processes per user)."""
    code = share / "code"
    (code / "blocked").mkdir(parents=True)
    (code / "blocked" / "sitecustomize.py").write_text(BLOCKER)
    (code / "echo").mkdir()
    (code / "echo" / "echo_kernel.py").write_text(ECHO_KERNEL)
    specs = {
        "without-gpumem": {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (without jupyter-gpumem)",
            "language": "python",
            "env": {"PYTHONPATH": str(code / "blocked")},
        },
        "shared": {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (a shared GPU)",
            "language": "python",
            "env": {"JUPYTER_GPUMEM_PRIVACY": "names"},
        },
        "echo": {
            "argv": [sys.executable, "-m", "echo_kernel", "-f", "{connection_file}"],
            "display_name": "Echo",
            "language": "echo",
            "env": {"PYTHONPATH": str(code / "echo")},
        },
    }
    for name, spec in specs.items():
        folder = share / "kernels" / name
        folder.mkdir(parents=True)
        (folder / "kernel.json").write_text(json.dumps(spec))


@contextmanager
def running_lab(
    base: Path,
    scenario_text: str,
    app: str = "jupyterlab",
    disabled: tuple[str, ...] = (),
    server_disabled: tuple[str, ...] = (),
) -> Iterator[Lab]:
    """`jupyter lab` on a free port, its files under ``base``; its kernels read the stand-in NVML
    (this process's LD_LIBRARY_PATH) and a scenario file of their own. ``app="notebook"``: Notebook 7
    instead; ``disabled``: labextensions this server does not load (as `jupyter labextension disable`
    would, in a configuration directory of its own); ``server_disabled``: server extensions it does not load
    (as `jupyter server extension disable` would there)."""
    root = base / "notebooks"
    root.mkdir()
    scenario = base / "active.scenario"
    standin.write_scenario(scenario, scenario_text)
    news = base / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')  # no "get notified about news?" toast over the screenshots
    write_kernelspecs(base / "share")
    # This checkout's labextension build ahead of the one the environment has (a worktree tests its own).
    build = Path(__file__).parents[2] / "jupyter_gpumem" / "labextension"
    if build.is_dir():
        (base / "share" / "labextensions").mkdir()
        (base / "share" / "labextensions" / "jupyter-gpumem").symlink_to(build)
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": dict.fromkeys(disabled, True)})
    )
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": dict.fromkeys(server_disabled, False)}})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_GPUMEM_", "CUDA_", "TF_"))}
    env.update(
        {
            standin.SCENARIO_VARIABLE: str(scenario),
            "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
            "JUPYTER_PATH": str(base / "share"),  # the test kernelspecs (write_kernelspecs)
            "JUPYTER_CONFIG_DIR": str(config),
            "XDG_CACHE_HOME": str(base / "cache"),  # the overhead cache: none from earlier runs
        }
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (base / "server.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            app,
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.allow_root=True",
            "--LabApp.expose_app_in_browser=True" if app == "jupyterlab" else "--expose-app-in-browser",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start:\n{(base / 'server.log').read_text()}") from None
                time.sleep(0.25)
        yield Lab(url, root, scenario, app)
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def launch_chromium(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(tmp_path_factory.mktemp("lab"), (SCENARIOS / "sidebar.scenario").read_text()) as lab:
        yield lab


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()
