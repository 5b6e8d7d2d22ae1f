"""What the Lab edge does when the page of a notebook is asked for (``/lab/tree/<path>``,
``/lab/workspaces/<name>/tree/<path>``: show_notebook's url is one), so that the notebook
is drawn sooner (ADR 0004, item 18). Two things that would otherwise wait for Lab's front
end start while the browser is still running Lab's scripts:

- The notebook is put in the page's workspace as the current tab of the main area. Lab's
  front end opens a tree url's file only once it has saved the workspace it restored,
  behind a debounce that every plugin's state change restarts (about a second and a
  half after the plugins started, on this machine); a notebook already in the
  workspace is opened while the layout is restored.
- The notebook is opened in the daemon and its shared document built, as the front end's
  session request would do seconds later; that request then finds it built. The link
  joins as a person for this and leaves at once; the Room keeps the document whole for
  ``shared_doc_idle_secs``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from typing import Any

from nbstage.entrypoints.common.kept_tasks import start_kept

log = logging.getLogger("nbstage.lab")

NOTEBOOK = "notebook:"
"""Lab's key for an open notebook, in the workspace and in its layout."""
LAYOUT = "layout-restorer:data"
DEFAULT_WORKSPACE = "default"

PREPARED: set[asyncio.Task] = set()
"""The preparations under way; the extension cancels them at its stop (extension.py)."""


def asked_notebook(path_kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """The workspace and the notebook path of a Lab page's url (its handler's path
    arguments, already unquoted), or None for a page that opens no notebook."""
    tree = path_kwargs.get("tree") or ""
    path = tree.removeprefix("/tree/").strip("/")
    if not tree.startswith("/tree/") or not path.endswith(".ipynb") or ".." in path.split("/"):
        return None
    workspace = (path_kwargs.get("workspace") or "").removeprefix("/workspaces/")
    return workspace or DEFAULT_WORKSPACE, path


def with_notebook(data: dict[str, Any], path: str) -> dict[str, Any]:
    """A workspace's data with the notebook open, in the tab area that holds the current
    main-area tab (the first one if none is current), as that area's current tab."""
    key = NOTEBOOK + path
    data = copy.deepcopy(data)
    data[key] = {"data": {"path": path, "factory": "Notebook"}}
    if not isinstance(data.get(LAYOUT), dict):
        data[LAYOUT] = {}
    layout = data[LAYOUT]
    main = layout.get("main") if isinstance(layout.get("main"), dict) else {}
    area = _tab_area(main.get("dock"), main.get("current"))
    if area is None:
        main["dock"] = {"type": "tab-area", "currentIndex": 0, "widgets": [key]}
    else:
        widgets = area.setdefault("widgets", [])
        if key not in widgets:
            widgets.insert(min(area.get("currentIndex", 0) + 1, len(widgets)), key)
        area["currentIndex"] = widgets.index(key)
    main["current"] = key
    layout["main"] = main
    return data


def _tab_area(dock: Any, current: str | None) -> dict[str, Any] | None:
    """The tab area that holds ``current``, else the first one, in a dock's layout."""
    areas: list[dict[str, Any]] = []
    pending = [dock]
    while pending:
        node = pending.pop(0)
        if not isinstance(node, dict):
            continue
        if node.get("type") == "tab-area" and isinstance(node.get("widgets", []), list):
            areas.append(node)
        pending.extend(node.get("children") or [])
    holding = [a for a in areas if current is not None and current in a.get("widgets", [])]
    return (holding or areas or [None])[0]


def page_asked(handler: Any) -> None:
    """A Lab page is being served: if it opens a notebook, prepare it (see the module)."""
    asked = asked_notebook(handler.path_kwargs)
    if asked is None:
        return
    workspace, path = asked
    try:
        _open_in_workspace(handler.extensionapp.workspaces_dir, workspace, path)
    except Exception as exc:  # only a head start: a workspace of any shape serves the page
        log.warning("could not put %s in workspace %s: %r", path, workspace, exc)
    start_kept(PREPARED, _build_shared_doc(handler.settings, path))


def _open_in_workspace(workspaces_dir: str, workspace: str, path: str) -> None:
    from jupyterlab_server.workspaces_handler import WorkspacesManager

    manager = WorkspacesManager(workspaces_dir)
    data = manager.load(workspace).get("data") or {}
    raw = {"data": with_notebook(data, path), "metadata": {"id": workspace}}
    manager.save(workspace, json.dumps(raw))


async def _build_shared_doc(settings: dict[str, Any], path: str) -> None:
    from nbstage.entrypoints.common.ownership import Untrusted
    from nbstage.entrypoints.control.daemon_client import DaemonError
    from nbstage.entrypoints.lab.daemon_revival import open_link
    from nbstage.entrypoints.lab.handlers import full_path, joined_as_person

    full = full_path(settings, path)
    try:
        link = await open_link()
    except (OSError, Untrusted) as exc:
        log.info("no daemon to prepare %s in: %s", path, exc)
        return
    try:
        await joined_as_person(link, full)
    except (DaemonError, OSError) as exc:
        log.info("could not prepare %s: %s", path, exc)
    finally:
        link.close()
