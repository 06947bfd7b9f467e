"""`pondra.spark.functions`, imported as `F` as PySpark's is: columns, constants, aggregates
and the everyday scalar functions, each compiled to SQL."""

from __future__ import annotations

from typing import Any, Optional

from .._sql import identifier, literal
from ..frame import Expr, _expr


class Column(Expr):
    """A PySpark column: an expression, with PySpark's method names beside Polars'."""

    def __init__(self, sql: str, name: str, aggregate: bool = False, descending: Optional[bool] = None) -> None:
        super().__init__(sql, name, aggregate)
        self._descending = descending

    def _wrap(self, expr: Expr) -> "Column":
        return Column(expr._sql, expr._name, expr._aggregate)

    def alias(self, name: str) -> "Column":
        return Column(self._sql, name, self._aggregate, self._descending)

    name = alias

    def isin(self, *values: Any) -> "Column":
        if len(values) == 1 and isinstance(values[0], (list, tuple, set)):
            values = tuple(values[0])
        return self._wrap(self.is_in(values))

    def between(self, lower: Any, upper: Any) -> "Column":
        return self._wrap(self.is_between(lower, upper))

    def isNull(self) -> "Column":
        return self._wrap(self.is_null())

    def isNotNull(self) -> "Column":
        return self._wrap(self.is_not_null())

    def cast(self, dtype: Any) -> "Column":
        return self._wrap(Expr.cast(self, dtype))

    astype = cast

    def like(self, pattern: str) -> "Column":
        return Column(f"({self._sql} LIKE {literal(pattern)})", self._name, self._aggregate)

    def startswith(self, prefix: str) -> "Column":
        return self._wrap(self.str.starts_with(prefix))

    def endswith(self, suffix: str) -> "Column":
        return self._wrap(self.str.ends_with(suffix))

    def contains(self, text: str) -> "Column":
        return self._wrap(self.str.contains(text, literal=True))

    def substr(self, start: int, length: int) -> "Column":
        return Column(f"substring({self._sql}, {int(start)}, {int(length)})", self._name, self._aggregate)

    def desc(self) -> "Column":
        return Column(self._sql, self._name, self._aggregate, descending=True)

    def asc(self) -> "Column":
        return Column(self._sql, self._name, self._aggregate, descending=False)

    # Operators give Columns.
    def _binary(self, op: str, other: Any, reverse: bool = False) -> "Column":
        return self._wrap(Expr._binary(self, op, other, reverse))

    def __truediv__(self, other: Any) -> "Column":
        return self._wrap(Expr.__truediv__(self, other))

    def __invert__(self) -> "Column":
        return self._wrap(Expr.__invert__(self))

    def __neg__(self) -> "Column":
        return self._wrap(Expr.__neg__(self))


def _column(value: Any) -> Column:
    """A column name, an expression or a Column, as a Column (a string names a column)."""
    if isinstance(value, Column):
        return value
    if isinstance(value, Expr):
        return Column(value._sql, value._name, value._aggregate)
    if isinstance(value, str):
        return col(value)
    raise TypeError(f"expected a column name or a Column, not {type(value).__name__}")


def col(name: str) -> Column:
    return Column(identifier(name), name)


column = col


def lit(value: Any) -> Column:
    return Column(literal(value), str(value))


def expr(text: str) -> Column:
    """A SQL expression, as written."""
    return Column(f"({text})", text)


def _aggregate(function: str, value: Any, sql_function: Optional[str] = None) -> Column:
    if isinstance(value, str) and value == "*":
        return Column("count(*)", "count(1)", aggregate=True)
    c = _column(value)
    call = sql_function or function
    return Column(f"{call}({c._sql})", f"{function}({c._name})", aggregate=True)


def sum(value: Any) -> Column:  # noqa: A001 - PySpark's name
    return _aggregate("sum", value)


def avg(value: Any) -> Column:
    return _aggregate("avg", value)


mean = avg


def min(value: Any) -> Column:  # noqa: A001
    return _aggregate("min", value)


def max(value: Any) -> Column:  # noqa: A001
    return _aggregate("max", value)


def count(value: Any) -> Column:
    return _aggregate("count", value)


def countDistinct(value: Any, *more: Any) -> Column:
    if more:
        raise NotImplementedError("countDistinct of several columns is not built")
    c = _column(value)
    return Column(f"count(DISTINCT {c._sql})", f"count(DISTINCT {c._name})", aggregate=True)


count_distinct = countDistinct


def sumDistinct(value: Any) -> Column:
    c = _column(value)
    return Column(f"sum(DISTINCT {c._sql})", f"sum(DISTINCT {c._name})", aggregate=True)


def stddev(value: Any) -> Column:
    return _aggregate("stddev", value, "stddev_samp")


def first(value: Any) -> Column:
    return _aggregate("first", value)


class _When(Column):
    """`when(condition, value)[.when(...)].otherwise(value)`."""

    def __init__(self, branches: list) -> None:
        self._branches = branches
        parts = " ".join(f"WHEN {c._sql} THEN {v._sql}" for c, v in branches)
        super().__init__(f"(CASE {parts} END)", "CASE WHEN", any(c._aggregate or v._aggregate for c, v in branches))

    def when(self, condition: Column, value: Any) -> "_When":
        return _When(self._branches + [(_column(condition), _constant(value))])

    def otherwise(self, value: Any) -> Column:
        value = _constant(value)
        parts = " ".join(f"WHEN {c._sql} THEN {v._sql}" for c, v in self._branches)
        aggregate = self._aggregate or value._aggregate
        return Column(f"(CASE {parts} ELSE {value._sql} END)", "CASE WHEN", aggregate)


def _constant(value: Any) -> Expr:
    """`when`'s value: a Column as it is, anything else a constant (as in PySpark)."""
    return value if isinstance(value, Expr) else _expr(value)


def when(condition: Column, value: Any) -> _When:
    return _When([(_column(condition), _constant(value))])


def _scalar(function: str, value: Any, *args: Any) -> Column:
    c = _column(value)
    extra = "".join(f", {literal(a)}" for a in args)
    return Column(f"{function}({c._sql}{extra})", f"{function}({c._name})", c._aggregate)


def year(value: Any) -> Column:
    c = _column(value)
    return Column(f"CAST(date_part('year', {c._sql}) AS INTEGER)", f"year({c._name})", c._aggregate)


def month(value: Any) -> Column:
    c = _column(value)
    return Column(f"CAST(date_part('month', {c._sql}) AS INTEGER)", f"month({c._name})", c._aggregate)


def dayofmonth(value: Any) -> Column:
    c = _column(value)
    return Column(f"CAST(date_part('day', {c._sql}) AS INTEGER)", f"dayofmonth({c._name})", c._aggregate)


def round(value: Any, scale: int = 0) -> Column:  # noqa: A001
    return _scalar("round", value, int(scale))


def abs(value: Any) -> Column:  # noqa: A001
    return _scalar("abs", value)


def upper(value: Any) -> Column:
    return _scalar("upper", value)


def lower(value: Any) -> Column:
    return _scalar("lower", value)


def substring(value: Any, pos: int, length: int) -> Column:
    return _scalar("substring", value, int(pos), int(length))


def coalesce(*values: Any) -> Column:
    columns = [_column(v) for v in values]
    return Column(f"coalesce({', '.join(c._sql for c in columns)})", "coalesce", any(c._aggregate for c in columns))


def concat(*values: Any) -> Column:
    columns = [_column(v) for v in values]
    return Column(f"concat({', '.join(c._sql for c in columns)})", "concat", any(c._aggregate for c in columns))


def desc(name: str) -> Column:
    return col(name).desc()


def asc(name: str) -> Column:
    return col(name).asc()
