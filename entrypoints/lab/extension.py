"""The Lab edge as a Jupyter server extension app: what it adds to the server as it loads
(the collaboration endpoints, the page config and its hook) and what it ends at the
server's stop. jupyter_server awaits ``stop_extension`` of an extension app (a plain
module extension has no such hook) before it stops the kernels and the websockets: the
tasks the edge keeps (a page's preparation, tree_page.py; a room websocket's revival
wait; a stand-in's question to a room) are cancelled there and awaited, so none is left
pending when the process ends; a daemon's revival under way stops waiting
(daemon_revival.py), so its thread does not hold the process's exit."""

from __future__ import annotations

from jupyter_server.extension.application import ExtensionApp

from nbstage.entrypoints.common.kept_tasks import stop_kept
from nbstage.entrypoints.lab import export_formats, page_config, tree_page
from nbstage.entrypoints.lab.daemon_revival import REVIVAL
from nbstage.entrypoints.lab.handlers import HANDLERS, RoomSocket
from nbstage.entrypoints.lab.room_kernels import StandInChannels


class LabEdge(ExtensionApp):  # type: ignore[misc]
    name = "nbstage_lab"

    def initialize_settings(self) -> None:
        # ExtensionApp copies these settings back into the web app's once this returns.
        page_config.install(self.settings, tree_page.page_asked)
        export_formats.find_soon()

    def initialize_handlers(self) -> None:
        self.handlers.extend(HANDLERS)

    async def stop_extension(self) -> None:
        kept = (tree_page.PREPARED, RoomSocket.revivals, StandInChannels.questions)
        count = await stop_kept(*kept)
        await REVIVAL.stop()
        self.serverapp.log.info("nbstage's Lab edge stopped, %d task(s) cancelled", count)
