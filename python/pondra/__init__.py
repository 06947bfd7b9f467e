"""Pondra from Python: `pondra.connect()` opens a lake (a node of the bundled binary, or a
running `pondra serve`), `con.sql(...)` runs SQL with results as rows, pandas, Polars or
Arrow, `con.append(...)` writes rows exactly once, and `con.table(name)` is a lazy `Frame`
with Polars' method names (`pondra.spark` gives PySpark's)."""

from .client import Connection, Error, Result, connect
from .frame import Expr, Frame, col, lit, when
from .frame import count_rows as len  # noqa: A001 - Polars' name

__all__ = [
    "connect",
    "Connection",
    "Result",
    "Error",
    "Frame",
    "Expr",
    "col",
    "lit",
    "when",
    "len",
]

try:
    from importlib.metadata import version as _version

    __version__ = _version("pondra")
except Exception:  # pragma: no cover - run from a source tree
    __version__ = "0.0.0"
