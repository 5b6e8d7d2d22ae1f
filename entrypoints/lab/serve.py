"""The first module of the Lab process: JupyterLab itself, started after jsonschema is
imported without the IRI grammar that would cost Lab's start a second or more of CPU
(entrypoints/common/lean.py says why)."""

from __future__ import annotations

import sys

from nbstage.entrypoints.common.lean import jsonschema_without_iri_grammar


def main() -> None:
    jsonschema_without_iri_grammar()
    from jupyterlab.labapp import main as lab_main

    sys.exit(lab_main())


if __name__ == "__main__":
    main()
