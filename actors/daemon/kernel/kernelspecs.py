"""Which installed kernelspec runs a notebook, decided from facts alone.

A notebook's own kernel comes first: ``metadata.kernelspec.name``. When that is not
installed, a kernelspec of the notebook's language: ``metadata.language_info.name``,
then ``metadata.kernelspec.language``. A notebook that names neither a kernelspec nor a
language gets python3. When several installed kernelspecs run the language, python3
wins if it is one of them, else the first by name. Languages match without regard to
case ("R" is "r"). Nothing else is guessed: a notebook whose kernelspec and language are
both unknown here gets no kernel, and the refusal lists what is installed.

``installed`` maps each installed kernelspec's name to its language.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon_actors.kernels import KernelspecInfo

DEFAULT_KERNELSPEC = "python3"
PYTHON3 = KernelspecInfo(DEFAULT_KERNELSPEC, "Python 3 (ipykernel)", "python")


@frozen
class NoKernelspec:
    message: str


def choose_kernelspec(
    metadata: Mapping[str, Any], installed: Mapping[str, str]
) -> str | NoKernelspec:
    """The kernelspec for a notebook with this metadata, or why there is none."""
    kernelspec = _mapping(metadata.get("kernelspec"))
    name = _text(kernelspec.get("name"))
    languages = [
        language
        for language in (
            _text(_mapping(metadata.get("language_info")).get("name")),
            _text(kernelspec.get("language")),
        )
        if language
    ]
    if name in installed:
        return name
    for language in languages:
        found = _by_language(language, installed)
        if found is not None:
            return found
    if not name and not languages:
        if DEFAULT_KERNELSPEC in installed:
            return DEFAULT_KERNELSPEC
        wanted = f"names no kernelspec, and the default {DEFAULT_KERNELSPEC} is not installed"
    else:
        named = [f"kernelspec {name!r}"] if name else []
        named += [f"language {language!r}" for language in dict.fromkeys(languages)]
        wanted = f"asks for {' and '.join(named)}"
    return NoKernelspec(
        f"No installed kernelspec fits this notebook: it {wanted}. {_listing(installed)} "
        "The notebook can be read, edited and saved without a kernel; to run it, install a "
        "matching kernelspec and call restart_kernel()."
    )


def choose_for_runtime(runtime: str, installed: Mapping[str, str]) -> str | NoKernelspec:
    """create_notebook's runtime: an installed kernelspec's name, or a language ("python")."""
    if runtime in installed:
        return runtime
    found = _by_language(runtime, installed)
    if found is not None:
        return found
    return NoKernelspec(
        f"No kernel for runtime {runtime!r}: it is neither an installed kernelspec nor the "
        f"language of one. {_listing(installed)}"
    )


def _by_language(language: str, installed: Mapping[str, str]) -> str | None:
    wanted = language.casefold()
    matching = sorted(name for name, lang in installed.items() if lang.casefold() == wanted)
    if DEFAULT_KERNELSPEC in matching:
        return DEFAULT_KERNELSPEC
    return matching[0] if matching else None


def _listing(installed: Mapping[str, str]) -> str:
    if not installed:
        return "No kernelspecs are installed."
    specs = ", ".join(f"{name} ({installed[name] or 'no language'})" for name in sorted(installed))
    return f"Installed kernelspecs: {specs}."


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""
