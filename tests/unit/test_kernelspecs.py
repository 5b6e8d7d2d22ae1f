"""Which installed kernelspec a notebook gets (kernelspecs.py), as tables."""

from __future__ import annotations

import pytest

from nbstage.actors.daemon.kernel.kernelspecs import (
    NoKernelspec,
    choose_for_runtime,
    choose_kernelspec,
)

INSTALLED = {"python3": "python", "other-py": "python", "ir": "R", "julia-1.10": "julia"}
NO_PYTHON3 = {"other-py": "python", "zeta-py": "python", "ir": "R"}


def spec(name: str | None = None, language: str | None = None) -> dict:
    kernelspec = {"display_name": "whatever"}
    if name is not None:
        kernelspec["name"] = name
    if language is not None:
        kernelspec["language"] = language
    return {"kernelspec": kernelspec}


def info(name: str) -> dict:
    return {"language_info": {"name": name}}


@pytest.mark.parametrize(
    ("metadata", "installed", "chosen"),
    [
        pytest.param(spec("other-py"), INSTALLED, "other-py", id="the named kernelspec"),
        pytest.param(
            {**spec("ir", "python"), **info("python")},
            INSTALLED,
            "ir",
            id="the name wins over the language",
        ),
        pytest.param(
            {**spec("ir-4.3", "R"), **info("R")}, INSTALLED, "ir", id="missing name: its language"
        ),
        pytest.param(info("julia"), INSTALLED, "julia-1.10", id="language_info alone"),
        pytest.param(spec(language="R"), INSTALLED, "ir", id="kernelspec.language alone"),
        pytest.param(
            {**spec("gone", "R"), **info("julia")},
            INSTALLED,
            "julia-1.10",
            id="language_info before kernelspec.language",
        ),
        pytest.param(
            {**spec("gone", "julia"), **info("cobol")},
            INSTALLED,
            "julia-1.10",
            id="an unknown language_info falls through to kernelspec.language",
        ),
        pytest.param(info("Python"), INSTALLED, "python3", id="python3 wins among pythons"),
        pytest.param(info("r"), INSTALLED, "ir", id="languages match without case"),
        pytest.param(
            info("python"), NO_PYTHON3, "other-py", id="else the first by name among pythons"
        ),
        pytest.param({}, INSTALLED, "python3", id="metadata naming nothing gets python3"),
        pytest.param(
            {"kernelspec": "python3", "language_info": ["python"]},
            INSTALLED,
            "python3",
            id="malformed metadata names nothing",
        ),
        pytest.param(spec(" "), INSTALLED, "python3", id="a blank name names nothing"),
    ],
)
def test_a_notebook_gets_the_kernelspec_its_metadata_asks_for(metadata, installed, chosen):
    assert choose_kernelspec(metadata, installed) == chosen


@pytest.mark.parametrize(
    ("metadata", "installed", "says"),
    [
        pytest.param(
            {**spec("gone", "cobol"), **info("cobol")},
            INSTALLED,
            [
                "kernelspec 'gone' and language 'cobol'",
                "Installed kernelspecs: ir (R), julia-1.10 (julia), other-py (python), "
                "python3 (python).",
                "restart_kernel",
            ],
            id="unknown name and language: the installed kernelspecs are listed",
        ),
        pytest.param(
            spec("gone"), INSTALLED, ["kernelspec 'gone'."], id="an unknown name and no language"
        ),
        pytest.param(
            info("cobol"), INSTALLED, ["language 'cobol'."], id="an unknown language and no name"
        ),
        pytest.param(
            {}, NO_PYTHON3, ["names no kernelspec", "python3 is not installed"], id="no default"
        ),
        pytest.param(
            spec("python3"), {}, ["No kernelspecs are installed."], id="nothing installed"
        ),
    ],
)
def test_a_notebook_nothing_fits_is_refused_with_what_is_installed(metadata, installed, says):
    refused = choose_kernelspec(metadata, installed)
    assert isinstance(refused, NoKernelspec)
    for words in says:
        assert words in refused.message


@pytest.mark.parametrize(
    ("runtime", "installed", "chosen"),
    [
        pytest.param("python", INSTALLED, "python3", id="python is the python3 kernelspec"),
        pytest.param("other-py", INSTALLED, "other-py", id="a kernelspec by name"),
        pytest.param("R", INSTALLED, "ir", id="a language"),
        pytest.param("python", NO_PYTHON3, "other-py", id="python without python3"),
    ],
)
def test_create_resolves_its_runtime_to_an_installed_kernelspec(runtime, installed, chosen):
    assert choose_for_runtime(runtime, installed) == chosen


def test_an_unknown_runtime_is_refused_with_what_is_installed():
    refused = choose_for_runtime("nope", {"python3": "python"})
    assert isinstance(refused, NoKernelspec)
    assert "'nope'" in refused.message
    assert "Installed kernelspecs: python3 (python)." in refused.message
