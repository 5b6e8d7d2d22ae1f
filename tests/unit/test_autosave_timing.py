"""When autosave falls due (autosave_timing.py, file_seat.py): a table, and a save that
edits go on during."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.room import file_seat
from nbstage.actors.daemon.room.actions import Wake
from nbstage.actors.daemon.room.autosave_timing import autosave_wait
from nbstage.actors.daemon.room.file_seat import FileSeat
from nbstage.actors.daemon.room.notices import NoticeBoard
from nbstage.protocol.common.offload import BlockingWorkDone
from nbstage.protocol.common.settings import Settings
from nbstage.protocol.daemon_actors.room_followups import SaveFinished, SavePurpose
from tests.unit.actor_harness import file_room_start

DELAY, MOST = 2.0, 10.0


@pytest.mark.parametrize(
    ("since", "now", "expected"),
    [
        (None, 100.0, (100.0, 2.0)),  # the first edit: due after the delay
        (100.0, 101.0, (100.0, 2.0)),  # another soon after: the delay again
        (100.0, 108.5, (100.0, 1.5)),  # near the cap: due at it
        (100.0, 110.0, (100.0, 0.0)),  # at the cap: due now
        (100.0, 130.0, (100.0, 0.0)),  # past it: due now, never a negative wait
    ],
)
def test_an_edit_is_saved_after_the_delay_and_never_after_the_cap(since, now, expected) -> None:
    assert autosave_wait(since, now, DELAY, MOST) == expected


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_edits_during_a_save_wait_the_delay_again_not_the_overdue_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent edits steadily: the save at the cap takes its snapshot, and an edit while
    it writes is due a delay later, capped from that edit; before, it was due at once
    (the cap counted from the stream's first edit), so saves ran back to back."""
    clock = Clock()
    monkeypatch.setattr(file_seat.time, "monotonic", clock)
    settings = Settings(autosave_delay_secs=DELAY, autosave_max_delay_secs=MOST)
    path = tmp_path / "n.ipynb"
    seat = FileSeat(NoticeBoard())
    seat.start(file_room_start("nb", path, settings, edge=None))  # type: ignore[arg-type]
    doc = Document.empty()

    def edit_at(moment: float) -> float:
        clock.now = 1000.0 + moment
        doc.create_cell("x", "code", None)
        (wake,) = seat.edited()
        assert isinstance(wake, Wake)
        return wake.seconds

    assert edit_at(0.0) == DELAY
    assert edit_at(9.5) == pytest.approx(0.5)
    assert edit_at(10.0) == 0.0
    (_offload,) = seat.save(doc, str(path), SavePurpose.AUTOSAVE, None, 0)
    written = doc.revision
    assert edit_at(10.2) == DELAY
    token = SaveFinished(None, written, SavePurpose.AUTOSAVE, None, 0)
    seat.settled(BlockingWorkDone(token), doc.revision)
    assert edit_at(19.0) == pytest.approx(1.2)  # capped from the first edit after the snapshot
    assert edit_at(20.2) == 0.0
