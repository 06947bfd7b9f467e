"""SQL text for the DataFrame APIs: quoting, literals, and a query built a clause at a time.

A frame is one SELECT statement the engine runs. Each method adds a clause to the current
SELECT while SQL's order of clauses allows it (a filter before grouping, a projection before
the sort that may name the columns it read, a limit last), and otherwise makes the current
SELECT a derived table of a new one. Nothing is computed in Python."""

from __future__ import annotations

import datetime
import decimal
import itertools
from dataclasses import dataclass, field, replace
from typing import Any, List, Optional

_aliases = itertools.count(1)


def identifier(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def literal(value: Any) -> str:
    """A Python value as a SQL literal of its type."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return f"CAST('{value}' AS DOUBLE)"
        return f"CAST({value!r} AS DOUBLE)"
    if isinstance(value, decimal.Decimal):
        return f"CAST('{value}' AS DECIMAL(38, {max(0, -value.as_tuple().exponent)}))"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, datetime.time):
        return f"TIME '{value.isoformat()}'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise TypeError(f"a literal of type {type(value).__name__} is not supported")


# Type names the APIs take (Polars' and PySpark's, and SQL's), as SQL types.
_TYPES = {
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int": "INTEGER",
    "integer": "INTEGER",
    "int64": "BIGINT",
    "long": "BIGINT",
    "bigint": "BIGINT",
    "uint8": "UTINYINT",
    "uint16": "USMALLINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "float32": "REAL",
    "float": "DOUBLE",
    "float64": "DOUBLE",
    "double": "DOUBLE",
    "utf8": "VARCHAR",
    "str": "VARCHAR",
    "string": "VARCHAR",
    "varchar": "VARCHAR",
    "boolean": "BOOLEAN",
    "bool": "BOOLEAN",
    "date": "DATE",
    "datetime": "TIMESTAMP",
    "timestamp": "TIMESTAMP",
    "decimal": "DECIMAL(38, 10)",
}


def sql_type(dtype: Any) -> str:
    """A type given as a name (`"int64"`, `"string"`), a Polars dtype or a PySpark type, as
    SQL's."""
    name = dtype if isinstance(dtype, str) else getattr(dtype, "__name__", None) or str(dtype)
    key = name.lower().replace("type", "").replace("()", "").strip()
    if key in _TYPES:
        return _TYPES[key]
    upper = name.upper()
    if upper.startswith(("DECIMAL", "VARCHAR", "NUMERIC")) or upper in _TYPES.values():
        return upper
    raise TypeError(f"the type {name} is not supported in a cast")


@dataclass(frozen=True)
class Select:
    """One SELECT: its FROM item and clauses; `items` None for `*`."""

    source: str
    items: Optional[List[str]] = None
    where: List[str] = field(default_factory=list)
    group_by: Optional[List[str]] = None
    order_by: List[str] = field(default_factory=list)
    limit: Optional[int] = None
    offset: Optional[int] = None
    distinct: Optional[List[str]] = None

    def sql(self) -> str:
        parts = ["SELECT"]
        if self.distinct is not None:
            parts.append("DISTINCT" if not self.distinct else f"DISTINCT ON ({', '.join(self.distinct)})")
        parts.append(", ".join(self.items) if self.items is not None else "*")
        parts.append(f"FROM {self.source}")
        if self.where:
            parts.append("WHERE " + " AND ".join(f"({w})" for w in self.where))
        if self.group_by is not None:
            parts.append("GROUP BY " + (", ".join(self.group_by) if self.group_by else "()"))
        if self.order_by:
            parts.append("ORDER BY " + ", ".join(self.order_by))
        if self.limit is not None:
            parts.append(f"LIMIT {self.limit}")
        if self.offset is not None:
            parts.append(f"OFFSET {self.offset}")
        return " ".join(parts)

    # What may still be added to this SELECT without changing the meaning of what it has.

    def takes_filter(self) -> bool:
        return self.items is None and self.group_by is None and self.limit is None and self.distinct is None

    def takes_projection(self) -> bool:
        return self.items is None and self.group_by is None and self.distinct is None

    def takes_grouping(self) -> bool:
        return self.takes_projection() and not self.order_by and self.limit is None

    def takes_order(self) -> bool:
        return self.limit is None and self.offset is None

    def takes_limit(self) -> bool:
        return self.limit is None and self.offset is None

    def nested(self, keep_order: bool = True) -> "Select":
        """A new SELECT over this one as a derived table; the order, when its keys are output
        columns, carried up so that later clauses keep it."""
        alias = f"_p{next(_aliases)}"
        carried = self.order_by if keep_order and self._order_by_output() else []
        return Select(source=f"({self.sql()}) AS {alias}", order_by=list(carried))

    def _order_by_output(self) -> bool:
        # Keys are quoted output names when the sort came after the projection.
        return bool(self.order_by) and all(k.startswith('"') for k in self.order_by)

    def with_(self, **changes: Any) -> "Select":
        return replace(self, **changes)
