"""Every package folder installs: setup.cfg names each one, mapped to its own folder.

setup.cfg lists packages one by one; a folder missing there would import from a checkout
(the editable install follows the parent's path) and vanish from a built wheel.
"""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("actors", "entrypoints", "protocol")


def _folders_with_init() -> set[str]:
    return {
        init.parent.relative_to(ROOT).as_posix()
        for top in TOPS
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def _setup_options() -> configparser.SectionProxy:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config["options"]


def test_every_package_folder_is_listed_in_setup_cfg() -> None:
    listed = set(_setup_options()["packages"].split())
    assert listed == {"nbstage." + folder.replace("/", ".") for folder in _folders_with_init()}


def test_every_listed_package_maps_to_its_own_folder() -> None:
    lines = [line for line in _setup_options()["package_dir"].splitlines() if line.strip()]
    mapping = dict(tuple(part.strip() for part in line.split("=")) for line in lines)
    assert mapping == {
        "nbstage." + folder.replace("/", "."): folder for folder in _folders_with_init()
    }
