"""The inline view's code at the server extension's static route, under the server's base URL (JupyterHub's
/user/<name>/), for the view's loader (labextension/src/widgets/loader.ts): a notebook's widget state then
carries no copy of it."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_fixtures import running_server

from jupyter_gpumem._version import __version__
from jupyter_gpumem.server import STATIC

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def prefixed(tmp_path_factory: pytest.TempPathFactory, standin_dir: Path) -> Iterator[str]:
    """A server at /user/ada/, as a JupyterHub user's; its URL with that prefix."""
    with running_server(tmp_path_factory.mktemp("static"), standin_dir, "", "", base_url="/user/ada/") as server:
        yield server.url


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body, without a token: the route is public, as JupyterLab's own static files."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_the_route_serves_the_views_module_its_plotly_chunk_and_styles_under_the_base_url(prefixed: str) -> None:
    status, headers, body = fetch(f"{prefixed}/jupyter-gpumem/static/inline.js?v={__version__}")
    assert status == 200 and body == (STATIC / "inline.js").read_bytes()
    assert headers["Content-Type"].split(";")[0] in ("text/javascript", "application/javascript")
    assert "max-age=" in headers.get("Cache-Control", "")  # versioned: the browser keeps it
    # The module imports its chunks by paths relative to itself: each one is served beside it.
    chunks = re.findall(r'"\./([\w.-]+\.js)"', body.decode())
    assert any(c.startswith("plotly-basic") for c in chunks)
    for chunk in chunks:
        status, headers, body = fetch(f"{prefixed}/jupyter-gpumem/static/{chunk}")
        assert status == 200 and body == (STATIC / chunk).read_bytes()
    status, headers, body = fetch(f"{prefixed}/jupyter-gpumem/static/base.css?v={__version__}")
    assert status == 200 and headers["Content-Type"].startswith("text/css") and b".jp-GpuMem-headline" in body


def test_the_route_serves_nothing_else(prefixed: str) -> None:
    root = prefixed.removesuffix("/user/ada")
    assert fetch(f"{root}/jupyter-gpumem/static/inline.js")[0] == 404  # only under the server's base URL
    assert fetch(f"{prefixed}/jupyter-gpumem/static/nothing.js")[0] == 404
    for escape in ("..%2F__init__.py", "%2E%2E/server/__init__.py", "..%2F..%2Fpyproject.toml"):
        status, _, body = fetch(f"{prefixed}/jupyter-gpumem/static/{escape}")
        assert status in (403, 404) and b"import" not in body
