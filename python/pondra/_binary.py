"""Where the `pondra` binary is: the one the wheel installed beside this interpreter's scripts,
or `PONDRA_BINARY` (a build of one's own, as the tests use), or the first on PATH."""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path


class BinaryNotFound(RuntimeError):
    """No `pondra` binary could be found."""


def binary() -> str:
    """The path of the `pondra` binary to run."""
    chosen = os.environ.get("PONDRA_BINARY")
    if chosen:
        if not os.access(chosen, os.X_OK):
            raise BinaryNotFound(f"PONDRA_BINARY={chosen} is not an executable file")
        return chosen
    for scheme in (None, "posix_user"):
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        candidate = Path(scripts) / "pondra"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("pondra")
    if on_path:
        return on_path
    raise BinaryNotFound(
        "the pondra binary is not installed beside this Python (pip install pondra), "
        "on PATH, or named by PONDRA_BINARY"
    )
