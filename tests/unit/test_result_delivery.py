"""How a finished tool result leaves the session child (actors/session/result_delivery.py):
at once, or after its figures are written."""

from __future__ import annotations

import base64
from pathlib import Path

import orjson
import pytest

from nbstage.actors.common.effects import Offload, Send
from nbstage.actors.session import result_delivery as delivery
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.session.session_followups import FiguresWritten
from nbstage.protocol.session.supervision import SessionConfig, ToolCallFinished

PNG = base64.b64encode(b"\x89PNG not really").decode()
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}
SHOWN = {"images": [{"mime_type": "image/png", "attached": True, "file": "/f.png"}]}
SUPERVISOR = object()


def config(state_dir: str, figure_files: int) -> SessionConfig:
    return SessionConfig(state_dir, "/s", "me", "op", "/", None, 1, 0, 1, True, figure_files)


@pytest.mark.parametrize(
    ("content", "figure_files", "offloaded"),
    [
        pytest.param([{"type": "text", "text": "x"}], 64, False, id="no image: at once"),
        pytest.param([IMAGE], 0, False, id="figures off: at once"),
        pytest.param([IMAGE], 64, True, id="an image: written first"),
    ],
)
def test_a_result_goes_at_once_unless_it_has_figures_to_write(
    tmp_path: Path, content: list, figure_files: int, offloaded: bool
) -> None:
    result = {"content": content}
    effect = delivery.delivered("c1", result, config(str(tmp_path), figure_files), SUPERVISOR)
    if not offloaded:
        assert effect == Send(SUPERVISOR, ToolCallFinished("c1", orjson.dumps(result)))
        return
    assert isinstance(effect, Offload)
    assert (effect.token, effect.lane) == (FiguresWritten("c1", orjson.dumps(result)), "figures")
    effect.work()
    assert [p.suffix for p in (tmp_path / "figures").iterdir()] == [".png"]


def test_no_config_yet_means_no_figures() -> None:
    assert delivery.figure_folder(None) is None
    effect = delivery.delivered("c1", {"content": [IMAGE]}, None, SUPERVISOR)
    assert isinstance(effect, Send)


def test_a_result_whose_figures_were_not_written_names_no_file() -> None:
    result = {"content": [IMAGE], "structuredContent": SHOWN}
    token = FiguresWritten("c1", orjson.dumps(result))
    failed = delivery.after_figures(BlockingWorkDone(token, None, OSError("disk full")), SUPERVISOR)
    sent = orjson.loads(failed.message.result_json)
    assert sent["structuredContent"] == {"images": [{"mime_type": "image/png", "attached": True}]}
    written = delivery.after_figures(BlockingWorkDone(token, None), SUPERVISOR)
    assert written == Send(SUPERVISOR, ToolCallFinished("c1", token.result_json))
