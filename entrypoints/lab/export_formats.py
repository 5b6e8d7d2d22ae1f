"""``GET /api/nbconvert``: the formats a notebook can be exported to (Lab's "Save and
Export Notebook As" menu), made once per process instead of at every request.

Lab's front end asks for them each time it opens a notebook. Jupyter server's own handler
finds them anew each time through the installed packages' entry points, about 0.35 s of
CPU on this machine, while the browser draws the notebook beside it on the same two cores
(ADR 0004, item 18). The formats are found once, on a thread, when the extension loads;
an exporter installed while Lab runs appears after a restart of ``nbstage lab``.
"""

from __future__ import annotations

import json
import threading
from functools import cache
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.ioloop import IOLoop

_finding = threading.Lock()


@cache
def _formats() -> str:
    from nbconvert.exporters import base

    found: dict[str, Any] = {}
    for name in base.get_export_names():
        try:
            exporter = base.get_exporter(name)
        except ValueError:
            continue
        found[name] = {"output_mimetype": exporter.output_mimetype}
    return json.dumps(found)


def formats() -> str:
    """The formats as Jupyter server's handler answers them (JSON), found on first use."""
    with _finding:
        return _formats()


def find_soon() -> None:
    """Find the formats on a thread of their own, before a page asks for them."""
    threading.Thread(target=formats, name="nbstage-export-formats", daemon=True).start()


class ExportFormats(APIHandler):
    auth_resource = "nbconvert"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            answer = await IOLoop.current().run_in_executor(None, formats)
        except ImportError as exc:
            raise web.HTTPError(500, f"Could not import nbconvert: {exc}") from None
        self.finish(answer)
