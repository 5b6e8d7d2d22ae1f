"""How a finished tool result leaves the session child: at once, or, when it shows images
and the figure folder is on, once those images are written to the folder
(figure_files.py), on the ``figures`` lane.

Plain functions returning effects (actors/common/effects.py) that the SessionManager
carries out; nothing here sends or offloads itself.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import orjson

from nbstage.actors.common.effects import Effect, Offload, Send
from nbstage.actors.session import figure_files
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.session.session_followups import FiguresWritten
from nbstage.protocol.session.supervision import SessionConfig, ToolCallFinished

log = logging.getLogger("nbstage.session")


def figure_folder(config: SessionConfig | None) -> str | None:
    """Where figures are written, or None when they are not."""
    if config is None or config.figure_files <= 0:
        return None
    return os.path.join(config.state_dir, figure_files.FOLDER)


def delivered(
    call_id: str, result: dict[str, Any], config: SessionConfig | None, supervisor: Any
) -> Effect:
    """The result to the supervisor now, or its images written first."""
    images = figure_files.images_in(result)
    folder = figure_folder(config)
    if not images or folder is None or config is None:
        return Send(supervisor, ToolCallFinished(call_id, orjson.dumps(result)))
    keep = config.figure_files
    return Offload(
        FiguresWritten(call_id, orjson.dumps(result)),
        lambda: figure_files.write_figures(folder, images, keep),
        "figures",
    )


def after_figures(done: BlockingWorkDone, supervisor: Any) -> Send:
    """The result goes out once its images are on disk; if they could not be written,
    it goes out without naming their files."""
    token: FiguresWritten = done.token
    result_json = token.result_json
    if not done.ok:
        log.warning("figures not written: %s", done.error)
        result_json = orjson.dumps(figure_files.without_files(orjson.loads(result_json)))
    return Send(supervisor, ToolCallFinished(token.call_id, result_json))
