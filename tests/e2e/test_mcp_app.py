"""The MCP App for outputs (issue 25 part 2) in a real browser: Debian's chromium, headless,
driven by selenium. A host page of our own (tests/mcp_app_host.html) speaks the host side
of the extension's postMessage protocol; the page it shows is the ui:// resource read
through `nbstage mcp`, and the results it is handed come from real cells run through the
official SDK client. The screenshot is kept in build/test-artifacts/."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbstage.protocol.mcp import mcp_apps, page_links
from tests.headless_chromium import INSTALL, MISSING, headless_chromium
from tests.images import jpeg_bytes
from tests.support import (
    RunningDaemon,
    artifact,
    call_ok,
    mcp_client,
    run_bounded,
    texts_of,
    wait_until,
)

HOST_PAGE = Path(__file__).resolve().parents[1] / "mcp_app_host.html"
APPS = {mcp_apps.EXTENSION: {"mimeTypes": [mcp_apps.APP_MIME]}}
PAGE_CAP = 100_000
"""MAX_TEXT in protocol/mcp/output_app.html: the characters one text output draws."""

browser_tests = pytest.mark.skipif(MISSING, reason=INSTALL)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless chromium for every test of the session that shows the page."""
    if MISSING:
        pytest.skip(INSTALL)
    with headless_chromium(window="1000,1200") as driver:
        yield driver


# --- the host page, as a test drives it ---------------------------------------------------


class Host:
    """The test host page in ``driver``, showing the app page ``html``."""

    def __init__(self, driver: Any, html: str) -> None:
        self.driver = driver
        driver.switch_to.default_content()
        driver.get(HOST_PAGE.as_uri())
        driver.execute_script("hostLoad(arguments[0])", html)
        wait_until(lambda: self.host("return host.initialized"), 15, "the page's ui/initialize")

    def host(self, script: str, *args: Any) -> Any:
        self.driver.switch_to.default_content()
        return self.driver.execute_script(script, *args)

    def page(self, script: str, *args: Any) -> Any:
        """Run ``script`` in the app page's own frame."""
        from selenium.webdriver.common.by import By

        self.driver.switch_to.default_content()
        self.driver.switch_to.frame(self.driver.find_element(By.CSS_SELECTOR, "#frame-box iframe"))
        return self.driver.execute_script(script, *args)

    def shown(self) -> int:
        return int(self.page("return Number(document.body.dataset.results || 0)"))

    def show(self, arguments: dict[str, Any], result: Any) -> None:
        """Hand the page one tool result, and wait until it has drawn it."""
        self.show_built("hostDeliver(arguments[0], arguments[1])", arguments, as_wire(result))

    def show_built(self, script: str, *args: Any) -> None:
        """Run ``script`` in the host page, which hands the page a result it builds there."""
        before = self.shown()
        self.host(script, *args)
        wait_until(lambda: self.shown() > before, 15, "the page to draw the result")

    def in_html_output(self, script: str) -> Any:
        """Run ``script`` inside the sandboxed frame of the page's first HTML output."""
        from selenium.webdriver.common.by import By

        self.page("return 1")
        frame = self.driver.find_element(By.CSS_SELECTOR, "iframe.html")
        self.driver.switch_to.frame(frame)
        return self.driver.execute_script(script)

    def image_size(self, css: str) -> tuple[int, int]:
        """The natural size of the page's first image matching ``css``, once loaded."""
        script = (
            "const i = document.querySelector(arguments[0]);"
            "return i && i.complete && i.naturalWidth ? [i.naturalWidth, i.naturalHeight] : null"
        )
        width, height = wait_until(lambda: self.page(script, css), 10, f"{css} to load")
        return width, height

    def ping_ms(self) -> float:
        self.driver.switch_to.default_content()
        answer = self.driver.execute_async_script("hostPing(arguments[arguments.length - 1])")
        assert answer["result"] == {}
        return float(answer["ms"])

    def nothing_escaped(self) -> None:
        assert self.host("return host.stray") == []
        assert self.host("return document.title") == "nbstage test host"
        assert self.host("return document.body.dataset.pwned") is None


def as_wire(result: Any) -> dict[str, Any]:
    wire: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return wire


def png_size(result: Any) -> tuple[int, int]:
    (image,) = [item for item in result.content if item.type == "image"]
    raw = base64.b64decode(image.data)
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


async def run(client: Any, source: str, timeout: float = 60) -> Any:
    cell = await call_ok(client, "create_cell", source=source)
    result = await client.call_tool(
        "execute_cell", {"cell_id": cell["cell_id"], "timeout_secs": timeout}
    )
    assert result.structured_content["execution"]["status"] in ("done", "error"), texts_of(result)
    return result


async def page_html(client: Any) -> str:
    read = await client.read_resource(mcp_apps.OUTPUT_PAGE_URI)
    (content,) = read.contents
    assert content.mime_type == mcp_apps.APP_MIME
    return str(content.text)


# --- who sees the app -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_only_a_client_that_declares_the_extension_sees_the_app(
    daemon: RunningDaemon, mode: str
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, mode, label="plain") as plain:
            plain_tools = [t.model_dump(by_alias=True) for t in (await plain.list_tools()).tools]
            assert all(t.get("_meta") is None for t in plain_tools)
            assert "view_outputs" not in {t["name"] for t in plain_tools}
            await call_ok(plain, "create_notebook")
            listed = [str(r.uri) for r in (await plain.list_resources()).resources]
            assert listed
            assert not any(uri.startswith("ui:") for uri in listed)
            from mcp import MCPError

            with pytest.raises(MCPError):
                await plain.read_resource(mcp_apps.OUTPUT_PAGE_URI)
            ran = await plain.call_tool("create_cell", {"source": "print(1)", "and_run": True})
            assert mcp_apps.OUTPUTS_KEY not in (ran.meta or {})
            execution_id = ran.structured_content["execution"]["execution_id"]
            with pytest.raises(MCPError, match="Unknown tool: view_outputs"):
                await plain.call_tool("view_outputs", {"execution_id": execution_id})
            if mode == "legacy":
                capabilities = plain.server_capabilities.model_dump(exclude_none=True)
                assert "extensions" not in capabilities

        async with mcp_client(daemon, mode, label="apps", extensions=APPS) as apps:
            app_tools = [t.model_dump(by_alias=True) for t in (await apps.list_tools()).tools]
            uis = {t["name"]: t["_meta"]["ui"] for t in app_tools if t.get("_meta")}
            assert set(uis) == {*page_links.LINKED_TOOLS, "view_outputs"}
            assert uis["view_outputs"]["visibility"] == ["app"]
            model_tools = [t for t in app_tools if t["name"] != "view_outputs"]
            assert [{**t, "_meta": None} for t in model_tools] == plain_tools
            await call_ok(apps, "create_notebook")
            listed = [str(r.uri) for r in (await apps.list_resources()).resources]
            assert listed[0] == mcp_apps.OUTPUT_PAGE_URI
            assert (await page_html(apps)).startswith("<!DOCTYPE html>")
            ran = await apps.call_tool("create_cell", {"source": "print(1)", "and_run": True})
            (cell,) = ran.meta[mcp_apps.OUTPUTS_KEY]["cells"]
            assert cell["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
            edit = {"cell_id": cell["cell_id"], "match": "1", "content": "2", "and_run": True}
            replaced = await apps.call_tool("replace_match", edit)
            (cell,) = replaced.meta[mcp_apps.OUTPUTS_KEY]["cells"]
            assert cell["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "2\n"}]
            if mode == "legacy":
                capabilities = apps.server_capabilities.model_dump(exclude_none=True)
                assert capabilities["extensions"] == {mcp_apps.EXTENSION: {}}

    run_bounded(body, budget=150)


# --- what the page draws ------------------------------------------------------------------

PLOT = "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
FRAME = "import pandas as pd\npd.DataFrame({'n': range(7), 'square': [i * i for i in range(7)]})"
COLOURS = r"print('\x1b[31mred\x1b[0m plain \x1b[1;32mgreen\x1b[0m')"
RAISES = "def boom():\n    raise ValueError('no good')\nboom()"
LONG = r"print('\x1b[34m' + 'y' * 30000 + '\x1b[0m')"


@browser_tests
@pytest.mark.timeout(900)
def test_the_page_draws_real_outputs_and_fetches_a_capped_one_through_the_host(
    daemon: RunningDaemon, browser: Any, tmp_path: Path
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="apps", extensions=APPS) as client:
            await call_ok(client, "create_notebook")
            deps = await client.call_tool(
                "manage_dependencies",
                {"add": ["matplotlib", "pandas"], "apply": "restart"},
                read_timeout_seconds=600,
            )
            assert not deps.is_error, texts_of(deps)
            host = Host(browser, await page_html(client))
            assert host.host("return host.initializeParams.protocolVersion") == "2026-01-26"

            plot = await run(client, PLOT)
            host.show({"cell_id": "plot"}, plot)
            size = host.image_size("img.figure")
            assert tuple(size) == png_size(plot)

            frame = await run(client, FRAME)
            host.show({}, frame)
            rows = host.in_html_output(
                "return [...document.querySelectorAll('tbody tr')].map(r => r.innerText)"
            )
            assert len(rows) == 7
            assert rows[6].split() == ["6", "6", "36"]

            colours = await run(client, COLOURS)
            host.show({}, colours)
            spans = host.page(
                "return [...document.querySelectorAll('span.ansi-span')].map(s => "
                "[s.textContent, getComputedStyle(s).color, getComputedStyle(s).fontWeight])"
            )
            assert spans == [
                ["red", "rgb(201, 27, 0)", "400"],
                ["green", "rgb(0, 166, 0)", "700"],
            ]
            assert host.page("return document.querySelector('pre.ansi').textContent") == (
                "red plain green\n"
            )

            raises = await run(client, RAISES)
            host.show({}, raises)
            title = host.page("return document.querySelector('.error .title').textContent")
            assert title == "ValueError: no good"
            traceback = host.page("return document.querySelector('.error pre').textContent")
            assert "boom()" in traceback
            assert "\x1b" not in traceback

            everything = await client.call_tool("run_all_cells", {"timeout_secs": 120})
            host.show({}, everything)
            assert host.page("return document.querySelectorAll('section.cell').length") == 4
            assert host.page("return document.querySelectorAll('img.figure').length") == 1
            browser.switch_to.default_content()
            screenshot = artifact("mcp-app.png")
            browser.save_screenshot(str(screenshot))
            assert screenshot.stat().st_size > 10_000

            long = await run(client, LONG)
            host.show({}, long)
            drawn = host.page("return document.querySelector('pre.ansi').textContent.length")
            assert drawn < 30_000, "the model's preview, cut by the daemon"
            host.page("document.querySelector('button.full').click()")
            (asked,) = wait_until(
                lambda: host.host("return host.toolCalls"), 10, "the page's tools/call"
            )
            assert asked["name"] == "view_outputs"
            assert asked["arguments"] == {
                "execution_id": long.structured_content["execution"]["execution_id"]
            }
            full = await client.call_tool(asked["name"], asked["arguments"])
            host.host("hostAnswer(arguments[0], arguments[1])", asked["id"], as_wire(full))
            wait_until(
                lambda: host.page(
                    "const p = document.querySelector('pre.ansi');"
                    "return p && p.textContent.length === 30001"
                ),
                10,
                "the full output drawn",
            )
            host.nothing_escaped()

    run_bounded(body, budget=800)


HOSTILE_HTML = (
    "from IPython.display import HTML, display\n"
    "display(HTML('''<b id=\"marker\">hostile html shown</b>"
    "<script>"
    "try { top.postMessage({jsonrpc: '2.0', id: 9, method: 'tools/call',"
    " params: {name: 'restart_kernel'}}, '*') } catch (e) {}"
    "try { parent.postMessage({jsonrpc: '2.0', method: 'ui/notifications/tool-result',"
    " params: {content: []}}, '*') } catch (e) {}"
    "try { top.document.title = 'pwned' } catch (e) {}"
    "try { top.document.body.dataset.pwned = '1' } catch (e) {}"
    "document.getElementById('marker').textContent = 'script ran'"
    "</script>"
    "<img src=x onerror=\"top.postMessage('img-pwned', '*')\">'''))"
)
HOSTILE_SVG = (
    "from IPython.display import SVG, display\n"
    'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30">'
    '<script>top.postMessage("svg-pwned", "*")</script>'
    '<rect width="40" height="30" fill="teal"/></svg>\'))'
)
HUGE = (
    "const big = 'x'.repeat(10 * 1024 * 1024);"
    "hostDeliver({}, {content: [{type: 'text', text: 'huge'}],"
    " _meta: {'io.nbstage/outputs': {cells: [{"
    "cell_id: 'huge', execution_count: 1, outputs: ["
    "{output_type: 'stream', name: 'stdout', text: '\\u001b[32m' + big},"
    "{output_type: 'display_data', data: {'text/html': '<p>' + big + '</p>'}, metadata: {}},"
    "{output_type: 'execute_result', data: {'application/json': {big}}, metadata: {}}"
    "]}]}}});"
)


@browser_tests
@pytest.mark.timeout(300)
def test_hostile_outputs_stay_in_their_sandbox_and_a_huge_one_leaves_the_page_responsive(
    daemon: RunningDaemon, browser: Any
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, "2026-07-28", label="apps", extensions=APPS) as client:
            await call_ok(client, "create_notebook")
            host = Host(browser, await page_html(client))

            html = await run(client, HOSTILE_HTML)
            host.show({}, html)
            assert host.page("return document.querySelector('iframe.html').sandbox.value") == ""
            marker = host.in_html_output("return document.getElementById('marker').textContent")
            assert marker == "hostile html shown", "the output's script did not run"
            assert host.page("return Number(document.body.dataset.results)") == 1
            host.nothing_escaped()

            svg = await run(client, HOSTILE_SVG)
            host.show({}, svg)
            size = host.image_size("img.svg")
            assert size == (40, 30)
            host.nothing_escaped()

            printed = await run(client, "print('z' * (10 * 1024 * 1024))")
            host.show({}, printed)
            assert host.ping_ms() < 1000
            host.show_built(HUGE)
            assert int(host.page("return document.body.dataset.drawnMs")) < 3000
            assert host.ping_ms() < 1000
            drawn = host.page("return document.querySelector('pre.ansi').textContent.length")
            assert PAGE_CAP - 10 < drawn <= PAGE_CAP
            notes = host.page(
                "return [...document.querySelectorAll('.note')].map(n => n.textContent)"
            )
            assert any("more characters are not drawn" in note for note in notes), notes
            assert any("characters of HTML are not drawn" in note for note in notes), notes
            host.nothing_escaped()

    run_bounded(body, budget=280)


@browser_tests
def test_the_page_draws_markdown_latex_json_a_jpeg_and_content_without_outputs(
    browser: Any,
) -> None:
    """The MIME types no test cell above produces, in one result the host builds; then a
    result without the page's outputs (as another server's tool would give), drawn from its
    content."""
    jpeg = base64.b64encode(jpeg_bytes(24, 16)).decode()
    markdown = "# Title\n\n- one **bold**\n- two `code`\n\n<script>document.title='md'</script>"
    outputs = [
        {"output_type": "display_data", "data": {"text/markdown": markdown}, "metadata": {}},
        {"output_type": "display_data", "data": {"text/latex": r"$\frac{a}{b}$"}, "metadata": {}},
        {"output_type": "execute_result", "data": {"application/json": {"k": [1, 2]}}},
        {"output_type": "display_data", "data": {"image/jpeg": jpeg, "text/plain": "<Fig>"}},
    ]
    cells = [{"cell_id": "mix", "execution_count": 2, "status": "done", "outputs": outputs}]
    result = {"content": [], "_meta": {mcp_apps.OUTPUTS_KEY: {"cells": cells}}}
    host = Host(browser, mcp_apps.page_html())
    host.show_built("hostDeliver({}, arguments[0])", result)

    assert host.page("return document.querySelector('.markdown h1').textContent") == "Title"
    items = host.page("return [...document.querySelectorAll('.markdown li')].map(l => l.innerHTML)")
    assert items == ["one <strong>bold</strong>", "two <code>code</code>"]
    assert "<script>" in host.page("return document.querySelector('.markdown').textContent")
    assert host.page("return document.querySelector('pre.latex').textContent") == r"$\frac{a}{b}$"
    shown_json = host.page("return document.querySelectorAll('.output pre')[1].textContent")
    assert json.loads(shown_json) == {"k": [1, 2]}
    assert host.image_size("img.figure") == (24, 16)
    assert host.page("return document.querySelector('.head').textContent") == "[2]cell mixdone"

    plain = {"content": [{"type": "text", "text": "just text"}], "structuredContent": {}}
    host.show_built("hostDeliver({}, arguments[0])", plain)
    assert host.page("return document.querySelector('main pre').textContent") == "just text"
    host.nothing_escaped()
