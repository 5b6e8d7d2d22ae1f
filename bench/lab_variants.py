"""The variants `lab_draw_split.py` opens by turns: each an `nbstage lab` of its own, with a
Jupyter config of its own (``page_config``: ``labconfig/page_config.json``, merged into
the page config the edge serves, whose own disabled plugins stay off), user settings of
its own (``settings``: plugin id -> settings), or another checkout's code (``nbstage``).
What they measured is in ADR 0004, item 18.
"""

from __future__ import annotations

import os

NO_BUILD = {"buildCheck": False, "buildAvailable": False}
BARE = {
    name: True
    for name in (
        "@jupyterlab/terminal-extension",
        "@jupyterlab/console-extension",
        "@jupyterlab/help-extension",
        "@jupyterlab/csvviewer-extension",
        "@jupyterlab/htmlviewer-extension",
        "@jupyterlab/imageviewer-extension",
        "@jupyterlab/pdf-extension",
        "@jupyterlab/video-extension",
        "@jupyterlab/audio-extension",
        "@jupyterlab/vega5-extension",
        "@jupyterlab/mermaid-extension",
        "@jupyterlab/json-lines-extension",
        "@jupyterlab/markdownviewer-extension",
        "@jupyterlab/logconsole-extension",
        "@jupyterlab/inspector-extension",
        "@jupyterlab/celltags-extension",
        "@jupyterlab/metadataform-extension",
        "@jupyterlab/settingeditor-extension",
        "@jupyterlab/theme-dark-extension",
        "@jupyterlab/theme-dark-high-contrast-extension",
        "@jupyterlab/toc-extension",
        "@jupyterlab/running-extension",
        "@jupyterlab/launcher-extension",
    )
}
"""A ceiling for what disabling plugins can give: most of what is not the notebook."""
TRACKER = "@jupyterlab/notebook-extension:tracker"
MAIN = os.environ.get("NBSTAGE_BENCH_OTHER_PYTHON", "/work/main/.venv/bin/python")
"""The interpreter of another checkout (its nbstage installed editable), for the variant
``main``: that code, by turns with this one's."""
VARIANTS: dict[str, dict] = {
    "current": {},
    "main": {"nbstage": [MAIN, "-P", "-m", "nbstage.entrypoints.cli"]},
    "nobuild": {"page_config": NO_BUILD},
    "bare": {"page_config": {"disabledExtensions": BARE}},
    "full": {"settings": {TRACKER: {"windowingMode": "full"}}},
    "defer": {"settings": {TRACKER: {"windowingMode": "defer"}}},
    "none": {"settings": {TRACKER: {"windowingMode": "none"}}},
}
"""Per variant: ``page_config`` (labconfig/page_config.json) and ``settings`` (plugin id →
user settings)."""
