"""What the Lab edge changes in the page config JupyterLab hands its front end.

- ``serverSideExecution``: the notebook runs a cell by asking the server, which queues
  it in the room's kernel (execution.py), instead of sending code to a kernel.
- The announcements plugin is disabled: it fetches JupyterLab's news feed and checks
  for updates over the network, which a local edge has no business doing.
- So are plugins that cannot work with the rooms' stand-in kernels (the debugger, which
  speaks the kernel's debug protocol, and consoles, whose kernel would be a stand-in
  that runs nothing), that manage Lab itself (the extension and plugin managers, the
  hub menu), and the language-server plugins (no language server is there; the
  completer asks the room's kernel). Together they cost the page about 0.1 to 0.2 s of its
  main thread's CPU before a notebook is drawn (ADR 0004, item 18).

Lab rebuilds its page config from files on disk after reading the server's
``page_config_data``, so the disabled plugins are added by ``page_config_hook``, which
it calls last. The hook is also where the edge hears that a page is being served
(tree_page.py prepares the notebook a page opens).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"
DISABLED = (
    ANNOUNCEMENTS,
    "@jupyterlab/debugger-extension",
    "@jupyterlab/console-extension",
    "@jupyterlab/inspector-extension:consoles",
    "@jupyterlab/tooltip-extension:consoles",
    "@jupyterlab/extensionmanager-extension",
    "@jupyterlab/pluginmanager-extension",
    "@jupyterlab/hub-extension",
    "@jupyterlab/lsp-extension",
    "@jupyterlab/notebook-extension:language-server",
    "@jupyterlab/fileeditor-extension:language-server",
)
"""Whole extensions (every plugin of theirs) or single plugins, as Lab matches them."""
DISABLED_KEY = "disabledExtensions"


def with_our_options(page_config: dict[str, Any]) -> dict[str, Any]:
    """The page config with our options set and our plugins turned off."""
    disabled = list(page_config.get(DISABLED_KEY) or [])
    disabled += [name for name in DISABLED if name not in disabled]
    return {**page_config, DISABLED_KEY: disabled, "serverSideExecution": True}


def install(
    settings: dict[str, Any], on_page: Callable[[Any], None] = lambda handler: None
) -> None:
    """Set the options in a Jupyter server's settings, after any hook already there;
    ``on_page`` is called with the handler of every page served."""
    settings.setdefault("page_config_data", {})["serverSideExecution"] = True
    earlier: Callable[[Any, dict[str, Any]], dict[str, Any]] | None
    earlier = settings.get("page_config_hook")

    def hook(handler: Any, page_config: dict[str, Any]) -> dict[str, Any]:
        if earlier is not None:
            page_config = earlier(handler, page_config)
        on_page(handler)
        return with_our_options(page_config)

    settings["page_config_hook"] = hook
