"""The Python package's tests run against a `pondra` binary named by `PONDRA_BINARY` (the
debug build, in CI), with the package from this source tree."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pondra  # noqa: E402


def binary() -> str:
    path = os.environ.get("PONDRA_BINARY")
    if not path:
        pytest.exit("PONDRA_BINARY names the pondra binary the tests run", returncode=2)
    return path


@pytest.fixture
def con(tmp_path):
    """A connection to a node on a new lake."""
    binary()
    connection = pondra.connect(str(tmp_path / "lake"))
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def tpch_lake(tmp_path_factory) -> str:
    """A lake holding TPC-H at scale 0.01."""
    lake = tmp_path_factory.mktemp("tpch") / "lake"
    subprocess.run(
        [binary(), "--dir", str(lake), "tpch", "gen", "--sf", "0.01"],
        check=True,
        capture_output=True,
    )
    return str(lake)


@pytest.fixture(scope="session")
def tpch(tpch_lake):
    connection = pondra.connect(tpch_lake)
    yield connection
    connection.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`pondra serve` started by a test, with its HTTP address."""

    def __init__(self, lake: str, *arguments: str) -> None:
        self.process = subprocess.Popen(
            [binary(), "--dir", lake, "serve", "--http-port", "0", "--pg-port", "0", "--flight-port", "0", *arguments],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        address = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.process.stdout.readline().strip()
            if line.startswith("http listening on "):
                address = line.split()[-1]
            if line == "ready":
                break
        assert address, "the server did not start"
        self.url = f"http://{address}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def served(tmp_path):
    started = []

    def start(*arguments: str) -> Served:
        server = Served(str(tmp_path / f"served{len(started)}"), *arguments)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
