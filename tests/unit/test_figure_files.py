"""Attached images also written as files, for clients that drop image content (Codex)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

from nbstage.actors.session import figure_files
from nbstage.actors.session.figure_files import figure_path, images_in, without_files, write_figures
from tests.images import png_bytes


def encoded(seed: int) -> str:
    return base64.b64encode(png_bytes(3, 2, seed=seed)).decode()


def test_each_image_is_written_once_0600_in_a_0700_folder(tmp_path: Path) -> None:
    folder = str(tmp_path / "figures")
    write_figures(folder, [(encoded(1), "image/png"), (encoded(1), "image/png")], keep=8)
    path = Path(figure_path(folder, encoded(1), "image/png"))
    assert path.read_bytes() == png_bytes(3, 2, seed=1)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(folder).stat().st_mode) == 0o700
    assert os.listdir(folder) == [path.name]


def test_the_folder_keeps_the_newest_files(tmp_path: Path) -> None:
    folder = str(tmp_path / "figures")
    for seed in range(5):
        write_figures(folder, [(encoded(seed), "image/png")], keep=3)
        path = figure_path(folder, encoded(seed), "image/png")
        os.utime(path, ns=(seed * 10**9, seed * 10**9))
    write_figures(folder, [(encoded(1), "image/png")], keep=3)
    kept = {figure_path(folder, encoded(seed), "image/png") for seed in (1, 3, 4)}
    assert {str(p) for p in Path(folder).iterdir()} == kept, "seen again counts as new"


def test_a_result_whose_images_were_not_written_names_no_file() -> None:
    result = {
        "content": [{"type": "image", "data": encoded(1), "mimeType": "image/png"}],
        "structuredContent": {
            "execution": {
                "outputs": [
                    {
                        "text": "x",
                        "images": [{"mime_type": "image/png", "attached": True, "file": "/f"}],
                    }
                ],
                "file": "kept: not an image",
            }
        },
    }
    assert images_in(result) == [(encoded(1), "image/png")]
    execution = without_files(result)["structuredContent"]["execution"]
    assert execution["outputs"][0]["images"] == [{"mime_type": "image/png", "attached": True}]
    assert execution["file"] == "kept: not an image"
    assert figure_files.FOLDER == "figures"
