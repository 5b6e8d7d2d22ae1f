"""What the Lab edge prepares when the page of a notebook is asked for (tree_page.py): the
url read as a table, and the notebook put in the workspace as its current tab."""

from __future__ import annotations

import json

import pytest

from nbstage.entrypoints.lab.export_formats import formats
from nbstage.entrypoints.lab.page_config import install
from nbstage.entrypoints.lab.tree_page import LAYOUT, asked_notebook, with_notebook


@pytest.mark.parametrize(
    ("workspace", "tree", "asked"),
    [
        (None, "/tree/a.ipynb", ("default", "a.ipynb")),
        ("/workspaces/w0", "/tree/dir/b c.ipynb", ("w0", "dir/b c.ipynb")),
        (None, None, None),
        ("/workspaces/w0", None, None),
        (None, "/tree/notes.md", None),
        (None, "/tree/dir/", None),
        (None, "/tree/", None),
        (None, "/tree/../outside.ipynb", None),
        ("/workspaces/w0", "/tree/dir/../../outside.ipynb", None),
    ],
)
def test_the_notebook_a_page_opens(workspace, tree, asked) -> None:
    assert asked_notebook({"mode": "lab", "workspace": workspace, "tree": tree}) == asked


def _main(data: dict) -> dict:
    return dict(data[LAYOUT]["main"])


def test_an_empty_workspace_gets_the_notebook_as_its_one_tab() -> None:
    data = with_notebook({}, "a.ipynb")
    assert data["notebook:a.ipynb"] == {"data": {"path": "a.ipynb", "factory": "Notebook"}}
    main = _main(data)
    assert main["dock"] == {"type": "tab-area", "currentIndex": 0, "widgets": ["notebook:a.ipynb"]}
    assert main["current"] == "notebook:a.ipynb"


def test_the_notebook_goes_after_the_current_tab_and_becomes_current() -> None:
    dock = {"type": "tab-area", "currentIndex": 0, "widgets": ["notebook:x.ipynb", "editor:y"]}
    before = {LAYOUT: {"main": {"dock": dock, "current": "notebook:x.ipynb"}}, "other": 1}
    data = with_notebook(before, "a.ipynb")
    main = _main(data)
    assert main["dock"]["widgets"] == ["notebook:x.ipynb", "notebook:a.ipynb", "editor:y"]
    assert main["dock"]["currentIndex"] == 1
    assert main["current"] == "notebook:a.ipynb"
    assert data["other"] == 1
    assert before[LAYOUT]["main"]["dock"]["widgets"] == ["notebook:x.ipynb", "editor:y"]


def test_a_notebook_already_open_is_not_added_twice() -> None:
    dock = {"type": "tab-area", "currentIndex": 1, "widgets": ["notebook:a.ipynb", "editor:y"]}
    data = with_notebook({LAYOUT: {"main": {"dock": dock, "current": "editor:y"}}}, "a.ipynb")
    assert _main(data)["dock"]["widgets"] == ["notebook:a.ipynb", "editor:y"]
    assert _main(data)["dock"]["currentIndex"] == 0


def test_in_a_split_layout_the_notebook_joins_the_area_of_the_current_tab() -> None:
    left = {"type": "tab-area", "currentIndex": 0, "widgets": ["notebook:x.ipynb"]}
    right = {"type": "tab-area", "currentIndex": 0, "widgets": ["editor:y"]}
    split = {"type": "split-area", "orientation": "horizontal", "children": [left, right]}
    data = with_notebook({LAYOUT: {"main": {"dock": split, "current": "editor:y"}}}, "a.ipynb")
    children = _main(data)["dock"]["children"]
    assert children[0]["widgets"] == ["notebook:x.ipynb"]
    assert children[1]["widgets"] == ["editor:y", "notebook:a.ipynb"]
    assert children[1]["currentIndex"] == 1


def test_the_page_hook_hears_every_page_after_the_earlier_hook() -> None:
    heard: list = []
    settings: dict = {"page_config_hook": lambda handler, config: {**config, "earlier": 1}}
    install(settings, heard.append)
    config = settings["page_config_hook"]("the handler", {})
    assert heard == ["the handler"]
    assert config["earlier"] == 1


def test_the_export_formats_are_nbconverts_and_found_once() -> None:
    found = json.loads(formats())
    assert found["html"] == {"output_mimetype": "text/html"}
    assert found["notebook"] == {"output_mimetype": "application/json"}
    assert formats() is formats()


@pytest.mark.parametrize(
    ("path", "full"),
    [
        ("a.ipynb", "/root/lab/a.ipynb"),
        ("dir/../b.ipynb", "/root/lab/b.ipynb"),
        ("/c.ipynb", "/root/lab/c.ipynb"),
        ("../outside.ipynb", None),
        ("dir/../../outside.ipynb", None),
    ],
)
def test_a_path_the_edge_opens_stays_under_labs_root(path: str, full: str | None) -> None:
    from tornado.web import HTTPError

    from nbstage.entrypoints.lab.handlers import full_path

    settings = {"server_root_dir": "/root/lab"}
    if full is None:
        with pytest.raises(HTTPError) as refused:
            full_path(settings, path)
        assert refused.value.status_code == 404
    else:
        assert full_path(settings, path) == full


@pytest.mark.parametrize("layout", [None, [], "x", {"main": None}, {"main": []}])
def test_a_workspace_of_any_shape_gets_the_notebook_as_its_current_tab(layout) -> None:
    data = with_notebook({LAYOUT: layout}, "a.ipynb")
    main = data[LAYOUT]["main"]
    assert main["current"] == "notebook:a.ipynb"
    assert main["dock"]["widgets"] == ["notebook:a.ipynb"]
