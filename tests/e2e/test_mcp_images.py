"""Images from a real kernel, read back through every tool that renders outputs (SPEC §4).

A PNG, a JPEG, an SVG (which carries a base64 raster inside its markup) and a 3 MiB PNG
are displayed by cells that build their bytes in the kernel (``tests/images.py``). Every
read tool and format must keep base64 out of text and structuredContent, describe each
image, and send each small PNG or JPEG exactly once as image content.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from nbstage.actors.session.rendering import NOT_SENT, SENT, TIMES, TOO_LARGE
from tests.images import BUILDERS_SOURCE, base64_runs, jpeg_bytes, png_bytes
from tests.support import RunningDaemon, call_ok, mcp_client, run_bounded, texts_of

pytestmark = pytest.mark.e2e

PNG = png_bytes(4, 4)
JPEG = jpeg_bytes(16, 8, 3000)
BIG_PNG = png_bytes(1024, 1024, seed=1)
PNG_ITEM = ("image/png", base64.b64encode(PNG).decode())
JPEG_ITEM = ("image/jpeg", base64.b64encode(JPEG).decode())

SOURCES = {
    "png": 'display(Image(data=png_bytes(4, 4), format="png"))',
    "jpeg": 'display(Image(data=jpeg_bytes(16, 8, 3000), format="jpeg"))',
    "svg": "display(SVG(data=svg_text(4, 4, png_bytes(40, 40, seed=2))))",
    "big": 'display(Image(data=png_bytes(1024, 1024, seed=1), format="png"))',
}
IMAGES = {"png": [PNG_ITEM], "jpeg": [JPEG_ITEM], "svg": [], "big": []}
"""What each cell sends as image content: only the small PNG and JPEG."""

DESCRIPTIONS = {
    "png": (
        "image/png",
        re.compile(rf"<image 4{TIMES}4, {len(PNG)} bytes: {SENT}; file /\S+/figures/\w+\.png>"),
    ),
    "jpeg": (
        "image/jpeg",
        re.compile(rf"<image 16{TIMES}8, {len(JPEG):,} bytes: {SENT}; file /\S+/figures/\w+\.jpg>"),
    ),
    "svg": ("image/svg+xml", re.compile(rf"<SVG, [\d,]+ bytes: {re.escape(NOT_SENT)}>")),
    "big": ("image/png", f"<image 1024{TIMES}1024, {len(BIG_PNG):,} bytes: {TOO_LARGE}>"),
}
"""What stands in for each cell's image in JSON views: its MIME type and description (a
sent image names the file it is also written to, for clients that drop image content)."""


def check(result: Any, images: list[tuple[str, str]], what: str) -> None:
    """No base64 in any text item or in structuredContent; ``images`` sent, once each."""
    assert not result.is_error, f"{what}: {texts_of(result)}"
    assert {item.type for item in result.content} <= {"text", "image"}, what
    sent = [(item.mime_type, item.data) for item in result.content if item.type == "image"]
    assert sent == images, what
    assert base64_runs(texts_of(result)) == [], what
    assert base64_runs(result.structured_content) == [], what


def check_data(output: dict[str, Any], kind: str) -> None:
    """An output's data shows ``kind``'s image as its description."""
    mime, description = DESCRIPTIONS[kind]
    shown = output["data"][mime]
    if isinstance(description, re.Pattern):
        assert description.fullmatch(shown), shown
    else:
        assert shown == description


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_images_are_described_everywhere_and_sent_once_as_image_content(
    daemon: RunningDaemon, mode: str
) -> None:
    async def call(client: Any, name: str, images: list, **arguments: Any) -> Any:
        result = await client.call_tool(name, arguments)
        check(result, images, f"{name}({arguments})")
        return result

    async def body() -> None:
        async with mcp_client(daemon, mode) as client:
            await call_ok(client, "create_notebook")
            prelude = BUILDERS_SOURCE + "\nfrom IPython.display import SVG, Image, display\n"
            await call(client, "create_cell", [], source=prelude, and_run=True)
            cells, executions = {}, {}
            for kind, source in SOURCES.items():
                ran = await call(client, "create_cell", IMAGES[kind], source=source, and_run=True)
                execution = ran.structured_content["execution"]
                assert execution["status"] == "done", texts_of(ran)
                cells[kind] = ran.structured_content["cell_id"]
                executions[kind] = execution["execution_id"]

            # Described in text where not sent, with its size and, for a PNG, its dimensions.
            ran = await call(client, "execute_cell", [], cell_id=cells["svg"])
            assert any(text.startswith("[image/svg+xml, ") for text in texts_of(ran))
            ran = await call(client, "execute_cell", [], cell_id=cells["big"])
            assert f"[image/png 1024{TIMES}1024, {len(BIG_PNG):,} bytes: {TOO_LARGE}]" in (
                texts_of(ran)
            )

            for kind, cell_id in cells.items():
                images = IMAGES[kind]
                rerun = await call(client, "execute_cell", images, cell_id=cell_id)
                rerun_id = rerun.structured_content["execution"]["execution_id"]
                for full_output in (False, True):
                    for execution_id in (executions[kind], rerun_id):
                        got = await call(
                            client,
                            "get_results",
                            images,
                            execution_id=execution_id,
                            full_output=full_output,
                        )
                        (output,) = got.structured_content["execution"]["outputs"]
                        if full_output:
                            check_data(output, kind)
                    shown = await call(
                        client, "get_cell", images, cell_id=cell_id, full_output=full_output
                    )
                    (output,) = shown.structured_content["cell"]["outputs"]
                    if full_output:
                        check_data(output, kind)

            edit = {"cell_id": cells["png"], "source": SOURCES["png"], "and_run": True}
            await call(client, "set_cell", [PNG_ITEM], **edit)
            edit = {"cell_id": cells["jpeg"], "match": "16, 8", "content": "16, 8"}
            await call(client, "replace_match", [JPEG_ITEM], **edit, and_run=True)
            await call(client, "run_all_cells", [PNG_ITEM, JPEG_ITEM])

            small = [PNG_ITEM, JPEG_ITEM]
            await call(client, "get_all_cells", [], format="summary")
            await call(client, "get_all_cells", [], format="json")
            await call(client, "get_all_cells", [], format="rich")
            rich = await call(client, "get_all_cells", small, format="rich", include_outputs=True)
            assert len(rich.structured_content["cells"]) == len(cells) + 1
            listed = await call(client, "get_all_cells", small, format="json", include_outputs=True)
            structured = listed.structured_content
            assert json.loads(texts_of(listed)[0]) == structured
            by_id = {cell["id"]: cell for cell in structured["cells"]}
            for kind, cell_id in cells.items():
                (output,) = by_id[cell_id]["outputs"]
                check_data(output, kind)

    run_bounded(body)
