"""The Room's shared Y document (actors/room/shared_doc.py) and the records a person's
edit becomes (actors/room/person_edits.py), as tables, with a headless pycrdt peer."""

from __future__ import annotations

import random

import orjson
import pytest
from jupyter_ydoc import YNotebook
from pycrdt import (
    Doc,
    Map,
    YMessageType,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)

from nbstage.actors.daemon.notebook import journal
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.notebook.notebook_files import load_notebook
from nbstage.actors.daemon.room import person_edits, shared_cells
from nbstage.actors.daemon.room.order_steps import Delete, Step, steps
from nbstage.actors.daemon.room.shared_doc import SharedDoc, UnreadableMessage


def _doc(*sources: str) -> Document:
    doc = Document.empty()
    for source in sources:
        doc.create_cell(source, "code", None)
    return doc


class Peer:
    """A person's browser, headless: a YNotebook kept in step through the room's messages."""

    def __init__(self, shared: SharedDoc, peer_id: str = "p1") -> None:
        self.shared, self.peer_id = shared, peer_id
        self.notebook = YNotebook(Doc())
        self.sent: list[bytes] = []
        self.notebook.ydoc.observe(lambda e: self.sent.append(create_update_message(e.update)))
        for message in shared.join(peer_id, 7):
            self.hear(message)
        self.say(create_sync_message(self.notebook.ydoc))
        self.sent.clear()

    def hear(self, message: bytes) -> None:
        if message[0] == YMessageType.SYNC:
            reply = handle_sync_message(message[1:], self.notebook.ydoc)
            if reply is not None:
                self.say(reply)

    def say(self, message: bytes) -> None:
        heard = self.shared.receive(message)
        for reply in heard.replies:
            self.hear(reply)

    def flush(self) -> bool:
        """Send what this peer changed; whether the room saw an edit."""
        edited = False
        sent, self.sent = self.sent, []
        for message in sent:
            edited |= self.shared.receive(message).edited
        return edited

    def sources(self) -> list[str]:
        return [cell["source"] for cell in self.notebook.get()["cells"]]


def test_a_joining_peer_gets_the_rooms_cells_with_their_ids() -> None:
    doc = _doc("a = 1", "b = 2")
    peer = Peer(SharedDoc.of(doc))
    assert [c["id"] for c in peer.notebook.get()["cells"]] == [c.id for c in doc.cells]
    assert peer.sources() == ["a = 1", "b = 2"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.create_cell("new", "code", None), ["x", "y", "new"]),
        (lambda d: d.set_cell(d.cells[0].id, "x2", None), ["x2", "y"]),
        (lambda d: d.delete_cell(d.cells[1].id), ["x"]),
        (lambda d: d.move_cell(d.cells[0].id, d.cells[1].id), ["y", "x"]),
    ],
    ids=["create", "set", "delete", "move"],
)
def test_a_room_change_reaches_the_peer_as_one_update(change, expected) -> None:
    doc = _doc("x", "y")
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    change(doc)
    updates = shared.mirror(doc)
    assert len(updates) == 1
    peer.hear(updates[0])
    assert peer.sources() == expected


def test_outputs_and_execution_count_are_mirrored() -> None:
    doc = _doc("print(1)")
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    outputs = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    doc.set_outputs(doc.cells[0].id, outputs, 3)
    for update in shared.mirror(doc):
        peer.hear(update)
    cell = peer.notebook.get()["cells"][0]
    assert (cell["execution_count"], cell["outputs"]) == (3, outputs)


def test_an_unchanged_document_sends_nothing() -> None:
    doc = _doc("x")
    shared = SharedDoc.of(doc)
    assert shared.mirror(doc) == []
    doc.revision += 1
    assert shared.mirror(doc) == []


def _person(doc: Document, edit) -> list[dict]:
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    edit(peer.notebook)
    assert peer.flush()
    records = person_edits.records(doc, shared.edited_content(doc))
    assert records == person_edits.records(doc, shared.content())
    return records


def _typed(nb: YNotebook) -> None:
    source = nb.ycells[0]["source"]
    source += " + 1"


def _added(nb: YNotebook) -> None:
    nb.append_cell({"id": "fresh", "cell_type": "markdown", "source": "# hi", "metadata": {}})


def _deleted(nb: YNotebook) -> None:
    nb.ycells.pop(0)


def _moved(nb: YNotebook) -> None:
    """As JupyterLab moves a cell: out of the array, and a copy in at its new place."""
    cell = nb.get_cell(0)
    with nb.ydoc.transaction():
        nb.ycells.pop(0)
        nb.ycells.insert(1, nb.create_ycell(cell))


def _retyped(nb: YNotebook) -> None:
    cell = nb.get_cell(1)
    nb.set_cell(1, {**cell, "cell_type": "markdown"})


@pytest.mark.parametrize(
    ("edit", "ops", "sources"),
    [
        (_typed, ["put"], ["a + 1", "b"]),
        (_added, ["put"], ["a", "b", "# hi"]),
        (_deleted, ["delete"], ["b"]),
        (_moved, ["move"], ["b", "a"]),
        (_retyped, ["put"], ["a", "b"]),
    ],
    ids=["typed", "added", "deleted", "moved", "retyped"],
)
def test_a_persons_edit_becomes_journal_records_that_bring_the_room_there(
    edit, ops, sources
) -> None:
    doc = _doc("a", "b")
    records = _person(doc, edit)
    assert [r["op"] for r in records] == ops
    after = Document.from_json(journal.apply_records(doc.to_json(), records).notebook)
    assert [c.source for c in after.cells] == sources


def test_a_persons_put_keeps_the_rooms_outputs_and_count() -> None:
    doc = _doc("a")
    outputs = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    doc.set_outputs(doc.cells[0].id, outputs, 4)
    records = _person(doc, _typed)
    after = journal.apply_records(doc.to_json(), records).notebook["cells"][0]
    assert (after["source"], after["outputs"], after["execution_count"]) == ("a + 1", outputs, 4)


def test_cells_without_a_usable_id_are_not_taken() -> None:
    doc = _doc("a")
    shared = {"cells": [doc.cells[0].to_json(), {"cell_type": "code", "source": "x", "id": "a b"}]}
    assert person_edits.records(doc, shared) == []


@pytest.mark.parametrize(
    "message",
    [b"", b"\x00", b"\x00\x07\x01\x00", b"\x09\x00", b"\x00\x02\x05\xff\xff\xff\xff\xff"],
    ids=["empty", "no-step", "bad-step", "bad-type", "bad-update"],
)
def test_a_malformed_message_is_refused_and_the_document_carries_on(message) -> None:
    doc = _doc("a")
    shared = SharedDoc.of(doc)
    with pytest.raises(UnreadableMessage):
        shared.receive(message)
    peer = Peer(shared)
    doc.create_cell("b", "code", None)
    for update in shared.mirror(doc):
        peer.hear(update)
    assert peer.sources() == ["a", "b"]


def test_an_update_from_one_peer_is_relayed_to_the_others() -> None:
    doc = _doc("a")
    shared = SharedDoc.of(doc)
    first, second = Peer(shared, "p1"), Peer(shared, "p2")
    _typed(first.notebook)
    sent, first.sent = first.sent, []
    heard = shared.receive(sent[0])
    assert heard.edited
    assert shared.others("p1") == [("p2", 7)]
    for message in heard.relay:
        second.hear(message)
    assert second.sources() == ["a + 1"]


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.set_cell(d.cells[1].id, "edited", None),
        lambda d: d.set_cell(d.cells[1].id, None, "markdown"),
        lambda d: d.set_outputs(
            d.cells[0].id, [{"output_type": "stream", "name": "stdout", "text": "a"}], 1
        ),
        lambda d: d.set_outputs(
            d.cells[0].id,
            [
                {"output_type": "stream", "name": "stdout", "text": "0"},
                {"output_type": "stream", "name": "stderr", "text": "b"},
            ],
            1,
        ),
        lambda d: d.set_outputs(d.cells[0].id, [], None),
        lambda d: d.set_dependencies(["numpy"]),
    ],
    ids=["source", "type", "outputs", "appended", "cleared", "metadata"],
)
def test_a_content_change_leaves_the_y_document_equal_to_the_room(change) -> None:
    doc = _doc("a", "b", "c")
    doc.set_outputs(doc.cells[0].id, [{"output_type": "stream", "name": "stdout", "text": "0"}], 1)
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    change(doc)
    for update in shared.mirror(doc):
        peer.hear(update)
    assert shared.content() == doc.to_json()
    assert peer.notebook.get() == doc.to_json()


def test_queued_and_running_cells_show_as_running_until_they_finish() -> None:
    doc = _doc("a", "b")
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    first, second = doc.cells[0].id, doc.cells[1].id

    def states() -> list[str]:
        return [str(c.get("execution_state")) for c in peer.notebook.ycells.to_py()]

    for running, expected in [
        ({first, second}, ["running", "running"]),
        ({second}, ["idle", "running"]),
        (set(), ["idle", "idle"]),
    ]:
        for update in shared.mirror(doc, frozenset(running)):
            peer.hear(update)
        assert states() == expected
    doc.create_cell("c", "code", 0)
    for update in shared.mirror(doc, frozenset({first})):
        peer.hear(update)
    assert states() == ["idle", "running", "idle"]


# --- granular structure: order_steps.py and the mirror that uses it -----------------------


def _applied(before: list[str], done: list[Step]) -> list[str]:
    ids = list(before)
    for step in done:
        if isinstance(step, Delete):
            del ids[step.index]
        else:
            ids.insert(step.index, step.cell_id)
    return ids


ABCDE = list("abcde")


@pytest.mark.parametrize(
    ("before", "after", "count"),
    [
        (ABCDE, ABCDE, 0),
        (ABCDE, [*ABCDE, "f"], 1),
        (ABCDE, ["f", *ABCDE], 1),
        (ABCDE, list("abfcde"), 1),
        (ABCDE, list("abde"), 1),
        (ABCDE, list("bcdea"), 2),
        (ABCDE, list("eabcd"), 2),
        (ABCDE, list("acbde"), 2),
        (ABCDE, list("edcba"), 8),
        (ABCDE, [], 5),
        ([], ABCDE, 5),
        (ABCDE, list("xbzdy"), 6),
        (list("ab"), list("ba"), 2),
    ],
    ids=[
        "same",
        "append",
        "prepend",
        "insert",
        "delete",
        "first-to-last",
        "last-to-first",
        "swap",
        "reverse",
        "clear",
        "fill",
        "replace-some",
        "two-swapped",
    ],
)
def test_order_steps_bring_one_order_to_the_other_in_few_steps(before, after, count) -> None:
    done = steps(before, after)
    assert _applied(before, done) == after
    assert len(done) == count


def test_one_move_in_a_thousand_cells_is_two_steps() -> None:
    before = [f"c{i}" for i in range(1000)]
    after = list(before)
    after.insert(10, after.pop(900))
    done = steps(before, after)
    assert (_applied(before, done), len(done)) == (after, 2)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.create_cell("new", "code", 500),
        lambda d: d.delete_cell(d.cells[500].id),
        lambda d: d.move_cell(d.cells[900].id, d.cells[10].id),
    ],
    ids=["create", "delete", "move"],
)
def test_a_structural_change_in_a_big_notebook_touches_one_or_two_cells(change) -> None:
    """The update a person receives carries the cell concerned, not the notebook."""
    doc = _doc(*[f"x = {i}" for i in range(1000)])
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    change(doc)
    updates = shared.mirror(doc)
    assert len(updates) == 1
    assert len(updates[0]) < 400
    peer.hear(updates[0])
    assert peer.notebook.get() == doc.to_json() == shared.content()


def test_a_cell_a_person_doubled_is_taken_out_and_their_new_cell_kept() -> None:
    doc = _doc("a", "b")
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    first = peer.notebook.get_cell(0)
    with peer.notebook.ydoc.transaction():
        peer.notebook.ycells.append(peer.notebook.create_ycell(first))
        peer.notebook.append_cell(
            {"id": "mine", "cell_type": "code", "source": "m", "metadata": {}}
        )
    assert peer.flush()
    records = person_edits.records(doc, shared.edited_content(doc))
    applied = journal.apply_records(doc.to_json(), records).notebook
    fresh = Document.from_json(applied)
    doc.replace(fresh)
    for update in shared.mirror(doc):
        peer.hear(update)
    ids = [c["id"] for c in peer.notebook.ycells.to_py()]
    assert ids == [c.id for c in doc.cells]
    assert ids[2:] == ["mine"]


def test_a_notebook_without_cells_has_none_in_the_y_document() -> None:
    doc = Document.empty()
    shared = SharedDoc.of(doc)
    assert shared.notebook.ycells.to_py() == []
    peer = Peer(shared)
    doc.create_cell("a", "code", None)
    for update in shared.mirror(doc):
        peer.hear(update)
    assert peer.sources() == ["a"]


def test_a_keystroke_in_a_big_notebook_reads_back_the_one_cell_it_changed() -> None:
    doc = _doc(*[f"x = {i}" for i in range(300)])
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    source = peer.notebook.ycells[200]["source"]
    source += "1"
    assert peer.flush()
    content = shared.edited_content(doc)
    assert content["cells"][200]["source"] == "x = 2001"
    assert content["cells"][:200] == [c.to_json(include_outputs=False) for c in doc.cells[:200]]
    records = person_edits.records(doc, content)
    assert [(r["op"], r["cell"]["source"]) for r in records] == [("put", "x = 2001")]


def test_a_persons_edit_leaves_the_other_cells_alone_and_the_mirror_sends_nothing() -> None:
    """The cells a person's records do not name stay the same objects (outputs and all):
    the mirror that follows has nothing to write, where rewriting every cell's outputs
    after a keystroke would flicker them in every browser."""
    doc = _doc(*[f"x = {i}" for i in range(20)])
    for cell in doc.cells:
        doc.set_outputs(cell.id, [{"output_type": "stream", "name": "stdout", "text": "1"}], 1)
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    text = peer.notebook.ycells[7]["source"]
    text += "1"
    assert peer.flush()
    before = list(doc.cells)
    person_edits.take(doc, person_edits.records(doc, shared.edited_content(doc)))
    assert [a is b for a, b in zip(before, doc.cells, strict=True)] == [i != 7 for i in range(20)]
    assert (doc.cells[7].source, doc.cells[7].outputs) == ("x = 71", before[7].outputs)
    assert doc.cells[7].outputs is before[7].outputs
    assert shared.mirror(doc) == []


def _random_change(doc: Document, rng: random.Random) -> None:
    """One of the Room's own changes, at a random place."""
    n = len(doc.cells)
    some = doc.cells[rng.randrange(n)].id if n else None
    kind = rng.choice(["create", "create", "delete", "move", "source", "outputs", "clear", "tags"])
    if kind == "create" or some is None:
        doc.create_cell(
            f"new {rng.random():.3f}", rng.choice(["code", "markdown"]), rng.randint(0, n)
        )
    elif kind == "delete":
        doc.delete_cell(some)
    elif kind == "move":
        doc.move_cell(some, rng.choice([None, *[c.id for c in doc.cells if c.id != some]]))
    elif kind == "source":
        doc.set_cell(some, source=f"changed {rng.random():.3f}")
    elif doc.cell(some).cell_type != "code":
        doc.set_cell(some, cell_type="code")
    elif kind == "outputs":
        text = f"{rng.random():.3f}"
        doc.set_outputs(some, [{"output_type": "stream", "name": "stdout", "text": text}], n)
    elif kind == "clear":
        doc.clear_outputs(some if rng.random() < 0.7 else None)
    else:
        doc.change_tags(some, [rng.choice("xyz")], [rng.choice("xyz")])


@pytest.mark.parametrize("seed", range(3))
def test_the_mirror_that_looks_only_at_changed_cells_keeps_the_person_equal_to_the_room(
    seed: int,
) -> None:
    """Seeded mixes of the Room's changes, a person's edits and whole replacements (a merge
    with the file), mirrored in batches: after each mirror the person holds the Room's
    notebook exactly, though most mirrors compare only the cells the Document names."""
    rng = random.Random(seed)
    doc = _doc(*[f"x = {i}" for i in range(40)])
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    for _ in range(60):
        for _ in range(rng.randint(1, 4)):
            _random_change(doc, rng)
        if rng.random() < 0.1:
            doc.replace(Document.from_json(doc.to_json()))
        if rng.random() < 0.15 and len(peer.notebook.ycells):
            index = rng.randrange(len(peer.notebook.ycells))
            text = peer.notebook.ycells[index]["source"]
            text += "!"
            if peer.flush():
                person_edits.take(doc, person_edits.records(doc, shared.edited_content(doc)))
        for update in shared.mirror(doc):
            peer.hear(update)
        assert peer.notebook.get() == doc.to_json() == shared.content()


def _big_and_followed() -> tuple[Document, SharedDoc, Peer]:
    """A 1,000-cell notebook whose shared document has had its first mirror, which after a
    build reads every cell."""
    doc = _doc(*[f"x = {i}" for i in range(1000)])
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    doc.set_cell(doc.cells[0].id, source="first")
    for update in shared.mirror(doc):
        peer.hear(update)
    return doc, shared, peer


def test_a_change_in_a_big_notebook_is_mirrored_without_fingerprinting_every_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc, shared, peer = _big_and_followed()
    counted = []
    fingerprint = shared_cells.fingerprint
    monkeypatch.setattr(
        shared_cells, "fingerprint", lambda cell: counted.append(cell.id) or fingerprint(cell)
    )
    made, _ = doc.create_cell("new", "code", 0)
    doc.set_cell(doc.cells[500].id, source="changed")
    for update in shared.mirror(doc):
        peer.hear(update)
    assert sorted(counted) == sorted([made.id, doc.cells[500].id])
    assert peer.notebook.get() == doc.to_json()


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        (3.0, 3),
        (-2.0, -2),
        (2.5, 2.5),
        (1e21, 1e21),
        (1e19, 1e19),
        (float(2**63 - 1024), 2**63 - 1024),
        (float("inf"), float("inf")),
        ([1.0, {"x": 2.0}], [1, {"x": 2}]),
        (True, True),
        ("1.0", "1.0"),
    ],
)
def test_a_y_number_becomes_an_int_only_where_one_can_stand_for_it(given, taken) -> None:
    value = {"v": given}
    shared_cells.whole_numbers(value)
    assert value == {"v": taken}
    assert type(value["v"]) is type(taken)


def test_a_persons_metadata_with_numbers_no_int_holds_is_taken_and_can_be_journalled() -> None:
    """jupyter_ydoc's cast raised on an infinity and made 1e21 an int orjson cannot write:
    the person's edit was lost, or every save of the notebook failed after it."""
    doc = _doc("a")
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    metadata = {"big": 1e21, "i64": 1e19, "far": float("inf"), "n": 3.0}
    peer.notebook.ycells[0]["metadata"] = Map(metadata)
    assert peer.flush()
    records = person_edits.records(doc, shared.edited_content(doc))
    assert orjson.loads(orjson.dumps(records))  # what the journal appends
    person_edits.take(doc, records)
    assert doc.cells[0].metadata == {"big": 1e21, "i64": 1e19, "far": float("inf"), "n": 3}
    assert type(doc.cells[0].metadata["i64"]) is float
    assert orjson.dumps(doc.to_json())  # what a save writes


def _persons_edit(peer: Peer, rng: random.Random) -> None:
    """One thing a person does in their browser, in place or moving cells."""
    ycells = peer.notebook.ycells
    at = rng.randrange(len(ycells))
    kind = rng.choice(["type", "type", "type", "metadata", "retype", "add", "delete", "move"])
    if kind == "type":
        text = ycells[at]["source"]
        text += rng.choice("ab\n")
    elif kind == "metadata":
        ycells[at]["metadata"] = Map({"tags": [rng.choice("xyz")], "n": float(rng.randint(0, 3))})
    elif kind == "retype":
        cell = peer.notebook.get_cell(at)
        cell["cell_type"] = "markdown" if cell["cell_type"] == "code" else "code"
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
        if cell["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None)
        peer.notebook.set_cell(at, cell)
    elif kind == "add":
        new = {"id": f"p{rng.randrange(10**6)}", "cell_type": "code", "source": "n", "metadata": {}}
        peer.notebook.ycells.insert(at, peer.notebook.create_ycell(new))
    elif kind == "delete" and len(ycells) > 1:
        del ycells[at]
    elif kind == "move" and len(ycells) > 1:
        moved = peer.notebook.get_cell(at)
        del ycells[at]
        ycells.insert(rng.randrange(len(ycells) + 1), peer.notebook.create_ycell(moved))


@pytest.mark.parametrize("seed", range(4))
def test_a_persons_records_from_the_changed_cells_alone_are_those_from_every_cell(
    seed: int,
) -> None:
    rng = random.Random(seed)
    doc = _doc(*[f"x = {i}" for i in range(30)])
    for cell in doc.cells[::3]:
        doc.set_outputs(cell.id, [{"output_type": "stream", "name": "stdout", "text": "1"}], 1)
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    quick_ones = 0
    for _ in range(40):
        _persons_edit(peer, rng)
        if not peer.flush():
            continue
        whole = person_edits.records(doc, shared.edited_content(doc))
        changed = shared.edited_in_place(doc)
        quick = None if changed is None else person_edits.records_in_place(doc, changed)
        if quick is not None:
            quick_ones += 1
            assert quick == whole
        person_edits.take(doc, whole)
        for update in shared.mirror(doc):
            peer.hear(update)
        assert peer.notebook.get() == doc.to_json()
    assert quick_ones > 10, "the mix had in-place edits to compare"


def test_a_keystroke_in_a_big_notebook_is_taken_without_reading_every_cell(monkeypatch) -> None:
    doc = _doc(*[f"x = {i}" for i in range(1000)])
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    text = peer.notebook.ycells[700]["source"]
    text += "1"
    assert peer.flush()
    monkeypatch.setattr(shared, "edited_content", lambda doc: pytest.fail("read every cell"))
    changed = shared.edited_in_place(doc)
    assert changed is not None
    assert list(changed) == [700]
    records = person_edits.records_in_place(doc, changed)
    assert [(r["op"], r["index"], r["cell"]["source"]) for r in records] == [
        ("put", 700, "x = 7001")
    ]


def test_the_mirror_after_a_persons_keystroke_compares_the_cell_typed_in(monkeypatch) -> None:
    doc, shared, peer = _big_and_followed()
    text = peer.notebook.ycells[300]["source"]
    text += "1"
    assert peer.flush()
    person_edits.take(doc, person_edits.records(doc, shared.edited_content(doc)))
    counted = []
    fingerprint = shared_cells.fingerprint
    monkeypatch.setattr(
        shared_cells, "fingerprint", lambda cell: counted.append(cell.id) or fingerprint(cell)
    )
    for update in shared.mirror(doc):
        peer.hear(update)
    assert counted == [doc.cells[300].id]
    assert peer.notebook.get() == doc.to_json() == shared.content()

    shared.mirror(doc)  # 1e19 taken as an int made pycrdt panic writing the metadata back


def test_a_file_holding_an_integer_from_2_to_the_63_builds_and_mirrors(tmp_path) -> None:
    """orjson writes it, pycrdt does not: kept as an int, the build on the worker panicked
    (a BaseException, past the offload's ``except Exception``: no answer ever came)."""
    output = {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "n"}}
    cell = {"id": "a", "cell_type": "code", "source": "", "execution_count": 1}
    cells = [{**cell, "metadata": {"n": 2**63 + 1}, "outputs": [output]}]
    path = tmp_path / "big.ipynb"
    path.write_text(orjson.dumps({"cells": cells, "metadata": {}, "nbformat": 4}).decode())
    doc = Document.from_json(load_notebook(path))
    shared = SharedDoc.of(doc)
    shared.mirror(doc)
    assert shared.notebook.get_cell(0)["metadata"]["n"] == float(2**63)


def test_a_float_in_a_cells_metadata_stays_one_when_the_person_types_in_the_cell() -> None:
    """The Y document gives back 2.0 as a float, read as 2: the put of the person's
    keystroke carried it, and the file's ``2.0`` was saved as ``2``."""
    doc = _doc("x")
    doc.cells[0].metadata = {"scale": 2.0, "flag": True, "sizes": [1.0, 2], "n": 3}
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    text = peer.notebook.ycells[0]["source"]
    text += "y"
    assert peer.flush()
    person_edits.take(doc, person_edits.records(doc, shared.edited_content(doc)))
    assert doc.cells[0].source == "xy"
    metadata = doc.cells[0].metadata
    expected = b'{"flag":true,"n":3,"scale":2.0,"sizes":[1.0,2]}'
    assert orjson.dumps(metadata, option=orjson.OPT_SORT_KEYS) == expected


def test_a_number_the_person_changed_in_a_cells_metadata_is_theirs() -> None:
    doc = _doc("x")
    doc.cells[0].metadata = {"scale": 2.0}
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    peer.notebook.ycells[0]["metadata"] = Map({"scale": 3.0, "new": 1.0})
    assert peer.flush()
    person_edits.take(doc, person_edits.records(doc, shared.edited_content(doc)))
    assert (
        orjson.dumps(doc.cells[0].metadata, option=orjson.OPT_SORT_KEYS) == b'{"new":1,"scale":3}'
    )


def test_an_output_holding_an_int_past_64_bits_reaches_the_person_as_a_float() -> None:
    """orjson reads a kernel's message with such ints (up to 2**64); pycrdt holds none."""
    doc = _doc("a")
    shared = SharedDoc.of(doc)
    peer = Peer(shared)
    data = {"application/json": {"n": 2**63 + 1}, "text/plain": "n"}
    output = {"output_type": "display_data", "metadata": {}, "data": data}
    doc.set_outputs(doc.cells[0].id, [output], 1)
    doc.create_cell("b", "code", 0)
    for update in shared.mirror(doc):
        peer.hear(update)
    held = peer.notebook.get()["cells"][1]["outputs"][0]["data"]["application/json"]["n"]
    assert held == float(2**63 + 1)
    assert SharedDoc.of(doc).content()["cells"][1]["outputs"][0]["data"]["application/json"]
