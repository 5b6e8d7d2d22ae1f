"""Real Jupyter Kernel Gateways for the kernel host tests (tests/e2e/test_gateway_kernels.py):
`python -m kernel_gateway` from the test extra, on 127.0.0.1 with a token of its own, on
http, or on https with a certificate from a test CA that ``trustme`` makes."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import psutil

from tests.support import wait_until

START_SECS = 90.0
"""How long a gateway may take to answer after it is started (its imports are slow on a
busy machine)."""
KERNEL_INFO_SECS = 10


@dataclass
class Gateway:
    url: str
    token: str
    process: subprocess.Popen[bytes]
    ca_file: Path | None = None
    """The test CA's certificate, for an https gateway."""
    log: Path | None = None
    """What the gateway printed (gone with its folder once it stops)."""

    def kernels(self) -> list[dict[str, Any]]:
        """The gateway's own list of its kernels (the token in a header, as nbstage sends it)."""
        request = urllib.request.Request(
            self.url + "/api/kernels", headers={"Authorization": f"token {self.token}"}
        )
        context = ssl.create_default_context(cafile=self.ca_file) if self.ca_file else None
        with urllib.request.urlopen(request, timeout=5, context=context) as answer:
            return json.loads(answer.read())


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def _answers(gateway: Gateway) -> bool:
    """Whether the gateway answers HTTP at all (an error status is an answer)."""
    try:
        gateway.kernels()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def _tls_files(folder: Path, address: str) -> tuple[list[str], Path]:
    """The gateway's certificate arguments, and the CA file a client needs to trust it."""
    import trustme

    ca = trustme.CA()
    issued = ca.issue_cert(address)
    certfile, keyfile, ca_file = folder / "cert.pem", folder / "key.pem", folder / "ca.pem"
    issued.cert_chain_pems[0].write_to_path(str(certfile))
    issued.private_key_pem.write_to_path(str(keyfile))
    ca.cert_pem.write_to_path(str(ca_file))
    args = [f"--KernelGatewayApp.certfile={certfile}", f"--KernelGatewayApp.keyfile={keyfile}"]
    return args, ca_file


@contextmanager
def gateway_running(tls: bool = False, address: str = "127.0.0.1") -> Iterator[Gateway]:
    """A real `jupyter kernelgateway` whose kernels are the test venv's python3, listening
    on ``address`` (any of 127.0.0.0/8 is loopback on Linux, with nothing to set up);
    afterwards it and every kernel it started are gone, and so is its folder."""
    with gateways_running([(address, tls)]) as (running,):
        yield running


@contextmanager
def gateways_running(wanted: list[tuple[str, bool]]) -> Iterator[list[Gateway]]:
    """One gateway for each (address, tls) in ``wanted``, all launched before any is waited
    for, so their slow imports overlap; afterwards they and their kernels are gone."""
    with ExitStack() as stack:
        folders = [stack.enter_context(tempfile.TemporaryDirectory(prefix="nbkg-")) for _ in wanted]
        launched: list[Gateway] = []
        try:
            for (address, tls), tmp in zip(wanted, folders, strict=True):
                launched.append(_launch(Path(tmp), address, tls))
            for gateway in launched:
                wait_until(
                    lambda g=gateway: g.process.poll() is not None or _answers(g),
                    START_SECS,
                    "a gateway",
                )
                assert gateway.process.poll() is None, gateway.log and gateway.log.read_text()
            yield launched
        finally:
            for gateway in launched:
                stop_gateway(gateway.process)


def _launch(tmp: Path, address: str, tls: bool) -> Gateway:
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": f"{tmp}/runtime",
        "JUPYTER_DATA_DIR": f"{tmp}/data",
        "IPYTHONDIR": f"{tmp}/ipython",
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    token = secrets.token_hex(16)
    port = _free_port(address)
    tls_args, ca_file = _tls_files(tmp, address) if tls else ([], None)
    argv = [
        sys.executable,
        "-m",
        "kernel_gateway",
        f"--KernelGatewayApp.ip={address}",
        # Its kernels' ZeroMQ sockets in its own folder: gateways on one machine each pick
        # free TCP ports for themselves, and two could take the same one.
        "--KernelManager.transport=ipc",
        f"--KernelGatewayApp.port={port}",
        "--KernelGatewayApp.port_retries=0",
        "--JupyterWebsocketPersonality.list_kernels=True",
        f"--KernelGatewayApp.auth_token={token}",
        # A channels websocket opens once the kernel answers one kernel_info request;
        # under load that request is sometimes never answered, and the gateway then
        # waits this long (60 s by default, as long as nbstage's bound) before it
        # opens the websocket all the same.
        f"--MappingKernelManager.kernel_info_timeout={KERNEL_INFO_SECS}",
        *tls_args,
    ]
    with open(f"{tmp}/gateway.log", "wb") as log:
        process = subprocess.Popen(argv, cwd=tmp, env=env, stdout=log, stderr=log)
    scheme = "https" if tls else "http"
    return Gateway(f"{scheme}://{address}:{port}", token, process, ca_file, tmp / "gateway.log")


def stop_gateway(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the gateway shuts its kernels down), then make sure they all ended."""
    if process.poll() is not None:
        return
    started = psutil.Process(process.pid).children(recursive=True)
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for child in started:
        if child.is_running():
            try:
                child.wait(10)
            except psutil.TimeoutExpired:
                child.kill()


def kill_host(process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """SIGKILL the gateway and every kernel it started, without waiting, as a machine that
    is lost takes them all at once; the processes, for the caller to wait for later."""
    tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    for member in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.kill()
    return tree


def notebook_wishing(path: Path, host: str) -> Path:
    """Write at ``path`` an empty notebook whose metadata asks for kernel host ``host``."""
    metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "nbstage": {"kernel_host": host},
    }
    nbformat.write(nbformat.v4.new_notebook(metadata=metadata), str(path))
    return path
