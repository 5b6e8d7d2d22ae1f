"""A notebook file holding an integer past 64 bits (an output's JSON, say) is served and
saved: it is read as a float, as a kernel's message is. Before, the room opened it and
then failed every read of that cell and every save with an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from tests.conftest import FAST_SETTINGS
from tests.support import daemon_running

pytestmark = pytest.mark.e2e

BIG = 2**70


def test_a_number_past_64_bits_in_a_file_is_read_served_and_saved(
    state_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "big.ipynb"
    data = {"application/json": {"n": BIG}, "text/plain": "big"}
    output = {"output_type": "display_data", "metadata": {}, "data": data}
    cell = {"id": "a", "cell_type": "code", "source": "x", "metadata": {}, "execution_count": 1}
    notebook = {"cells": [{**cell, "outputs": [output]}], "metadata": {}, "nbformat": 4}
    path.write_text(json.dumps({**notebook, "nbformat_minor": 5}))  # orjson cannot write it
    assert str(BIG) in path.read_text()
    with daemon_running(state_dir, FAST_SETTINGS) as daemon, daemon.client() as client:
        notebook_id = client.request("open", path=str(path))["notebook_id"]
        shown = client.request("get_cell", notebook_id=notebook_id, cell_id="a")
        assert shown["cell"]["outputs"][0]["data"]["application/json"]["n"] == float(BIG)
        client.request("set_cell", notebook_id=notebook_id, cell_id="a", source="y")
        client.request("save", notebook_id=notebook_id)
    saved = orjson.loads(path.read_bytes())
    assert "".join(saved["cells"][0]["source"]) == "y"
    assert saved["cells"][0]["outputs"][0]["data"]["application/json"]["n"] == float(BIG)
