"""``nbstage --version``, as a person types it."""

from __future__ import annotations

import subprocess

import pytest

from nbstage.protocol.common.version import VERSION
from tests.support import NBSTAGE

pytestmark = pytest.mark.e2e


def test_version_prints_the_name_and_version_and_exits_0() -> None:
    done = subprocess.run([*NBSTAGE, "--version"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, f"nbstage {VERSION}\n")
