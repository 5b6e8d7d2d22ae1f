"""The person's edge: a Jupyter server extension (extension.py) that serves JupyterLab's
collaboration endpoints from nbstage's rooms (handlers.py), and the ``nbstage lab``
launcher (launch.py). It runs in the Lab process, never in the daemon (ADR 0004)."""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from nbstage.entrypoints.lab.extension import LabEdge

    return [{"module": "nbstage.entrypoints.lab.extension", "app": LabEdge}]
