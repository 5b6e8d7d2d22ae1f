"""Notebook resource URIs, names and errors (protocol/mcp/resources.py), as tables."""

from __future__ import annotations

import pytest

from nbstage.protocol.mcp import jsonrpc
from nbstage.protocol.mcp import resources as res
from nbstage.protocol.mcp.resources import ResourceFailure, ResourceKind, ResourceRef

NB = "0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f"

PARSED = [
    (f"nbstage://notebook/{NB}", ResourceRef(ResourceKind.NOTEBOOK, NB)),
    (f"nbstage://notebook/{NB}/cell/abc-1", ResourceRef(ResourceKind.CELL, NB, "abc-1")),
    (
        f"nbstage://notebook/{NB}/cell/c#outputs/0/image/png",
        ResourceRef(ResourceKind.CELL, NB, "c"),
    ),
    (f"nbstage://notebook/{NB}#x", ResourceRef(ResourceKind.NOTEBOOK, NB)),
]

REFUSED = [
    (None, ResourceFailure.MALFORMED),
    ("", ResourceFailure.MALFORMED),
    (12, ResourceFailure.MALFORMED),
    ("not a uri", ResourceFailure.MALFORMED),
    ("notebook/abc", ResourceFailure.MALFORMED),
    ("x" * 3000, ResourceFailure.MALFORMED),
    ("nbstage://notebook/", ResourceFailure.MALFORMED),
    ("nbstage://notebook/a b", ResourceFailure.MALFORMED),
    (f"nbstage://notebook/{NB}/cell/", ResourceFailure.MALFORMED),
    (f"nbstage://notebook/{NB}/cells/a", ResourceFailure.MALFORMED),
    (f"nbstage://notebook/{NB}/cell/a/b", ResourceFailure.MALFORMED),
    ("nbstage://kernel/abc", ResourceFailure.MALFORMED),
    ("file:///etc/passwd", ResourceFailure.NOT_FOUND),
    ("ui://nbstage/output.html", ResourceFailure.NOT_FOUND),
    ("https://example.com/nb.ipynb", ResourceFailure.NOT_FOUND),
]


@pytest.mark.parametrize(("uri", "ref"), PARSED)
def test_uris_name_a_notebook_or_a_cell(uri: str, ref: ResourceRef) -> None:
    assert res.parse_uri(uri) == ref


@pytest.mark.parametrize(("uri", "failure"), REFUSED)
def test_other_uris_are_malformed_or_name_nothing(uri: object, failure: ResourceFailure) -> None:
    with pytest.raises(res.ResourceUriError) as refused:
        res.parse_uri(uri)
    assert refused.value.failure is failure


def test_a_uri_made_is_a_uri_parsed() -> None:
    assert res.parse_uri(res.cell_uri(NB, "c1")) == ResourceRef(ResourceKind.CELL, NB, "c1")
    assert res.parse_uri(res.notebook_uri(NB)).notebook_uri == res.notebook_uri(NB)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/home/u/analysis.ipynb", "analysis.ipynb"),
        ("rel/x.ipynb", "x.ipynb"),
        (None, f"Untitled {NB[:8]}"),
        ("", f"Untitled {NB[:8]}"),
    ],
)
def test_a_notebook_is_named_as_a_person_knows_it(path: str | None, name: str) -> None:
    entry = res.notebook_entry(NB, path)
    assert entry["name"] == name
    assert entry["mimeType"] == "application/x-ipynb+json"
    assert entry["uri"] == f"nbstage://notebook/{NB}"


@pytest.mark.parametrize(
    ("version", "failure", "code"),
    [
        ("2025-11-25", ResourceFailure.NOT_FOUND, -32002),
        ("2024-11-05", ResourceFailure.NOT_FOUND, -32002),
        ("2026-07-28", ResourceFailure.NOT_FOUND, jsonrpc.INVALID_PARAMS),
        ("2025-11-25", ResourceFailure.MALFORMED, jsonrpc.INVALID_PARAMS),
        ("2026-07-28", ResourceFailure.MALFORMED, jsonrpc.INVALID_PARAMS),
        ("2025-11-25", ResourceFailure.UNAVAILABLE, jsonrpc.INTERNAL_ERROR),
    ],
)
def test_each_era_gets_its_spec_error(version: str, failure: ResourceFailure, code: int) -> None:
    error = res.refused(7, version, failure, "Resource not found", "nbstage://notebook/x")
    assert (error.id, error.code, error.data) == (7, code, {"uri": "nbstage://notebook/x"})


def test_both_eras_declare_subscriptions() -> None:
    """Legacy clients subscribe with resources/subscribe, 2026-07-28 ones on
    subscriptions/listen streams."""
    assert res.capabilities() == {"subscribe": True, "listChanged": True}
