"""Every package folder installs: setup.cfg names each one, mapped to its own folder.

setup.cfg lists packages one by one; a folder missing there would import from a checkout
(the editable install follows the parent's path) and vanish from a built wheel.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
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


def _package_data() -> dict[str, set[str]]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    section = config["options.package_data"] if config.has_section("options.package_data") else {}
    return {package: set(files.split()) for package, files in section.items()}


def test_every_file_beside_the_modules_is_package_data() -> None:
    """A page or other file a module reads from its own folder must be in the wheel."""
    data = _package_data()
    for folder in _folders_with_init():
        package = "nbstage." + folder.replace("/", ".")
        beside = {
            path.name
            for path in (ROOT / folder).iterdir()
            if path.is_file() and path.suffix not in (".py", ".pyc")
        }
        assert beside == data.get(package, set()), package


def test_the_built_wheel_holds_the_mcp_app_page(tmp_path: Path) -> None:
    """Built from a copy, so the checkout gains no build/ folder."""
    source = tmp_path / "src"
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for top in TOPS:
        shutil.copytree(ROOT / top, source / top, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("nbstage-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "nbstage/protocol/mcp/output_app.html" in names
    assert "nbstage/protocol/mcp/mcp_apps.py" in names
