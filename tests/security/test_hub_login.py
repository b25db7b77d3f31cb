"""The hub service's admin page after a real browser login through JupyterHub's own /hub/login form (issue 43,
finding 4): a cookie-authenticated session, as an administrator has it, never a token header.

JupyterHub (5 and 6) accepts a cookie-authenticated ``fetch()`` to a service only with the XSRF token
(jupyterhub/_xsrf_utils.py: ``_needs_check_xsrf``, ``check_xsrf_cookie``); without it the request is not
authenticated and was sent through the hub's OAuth again, round and round (ERR_TOO_MANY_REDIRECTS), and the page
said "The service did not answer". The tests of tests/hub log in with a token header, which skips the check.

The scene, once for the module: a real JupyterHub (tests/hub_fixtures.py) with gpumemlogin, a real Unix user made
for this module, not an admin, whose server runs a kernel on the stand-in GPU; gpuadmin is the hub's admin (no
server). Screenshots are left in the test's directory (hub-login-admin.png, hub-login-student.png).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hub_fixtures import ADMIN_TOKEN, Hub, run_user, running_hub, shared_directory, unix_users
from playwright.sync_api import Browser, BrowserContext, Page, Response
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from server_fixtures import http, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from labserver import browser

__all__ = ["browser"]  # the module's chromium (a fixture, tests/ui/labserver.py)

pytestmark = [pytest.mark.browser, pytest.mark.server]

GPU0 = "GPU-5e5e5e5e-0000-4000-8000-000000000000"
KERNEL_CONFIG = 'c.InteractiveShellApp.extensions = ["jupyter_gpumem"]\n'
# A Unix user made for this module, named apart from tests/hub/test_hub.py's (a run of both at once would remove
# the other's user).
STUDENT, ADMIN = run_user("gpumemlogin"), "gpuadmin"
PASSWORD = "gpumem-test-password"  # the DummyAuthenticator's, in hub_fixtures.hub_config
ROWS = "() => document.querySelectorAll('tbody tr').length"


def scenario(pid: int) -> str:
    return f"""driver version=550.54.15 cuda=12040
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40960MiB used=4096MiB util=10 cc=8.0
proc gpu=0 pid={pid} used=1536MiB name=python
"""


@dataclass
class Scene:
    hub: Hub
    kernel_id: str  # the student's kernel

    @property
    def service(self) -> str:
        return f"{self.hub.url}/services/gpumem/"


def reporting(hub: Hub, kernel_id: str) -> dict[str, Any] | None:
    status, body = hub.user_get(STUDENT, "/api/gpumem/v1")
    kernels = json.loads(body)["kernels"] if status == 200 else []
    return next((k for k in kernels if k["id"] == kernel_id and k["status"] == "reporting"), None)


def kernels_row(scene: Scene) -> dict[str, Any] | None:
    """The student's kernel's row in the service's JSON (read with the admin token) once it holds its memory."""
    status, body = http(scene.service + "api/rows", ADMIN_TOKEN)
    rows = json.loads(body)["rows"] if status == 200 else []
    return next((r for r in rows if r["kernel_id"] == scene.kernel_id and r["used_bytes"]), None)


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory, standin_dir: Path) -> Iterator[Scene]:
    base = tmp_path_factory.mktemp("hub-login")
    with (
        unix_users([STUDENT]),
        shared_directory(standin_dir, KERNEL_CONFIG) as shared,
        running_hub(base, shared, scenario(7000), {"students": [STUDENT]}, {}) as hub,
    ):
        hub.start_server(STUDENT)
        hub.wait_for_server(STUDENT)
        status, body = http(f"{hub.url}/user/{STUDENT}/api/kernels", ADMIN_TOKEN, "POST", {"name": "python3"})
        assert status == 201, (status, body)
        kernel_id = json.loads(body)["id"]
        pid = wait_for(lambda: reporting(hub, kernel_id), 90, "the student's kernel to report")["pid"]
        hub.set_scenario(scenario(pid))
        scene = Scene(hub, kernel_id)
        wait_for(lambda: kernels_row(scene), 60, "the service to read the student's kernel")
        yield scene


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A browser with no token: every request it makes is authenticated by the hub's cookies alone."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(30_000)
    try:
        yield context
    finally:
        context.close()


def log_in(page: Page, scene: Scene, user: str) -> Response | None:
    """Open the service's page and log in through the hub's own form, as a person does: the service sends the
    browser to the hub's OAuth, the hub to its login form. Returns the answer the form's submission ends on."""
    page.goto(scene.service)
    page.wait_for_url(lambda url: url.startswith(f"{scene.hub.url}/hub/login?"), timeout=30_000)
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation(timeout=30_000) as navigation:
        page.click("[type=submit]")
    landed = navigation.value
    if page.url.startswith(f"{scene.hub.url}/hub/api/oauth2/authorize") and landed and landed.status == 200:
        # The hub asks the user, the first time, to let the service see who they are: they agree.
        with page.expect_navigation(timeout=30_000) as navigation:
            page.get_by_role("button", name="Authorize").click()
        landed = navigation.value
    return landed


def state(page: Page) -> str:
    return page.locator("#state").text_content(timeout=5_000) or ""


def test_an_admin_logged_in_through_the_hubs_form_sees_the_rows(
    scene: Scene, context: BrowserContext, tmp_path: Path
) -> None:
    page = context.new_page()
    authorize: list[str] = []
    answers: list[tuple[int, str | None]] = []  # every answer to api/rows: its status, the XSRF token sent
    page.on("request", lambda r: authorize.append(r.url) if "/hub/api/oauth2/authorize" in r.url else None)
    page.on(
        "response",
        lambda r: (
            answers.append((r.status, r.request.headers.get("x-xsrftoken")))
            if r.url.startswith(scene.service + "api/rows?")  # the page asks in its language and zone
            else None
        ),
    )
    landed = log_in(page, scene, ADMIN)
    assert landed is not None and landed.status == 200 and page.url == scene.service, (page.url, landed)
    logged_in = len(authorize)  # the OAuth's requests to the hub: asked, agreed
    try:
        page.wait_for_function(f"() => ({ROWS})() > 0", timeout=30_000)
    except PlaywrightTimeout:
        sent = f"api/rows answered {len(answers)} times (status, XSRF token sent): {answers[:4]}"
        pytest.fail(f"no rows on the page after a login through the form; it says {state(page)!r}; {sent}")
    cells = page.locator("tbody tr", has_text=scene.kernel_id[:8]).locator("td").all_text_contents()
    assert cells[:5] == [STUDENT, "(default)", scene.kernel_id[:8], "0", "1536 MiB"], cells
    assert state(page).startswith("Read at "), state(page)
    # The page goes on reading: two more answers, each a 200 to a request that carried the XSRF token, and the
    # hub's OAuth was not visited again after the login (a loop visits it again and again).
    for _ in range(2):
        with page.expect_response(lambda r: r.url.startswith(scene.service + "api/rows?"), timeout=30_000):
            pass
    page.screenshot(path=str(tmp_path / "hub-login-admin.png"), full_page=True)
    assert answers and all(status == 200 for status, _ in answers), [status for status, _ in answers]
    token = page.locator('meta[name="xsrf-token"]').get_attribute("content")
    assert token and all(sent == token for _, sent in answers), (token, answers)
    assert len(authorize) == logged_in, authorize
    # The hub checks the token against its _xsrf cookie, the service's, which holds the token the page was given.
    cookies = [c["value"] for c in context.cookies(scene.service) if c["name"] == "_xsrf"]
    assert cookies == [token], (cookies, token)

    # A token gone stale (a login in another tab sets a new cookie; JupyterHub 5.0 to 5.2 may set another value than
    # the one rendered): refused once, the request is made again at once with the cookie's, and the page reads on.
    def sent(value: str) -> Callable[[Response], bool]:
        return lambda r: r.url.startswith(scene.service + "api/rows?") and r.request.headers.get("x-xsrftoken") == value

    page.evaluate("() => { xsrf = 'stale'; }")
    with page.expect_response(sent("stale"), timeout=30_000) as refused:
        pass
    with page.expect_response(sent(token), timeout=5_000) as again:
        pass
    assert (refused.value.status, again.value.status) == (403, 200), answers[-4:]
    assert state(page).startswith("Read at "), state(page)
    assert len(authorize) == logged_in, authorize
    # What the hub requires: the same request without the token is refused (403, never sent round the OAuth again).
    status = page.evaluate("() => fetch('api/rows', {credentials: 'same-origin'}).then(r => r.status)")
    assert status == 403, status
    assert len(authorize) == logged_in, authorize


def test_a_user_who_is_not_an_admin_is_refused_and_gets_no_rows(
    scene: Scene, context: BrowserContext, tmp_path: Path
) -> None:
    page = context.new_page()
    rows_seen: list[int] = []
    page.on("response", lambda r: rows_seen.append(r.status) if "/services/gpumem/api/rows" in r.url else None)
    landed = log_in(page, scene, STUDENT)
    page.screenshot(path=str(tmp_path / "hub-login-student.png"), full_page=True)
    # The hub refuses the OAuth: the student has no access to the service (admins have, through admin-ui).
    assert landed is not None and landed.status == 403, (page.url, landed and landed.status)
    assert not page.url.startswith(scene.service), page.url
    content = page.content()
    assert "permission" in content and scene.kernel_id not in content and f"{STUDENT}/" not in content
    assert page.evaluate(ROWS) == 0 and rows_seen == []
    # Asked for directly, from the same origin with the student's cookies, the rows are refused too.
    asked = page.evaluate(
        """url => fetch(url, {credentials: 'same-origin'}).then(async r => [r.status, await r.text()])""",
        scene.service + "api/rows",
    )
    assert asked[0] == 403 and scene.kernel_id not in asked[1] and "used_bytes" not in asked[1], asked
    opened = page.goto(scene.service + "api/rows")
    assert opened is not None and opened.status == 403, (page.url, opened and opened.status)
    assert scene.kernel_id not in page.content()


def test_the_token_is_escaped_where_the_page_holds_it() -> None:
    from jupyter_gpumem.hub.service import XSRF_SLOT, page, with_xsrf

    html = page("en")
    assert html.count(XSRF_SLOT) == 1
    hostile = with_xsrf(html, '"><script>alert(1)</script>')
    assert b'<meta name="xsrf-token" content="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">' in hostile
    assert b"<script>alert(1)" not in hostile and hostile.count(b"<script>") == html.count(b"<script>")
    assert with_xsrf(html, b"2|abc_-=") == html.replace(XSRF_SLOT, b'<meta name="xsrf-token" content="2|abc_-=">')
