"""The person's edge: a Jupyter server extension that serves JupyterLab's collaboration
endpoints from nbstage's rooms (handlers.py), and the ``nbstage lab`` launcher
(launch.py). It runs in the Lab process, never in the daemon (ADR 0004)."""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "nbstage.entrypoints.lab"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    from nbstage.entrypoints.lab import export_formats, page_config, tree_page
    from nbstage.entrypoints.lab.handlers import HANDLERS

    settings = serverapp.web_app.settings
    page_config.install(settings, tree_page.page_asked)
    export_formats.find_soon()
    base = settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$", [(url_path_join(base, pattern), handler) for pattern, handler in HANDLERS]
    )
