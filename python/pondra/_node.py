"""Nodes of the bundled binary that `connect` starts: `pondra serve` on a lake, in a child
process listening on free loopback ports, shared by every connection of this process to the
same lake, and stopped when the last of them closes or the interpreter exits."""

from __future__ import annotations

import atexit
import collections
import os
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Dict, Optional

from ._binary import binary

# How long a node may take to say it is ready: a lake in a bucket is opened over the network.
START_TIMEOUT_SECONDS = 60.0


class NodeError(RuntimeError):
    """A node could not be started."""


class LocalNode:
    """`pondra serve` on one lake, as a child process."""

    def __init__(self, lake: str, temporary: Optional[str]) -> None:
        self.lake = lake
        self._temporary = temporary
        self._users = 0
        self._process = self._start()
        # The last lines the node wrote on stderr, for an error should it fail to start; read
        # all along so that it never blocks on a full pipe.
        self._errors: collections.deque = collections.deque(maxlen=50)
        threading.Thread(target=self._drain_errors, daemon=True).start()
        self.http_address = self._wait_until_ready()

    def _start(self) -> subprocess.Popen:
        arguments = [
            binary(),
            "--dir",
            self.lake,
            "serve",
            "--host",
            "127.0.0.1",
            "--http-port",
            "0",
            "--pg-port",
            "0",
            "--flight-port",
            "0",
        ]
        return subprocess.Popen(
            arguments,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def _wait_until_ready(self) -> str:
        """The HTTP door's address, once the node prints that it is ready."""
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        address = None
        assert self._process.stdout is not None
        while time.monotonic() < deadline:
            line = self._process.stdout.readline()
            if not line:
                break
            line = line.strip()
            if line.startswith("http listening on "):
                address = line[len("http listening on ") :]
            if line == "ready" and address:
                # Keep reading the child's output so that it never blocks on a full pipe.
                threading.Thread(target=self._drain, daemon=True).start()
                return address
        self._process.kill()
        self._process.wait()
        errors = "\n".join(self._errors)
        raise NodeError(f"the pondra node on {self.lake} did not start: {errors.strip()}")

    def _drain(self) -> None:
        if self._process.stdout is not None:
            for _ in self._process.stdout:
                pass

    def _drain_errors(self) -> None:
        if self._process.stderr is not None:
            for line in self._process.stderr:
                self._errors.append(line.rstrip())

    def acquire(self) -> None:
        self._users += 1

    def release(self) -> bool:
        """One user fewer; true when none is left (and the node stopped)."""
        self._users -= 1
        if self._users > 0:
            return False
        self.stop()
        return True

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._temporary:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def running(self) -> bool:
        return self._process.poll() is None


_lock = threading.Lock()
_nodes: Dict[str, LocalNode] = {}


def _key(lake: str) -> str:
    if "://" in lake:
        return lake.rstrip("/")
    return os.path.realpath(lake)


def acquire(target: Optional[str]) -> LocalNode:
    """The node serving `target` (a folder or a bucket URL; a new temporary folder for `None`),
    started unless one of this process already serves it."""
    with _lock:
        if target is None:
            folder = tempfile.mkdtemp(prefix="pondra-")
            lake = os.path.join(folder, "lake")
            node = LocalNode(lake, temporary=folder)
            _nodes[_key(lake)] = node
        else:
            key = _key(target)
            node = _nodes.get(key)
            if node is None or not node.running():
                node = LocalNode(target, temporary=None)
                _nodes[key] = node
        node.acquire()
        return node


def release(node: LocalNode) -> None:
    with _lock:
        if node.release():
            _nodes.pop(_key(node.lake), None)


@atexit.register
def _stop_all() -> None:
    with _lock:
        for node in list(_nodes.values()):
            node.stop()
        _nodes.clear()
