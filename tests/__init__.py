"""The tests import nbformat, as the daemon does, without the grammar jsonschema would
build at import (see nbstage.entrypoints.common.lean)."""

from nbstage.entrypoints.common.lean import jsonschema_without_iri_grammar

jsonschema_without_iri_grammar()
