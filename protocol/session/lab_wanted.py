"""What show_notebook's handler asks of the SessionManager besides the daemon: the state
dir's Lab edge, started if none runs (entrypoints/common/lab_start.py), then the browser
opened on the notebook's URL. Starting and waiting
are blocking, so the SessionManager runs them on a worker thread (ADR 0004)."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from nbstage.protocol.common.frozen import frozen


@frozen
class LabWanted:
    """Yielded by a tool handler; it is sent back the Lab's record ({port, root, token})."""

    state_dir: str


@frozen
class BrowserWanted:
    """Yielded by show_notebook's handler once it has the URL; it is sent back
    ``{opened_browser, browser_reason?}`` (entrypoints/common/lab_browser.py), also run on
    a worker thread, since a browser command may take seconds to return."""

    state_dir: str
    url: str


@frozen
class LabStarted:
    """The offload token: the tool call whose handler waits for the Lab edge (or for the
    browser to be opened)."""

    call_id: str
    handler: Any


def notebook_url(lab: dict[str, Any], path: str, token: str) -> str:
    """The URL that opens ``path`` (absolute) in the Lab whose record is ``lab``; ValueError
    when the path is not under Lab's root."""
    relative = PurePath(path).relative_to(lab["root"]).as_posix()
    return f"http://127.0.0.1:{lab['port']}/lab/tree/{quote(relative)}?token={quote(token)}"
