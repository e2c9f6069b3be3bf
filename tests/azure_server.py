"""Azurite, Microsoft's Azure Blob emulator, on localhost for the tests of an index in ``az://``.

``make venv`` installs it from npm into ``.venv/azurite`` (or it is on PATH). ``running_azurite`` starts
it as a process on a free port with a folder of its own, and gives the connection string of its
development account (its published, well-known key): the standard variable a user sets,
``AZURE_STORAGE_CONNECTION_STRING``, as adlfs and the Azure SDK read it. Importing this module skips
the test where adlfs is missing; ``azurite_program`` is None where Azurite is.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("adlfs", reason="adlfs is not installed (pip install 'spanindex[az]')")

from conftest import ROOT  # noqa: E402

ACCOUNT = "devstoreaccount1"
# Azurite's development account key, published in its documentation (not a secret).
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_program() -> str | None:
    installed = ROOT / ".venv" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    return shutil.which("azurite-blob") or (str(installed) if installed.exists() else None)


def connection_string(endpoint: str, key: str = ACCOUNT_KEY) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};"
            f"BlobEndpoint={endpoint}/{ACCOUNT};")


@contextlib.contextmanager
def running_azurite(folder: Path) -> Iterator[str]:
    """Azurite's blob service answering on a free port; its endpoint (``http://127.0.0.1:PORT``)."""
    program = azurite_program()
    if program is None:
        pytest.skip("Azurite is not installed (make venv installs it with npm: npm install --prefix .venv/azurite azurite)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder.mkdir(parents=True, exist_ok=True)
    log = open(folder / "azurite.log", "wb")
    process = subprocess.Popen([program, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(folder),
                                "--silent", "--skipApiVersionCheck", "--loose"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Azurite did not start: {(folder / 'azurite.log').read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
