"""A real browser on `nbstage lab`: Debian's chromium, headless, driven by selenium through
chromium-driver. It opens the notebook's url (as show_notebook gives it), sees a cell
the agent creates and its output appear without a reload, a running cell's [*] and a
print loop's lines as they come, and the person's typing reaches the agent's get_cell.
The screenshot is kept in build/test-artifacts/."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from nbstage.protocol.session.lab_wanted import notebook_url
from tests.e2e.test_kernels import wait_for_file
from tests.headless_chromium import INSTALL, MISSING, headless_chromium
from tests.lab_support import RunningLab, WsPerson
from tests.support import McpClientSession, artifact, call_ok, wait_until

pytestmark = pytest.mark.skipif(MISSING, reason=INSTALL)


@pytest.fixture
def browser() -> Iterator[object]:
    with headless_chromium() as driver:
        yield driver


def _shown(driver, css: str) -> list[str]:
    """The text shown by every element that matches, read at once in the page: Lab redraws
    cells and outputs as they change, so an element found first may be gone when read."""
    script = "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText.trim())"
    return list(driver.execute_script(script, css))


def _cell_texts(driver) -> list[str]:
    return _shown(driver, ".jp-Notebook .jp-Cell")


def _texts(driver, css: str) -> list[str]:
    """The text of every element that matches, read at once in the page (Lab redraws a
    collaborator's flag as it fades, so an element found first may be gone when read)."""
    script = "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)"
    return list(driver.execute_script(script, css))


def _third_cell(driver, selector: str = "") -> str | None:
    """The text of the third cell (or of its part ``selector``), None until Lab shows it."""
    found = _shown(driver, f".jp-Notebook .jp-Cell {selector}".strip())
    return found[2] if len(found) > 2 else None


def _button(driver, text: str):
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.XPATH, f"//dialog//button[normalize-space()='{text}']")
    return found[0] if found else None


def test_the_person_watches_the_agent_and_the_agent_reads_the_person(
    lab: RunningLab, browser, tmp_path: Path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    path = lab.notebook("in-the-browser.ipynb", "first = 1")
    with lab.daemon.client(timeout=90) as agent:
        notebook_id = agent.request("open", path=str(path), peer_label="agent")["notebook_id"]
        record = {"port": lab.port, "root": str(lab.root)}
        # reset: a notebook an earlier test's page left in the workspace (show_notebook's
        # url, test_lab_edge.py) would be restored behind this one, and its cells counted.
        browser.get(notebook_url(record, str(path), lab.token) + "&reset")
        wait_until(lambda: any("first = 1" in t for t in _cell_texts(browser)), 60, "the cell")

        made = agent.request(
            "create_cell", notebook_id=notebook_id, source="print('agent was here')"
        )
        wait_until(
            lambda: any("agent was here" in t for t in _cell_texts(browser)), 30, "a new cell"
        )
        agent.request("execute", notebook_id=notebook_id, cell_id=made["cell_id"], wait_secs=80)
        outputs = ".jp-OutputArea-output"
        wait_until(
            lambda: any("agent was here" in text for text in _shown(browser, outputs)),
            30,
            "the agent's output",
        )
        flags = ".jp-remote-userFlag"
        wait_until(
            lambda: any("agent" in text for text in _texts(browser, flags)),
            30,
            "the agent's flag on its cell",
        )
        panel = ".jp-CollaboratorsList"
        wait_until(
            lambda: any("agent" in text for text in _texts(browser, panel)),
            30,
            "the agent in Lab's collaborators panel",
        )
        browser.save_screenshot(str(artifact("lab-agent-cell.png")))

        # The first line is printed, and the rest only once the test has seen it in Lab.
        # (No line's text is in the source, which Lab shows in the same cell.)
        release = tmp_path / "release"
        rest = "for i in (1, 2):\n    print(f'line {i}', flush=True)"
        loop = "i = 0\nprint(f'line {i}', flush=True)\n" + wait_for_file(release, rest)
        looping = agent.request("create_cell", notebook_id=notebook_id, source=loop)
        agent.request("execute", notebook_id=notebook_id, cell_id=looping["cell_id"], wait_secs=0)
        prompt = ".jp-InputPrompt"
        wait_until(lambda: _third_cell(browser, prompt) == "[*]:", 60, "[*]")
        wait_until(lambda: "line 0" in (_third_cell(browser) or ""), 60, "the loop's first line")
        assert "line 2" not in _cell_texts(browser)[2], "the lines came all at once"
        release.touch()
        wait_until(lambda: _third_cell(browser, prompt) == "[2]:", 60, "[2]")
        assert "line 2" in _cell_texts(browser)[2]

        editor = browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell .cm-content")[0]
        editor.click()
        editor.send_keys(" + 41")
        first = agent.request("get_cells", notebook_id=notebook_id)["cells"][0]["cell_id"]

        def typed() -> bool:
            shown = agent.request("get_cell", notebook_id=notebook_id, cell_id=first)
            return "first = 1 + 41" in shown["cell"]["source"]

        wait_until(typed, 30, "the person's typing in the agent's get_cell")

        # The person runs the cell: it runs in the room's kernel, whose state the agent's
        # loop left at count 2; Lab never asked for a kernel of its own.
        assert _button(browser, "No Kernel") is None, "Lab asked for a kernel"
        editor.send_keys("; print(first)", Keys.SHIFT, Keys.ENTER)
        wait_until(lambda: prompts_of(browser)[0] == "[3]:", 30, "the person's run's count")
        assert "42" in _cell_texts(browser)[0]
    _the_agent_and_the_y_doc_see_the_persons_run(lab, path, notebook_id, first)


def prompts_of(driver) -> list[str]:
    return _shown(driver, ".jp-Notebook .jp-Cell .jp-InputPrompt")


def _the_agent_and_the_y_doc_see_the_persons_run(lab, path, notebook_id, cell_id) -> None:
    """Through `nbstage mcp`, the agent reads the output once; a headless Y client reads
    the count the browser showed."""

    async def read() -> dict:
        async with McpClientSession(lab.daemon, "legacy", "agent", lab.root) as client:
            await call_ok(client, "connect_notebook", path=str(path))
            return await call_ok(client, "get_cell", cell_id=cell_id)

    shown = anyio.run(read)
    texts = json.dumps(shown["cell"]["outputs"])
    assert texts.count("42") == 1, shown
    watcher = WsPerson(lab, path.name)
    try:
        watcher.synced()
        assert watcher.cell(cell_id)["execution_count"] == 3
        assert [o.get("text") for o in watcher.cell(cell_id)["outputs"]] == ["42\n"]
        assert watcher.notebook_id == notebook_id
    finally:
        watcher.close()


def test_tab_and_shift_tab_in_lab_are_answered_by_the_rooms_kernel(lab: RunningLab, browser):
    """The kernel defines a name the notebook's text never spells (so Lab's own completer,
    which offers the document's words, cannot know it): tab after its first letters shows
    it in Lab's completer, and shift-tab in a call shows the kernel's tooltip. The kernel
    websocket takes the protocol Lab offers at once: the console has no failed handshake."""
    from selenium.webdriver.common.keys import Keys

    path = lab.notebook("completions.ipynb", "exec('zebra_' + 'count = 7')", "zebra_c")
    with lab.daemon.client(timeout=90) as agent:
        notebook_id = agent.request("open", path=str(path), peer_label="agent")["notebook_id"]
        first = agent.request("get_cells", notebook_id=notebook_id)["cells"][0]["cell_id"]
        ran = agent.request("execute", notebook_id=notebook_id, cell_id=first, wait_secs=80)
        assert ran["execution"]["status"] == "done"
        record = {"port": lab.port, "root": str(lab.root)}
        # reset, as above.
        browser.get(notebook_url(record, str(path), lab.token) + "&reset")
        wait_until(lambda: "zebra_c" in _shown(browser, SHOWN_EDITORS), 60, "the cells")
        editor = _second_editor(browser)

        def completed() -> bool:
            return any("zebra_count" in t for t in _texts(browser, ".jp-Completer"))

        # Lab waits 1 s for a completion provider; a fresh kernel's first completion can
        # take longer (IPython warms jedi up), and then a person presses tab again.
        for _ in range(6):
            editor.send_keys(Keys.END, Keys.TAB)
            with contextlib.suppress(AssertionError):
                wait_until(completed, 5, "the kernel's completion in Lab's completer")
                break
            editor.send_keys(Keys.ESCAPE)
            editor = _second_editor(browser)
        assert completed(), "the kernel's completion never showed in Lab's completer"
        editor.send_keys(Keys.ESCAPE)
        editor = _second_editor(browser)
        editor.send_keys(Keys.END, Keys.BACK_SPACE * 7, "len(", Keys.SHIFT, Keys.TAB)
        wait_until(
            lambda: any("len" in t for t in _texts(browser, ".jp-Tooltip")),
            30,
            "the kernel's tooltip",
        )
    logged = browser.get_log("browser")
    failed = [
        e["message"] for e in logged if e["level"] == "SEVERE" and "WebSocket" in e["message"]
    ]
    assert not failed, failed


SHOWN_EDITORS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content"
"""The cell editors of the notebook shown (Lab may restore an earlier test's notebook in
a tab behind it)."""


def _second_editor(driver):
    """The second cell's editor of the notebook shown, clicked once Lab lets it be."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    def clicked():
        try:
            editor = driver.find_elements(By.CSS_SELECTOR, SHOWN_EDITORS)[1]
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", editor)
            editor.click()
        except (WebDriverException, IndexError):
            return None
        return editor

    return wait_until(clicked, 30, "the second cell's editor to take a click")
