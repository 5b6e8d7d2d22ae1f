"""Cells as MCP tool content: one cell with its source fenced and its outputs, the
aligned summary lines of get_all_cells, and its json format with media described."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from nbstage.actors.session.media import described_data, media_in
from nbstage.actors.session.output_rendering import render_outputs
from nbstage.actors.session.text_forms import joined, json_text
from nbstage.protocol.common.words import plural
from nbstage.protocol.mcp.tool_results import text_content

_FENCE_LANGUAGES: Final = {"markdown": "markdown", "raw": ""}
_BACKTICK_RUN: Final = re.compile(r"`{3,}")


def render_cell(
    cell: Mapping[str, Any],
    full_output: bool = False,
    *,
    language: str = "python",
    figures: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One cell: a header with its source in a fenced block, then its outputs.

    Code cells are fenced as ``language``. Markdown and raw cells without ``outputs`` or
    ``execution_count`` get ``[]`` and ``None``. A cell shown without its outputs (it has
    ``output_count`` instead) has no ``outputs`` but ``output_count``.
    """
    cell_type = cell.get("cell_type", "code")
    source = joined(cell.get("source", ""))
    count = cell.get("execution_count")
    left_out = "outputs" not in cell and isinstance(cell.get("output_count"), int)
    outputs = cell.get("outputs") or []
    content, rendered = render_outputs(
        outputs, full_output, full_output_tool="get_cell", figures=figures
    )
    header = f"Cell {cell.get('cell_id')} ({cell_type})"
    if count is not None:
        header += f" [{count}]"
    if left_out and cell["output_count"]:
        header += f", {plural(cell['output_count'], 'output')} (not shown)"
    elif outputs:
        header += f", {plural(len(outputs), 'output')}"
    longest = max((len(run) for run in _BACKTICK_RUN.findall(source)), default=2)
    fence = "`" * (longest + 1)
    body = source[:-1] if source.endswith("\n") else source
    fenced = f"{header}\n{fence}{_FENCE_LANGUAGES.get(cell_type, language)}\n{body}\n{fence}"
    structured: dict[str, Any] = {
        "cell_id": cell.get("cell_id"),
        "cell_type": cell_type,
        "source": source,
        "execution_count": count,
    }
    if left_out:
        structured["output_count"] = cell["output_count"]
    else:
        structured["outputs"] = rendered
    if any(item.get("truncated") for item in rendered):
        structured["next_call"] = f'get_cell(cell_id="{cell.get("cell_id")}", full_output=true)'
    return [text_content(fenced), *content], structured


def render_cells_summary(summaries: Sequence[Mapping[str, Any]], total: int) -> str:
    """A header line, then one aligned line per cell summary.

    A line reads ``index  cell_id  type  [execution_count]  first line  (n outputs)``:
    code cells never run show ``[ ]``, other cells no count, and cells without outputs no
    output count.
    """
    if not summaries:
        if total == 0:
            return "The notebook has no cells."
        return f"No cells in this range; the notebook has {plural(total, 'cell')}."
    first, last = summaries[0]["index"], summaries[-1]["index"]
    if len(summaries) == total:
        header = f"{plural(total, 'cell')}:"
    else:
        header = f"Cells {first} to {last} of {total} (page with start and count):"
    counts = [_count_label(summary) for summary in summaries]
    index_width = max(len(str(first)), len(str(last)))
    id_width = max(len(summary["cell_id"]) for summary in summaries)
    count_width = max(map(len, counts))
    columns = [
        [str(summary["index"]).rjust(index_width) for summary in summaries],
        [summary["cell_id"].ljust(id_width) for summary in summaries],
        [summary["cell_type"].ljust(8) for summary in summaries],
    ]
    if count_width:
        columns.append([count.ljust(count_width) for count in counts])
    columns.append([summary["source_preview"] or "(empty)" for summary in summaries])
    lines = list(map("  ".join, zip(*columns, strict=True)))
    for i, summary in enumerate(summaries):
        outputs = summary.get("output_count")
        if outputs:
            lines[i] += f"  ({plural(outputs, 'output')})"
    return "\n".join([header, *lines])


def render_cells_json(
    cells: Sequence[Mapping[str, Any]], total: int, *, figures: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``get_all_cells`` in the json format: nbformat cells with their media described.

    In outputs' ``data`` and markdown cells' ``attachments`` a description stands in for
    each image or binary value (see Media.describe). The content is the structured value
    as JSON text, then each PNG or JPEG of at most 1 MiB as image content, once.
    ``figures`` is the folder those images are also written to.
    """
    images: list[dict[str, Any]] = []
    shown = [_cell_with_media_described(cell, images, figures) for cell in cells]
    structured = {"cells": shown, "total": total}
    return [text_content(json_text(structured)), *images], structured


def _cell_with_media_described(
    cell: Mapping[str, Any], images: list[dict[str, Any]], figures: str | None
) -> dict[str, Any]:
    shown = dict(cell)
    outputs = cell.get("outputs")
    if isinstance(outputs, list):
        shown["outputs"] = [
            _output_with_media_described(output, images, figures) for output in outputs
        ]
    attachments = cell.get("attachments")
    if isinstance(attachments, Mapping):
        shown["attachments"] = {
            name: _bundle_with_media_described(bundle, images, figures)
            for name, bundle in attachments.items()
        }
    return shown


def _output_with_media_described(
    output: Any, images: list[dict[str, Any]], figures: str | None
) -> Any:
    if not isinstance(output, Mapping) or not isinstance(output.get("data"), Mapping):
        return output
    return {**output, "data": _bundle_with_media_described(output["data"], images, figures)}


def _bundle_with_media_described(
    bundle: Any, images: list[dict[str, Any]], figures: str | None
) -> Any:
    if not isinstance(bundle, Mapping):
        return bundle
    media = media_in(bundle)
    images += [one.item() for one in media.values() if one.encoded is not None]
    return described_data(bundle, media, lambda _mime, value: value, figures)


def _count_label(summary: Mapping[str, Any]) -> str:
    count = summary.get("execution_count")
    if count is not None:
        return f"[{count}]"
    return "[ ]" if summary["cell_type"] == "code" else ""
