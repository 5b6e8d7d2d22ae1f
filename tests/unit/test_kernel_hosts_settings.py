"""``[[kernel_hosts]]`` in config.toml: decoded once into frozen KernelHosts, and a
malformed table refused at start with a message that names it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nbstage.protocol.common.kernel_hosts import DEFAULT_SILENCE_SECS, KernelHost, KernelHostError
from nbstage.protocol.common.settings import load_settings


def settings_of(tmp_path: Path, toml: str):
    (tmp_path / "config.toml").write_text(toml)
    return load_settings(tmp_path, environ={})


def test_no_table_means_no_hosts(tmp_path: Path) -> None:
    assert settings_of(tmp_path, "max_rooms = 3\n").kernel_hosts == ()
    assert load_settings(tmp_path / "none", environ={}).kernel_hosts == ()


def test_tables_decode_in_order_with_their_defaults(tmp_path: Path) -> None:
    (tmp_path / "b.token").write_text("tok-b\n")
    (tmp_path / "ca.pem").write_text("not read here\n")
    settings = settings_of(
        tmp_path,
        """
max_rooms = 3

[[kernel_hosts]]
name = "a"
url = "http://127.0.0.1:8888/"
token = "tok-a"

[[kernel_hosts]]
name = "b.big-1"
url = "https://big.example:9443"
token_file = "b.token"
ca_file = "ca.pem"
max_kernels = 16
silence_secs = 12.5
""",
    )
    assert settings.max_rooms == 3
    assert settings.kernel_hosts == (
        KernelHost("a", "http://127.0.0.1:8888", "tok-a"),
        KernelHost(
            "b.big-1", "https://big.example:9443", "tok-b", str(tmp_path / "ca.pem"), 16, 12.5
        ),
    )
    assert settings.kernel_hosts[0].silence_secs == DEFAULT_SILENCE_SECS


def test_a_host_is_frozen_and_its_repr_hides_the_token() -> None:
    host = KernelHost("a", "http://h:1", "s3cret")
    with pytest.raises(dataclasses.FrozenInstanceError):
        host.token = "x"  # type: ignore[misc]
    assert "s3cret" not in repr(host)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        pytest.param('kernel_hosts = "a"', "must be a list of tables", id="not a list"),
        pytest.param("kernel_hosts = [1]", "table 1 must be a table", id="not a table"),
        pytest.param(
            '[[kernel_hosts]]\nurl = "http://h:1"\ntoken = "t"',
            "table 1: name must be",
            id="no name",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a b"\nurl = "http://h:1"\ntoken = "t"',
            "table 1: name must be",
            id="a name with a space",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\ntoken = "t"',
            "kernel host 'a' ([[kernel_hosts]] table 1): url must be a string",
            id="no url",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "ftp://h:1"\ntoken = "t"',
            "kernel host 'a' ([[kernel_hosts]] table 1): url must be http:// or https://",
            id="not http",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1/?token=t"\ntoken = "t"',
            "url must carry no query",
            id="a token in the url",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"',
            "kernel host 'a' ([[kernel_hosts]] table 1): a token (or token_file) is required",
            id="no token",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\ntoken_file = "f"',
            "give token or token_file, not both",
            id="both tokens",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken_file = "missing"',
            "kernel host 'a' ([[kernel_hosts]] table 1): cannot read token_file",
            id="a token file that is not there",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t t"',
            "spaces or control characters",
            id="a token with a space",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\nca_file = "no.pem"',
            "ca_file",
            id="a ca file that is not there",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\nmax_kernels = 0',
            "max_kernels must be a whole number of at least 1",
            id="no room at all",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\nmax_kernels = true',
            "max_kernels must be a whole number",
            id="a limit that is a bool",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\nsilence_secs = 0.5',
            "silence_secs must be a number from 1 to 300",
            id="a silence too short to survive a busy host",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\nsilence_secs = "4"',
            "silence_secs must be a number",
            id="a silence that is a string",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\nport = 2',
            "kernel host 'a' ([[kernel_hosts]] table 1): unknown keys port",
            id="an unknown key",
        ),
        pytest.param(
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "t"\n'
            '[[kernel_hosts]]\nname = "a"\nurl = "http://h:2"\ntoken = "u"',
            "kernel host 'a': another table has that name",
            id="two of one name",
        ),
    ],
)
def test_a_malformed_table_is_refused_naming_it(tmp_path: Path, table: str, said: str) -> None:
    with pytest.raises(KernelHostError) as refused:
        settings_of(tmp_path, table + "\n")
    assert said in str(refused.value)


def test_the_refusal_never_shows_the_token(tmp_path: Path) -> None:
    with pytest.raises(KernelHostError) as refused:
        settings_of(
            tmp_path, '[[kernel_hosts]]\nname = "a"\nurl = "http://h:1"\ntoken = "s3cret"\nx=1\n'
        )
    assert "s3cret" not in str(refused.value)
