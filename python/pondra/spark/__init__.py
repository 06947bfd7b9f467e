"""PySpark's DataFrame names over a Pondra connection: `spark = pondra.spark.session(con)`,
`spark.table(name)`, `spark.sql(text)`, and DataFrames with `filter` / `where`, `select`,
`withColumn`, `groupBy(...).agg(...)`, `join`, `orderBy`, `limit`, `distinct`, `toPandas`,
`collect` and `show`, with `pondra.spark.functions` as `F`. Each DataFrame is one SQL statement
the engine runs, as a `pondra.Frame` is."""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Dict, List, Optional, Sequence, Union

from .._sql import Select, identifier
from ..frame import Expr, Frame, _passes
from . import functions
from .functions import Column, _column

__all__ = ["session", "SparkSession", "DataFrame", "GroupedData", "Column", "Row", "functions"]


class Row(tuple):
    """A row of `collect()`: a tuple whose fields are also attributes and keys."""

    _fields: Sequence[str] = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self._fields.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._fields.index(key))
        return tuple.__getitem__(self, key)

    def asDict(self) -> Dict[str, Any]:
        return dict(zip(self._fields, self))


def _row_type(names: List[str]):
    return type("Row", (Row,), {"_fields": list(names)})


class SparkSession:
    """What `pondra.spark.session(con)` gives: tables and SQL as DataFrames."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def table(self, name: str) -> "DataFrame":
        return DataFrame(self._connection.table(name))

    def sql(self, text: str) -> "DataFrame":
        return DataFrame(Frame(self._connection, Select(source=f"({text}) AS _q")))

    def createDataFrame(self, data: Any, schema: Optional[Sequence[str]] = None) -> "DataFrame":
        raise NotImplementedError(
            "createDataFrame is not built: append rows to a table (con.append) and read it"
        )


def session(connection: Any) -> SparkSession:
    """PySpark's names over `connection`."""
    return SparkSession(connection)


def _expressions(columns: Sequence[Any]) -> List[Expr]:
    return [_column(c) for c in _flattened(columns)]


class DataFrame:
    """A lazy query with PySpark's method names."""

    def __init__(self, frame: Frame) -> None:
        self._frame = frame

    # What it is.

    @property
    def columns(self) -> List[str]:
        return self._frame.columns

    def sql(self) -> str:
        return self._frame.sql()

    def __getattr__(self, name: str) -> Column:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self.columns:
            raise AttributeError(f"the DataFrame has no column {name!r}")
        return functions.col(name)

    def __getitem__(self, name: str) -> Column:
        return functions.col(name)

    def __repr__(self) -> str:
        return f"DataFrame[{', '.join(self.columns)}]"

    # Verbs.

    def filter(self, condition: Union[Column, str]) -> "DataFrame":
        if isinstance(condition, str):
            condition = functions.expr(condition)
        return DataFrame(self._frame.filter(condition))

    where = filter

    def select(self, *columns: Any) -> "DataFrame":
        expressions: List[Expr] = []
        for c in _flattened(columns):
            if isinstance(c, str) and c == "*":
                expressions.extend(functions.col(n) for n in self.columns)
            else:
                expressions.append(_column(c))
        return DataFrame(self._frame.select(*expressions))

    def withColumn(self, name: str, column: Column) -> "DataFrame":
        return DataFrame(self._frame.with_columns(_column(column).alias(name)))

    def withColumnRenamed(self, existing: str, new: str) -> "DataFrame":
        return DataFrame(self._frame.rename({existing: new}))

    def drop(self, *columns: str) -> "DataFrame":
        present = [c for c in columns if c in self.columns]
        return DataFrame(self._frame.drop(*present)) if present else self

    def groupBy(self, *columns: Any) -> "GroupedData":
        return GroupedData(self, _expressions(columns))

    groupby = groupBy

    def agg(self, *exprs: Any) -> "DataFrame":
        """Aggregates over every row."""
        aggregates = _aggregates(exprs)
        return DataFrame(self._frame.select(*aggregates))

    def join(
        self,
        other: "DataFrame",
        on: Optional[Union[str, Sequence[str], Column]] = None,
        how: str = "inner",
    ) -> "DataFrame":
        kinds = {
            "inner": "inner",
            "left": "left",
            "left_outer": "left",
            "leftouter": "left",
            "full": "full",
            "outer": "full",
            "full_outer": "full",
            "fullouter": "full",
            "semi": "semi",
            "left_semi": "semi",
            "leftsemi": "semi",
            "anti": "anti",
            "left_anti": "anti",
            "leftanti": "anti",
            "cross": "cross",
        }
        if how not in kinds:
            raise ValueError(f"join: how is one of {sorted(kinds)}, not {how!r}")
        if on is None or isinstance(on, (str, list, tuple)):
            return DataFrame(self._frame.join(other._frame, on=on, how=kinds[how] if on is not None else "cross"))
        return DataFrame(_join_on_condition(self._frame, other._frame, _column(on), kinds[how]))

    def crossJoin(self, other: "DataFrame") -> "DataFrame":
        return self.join(other, how="cross")

    def orderBy(self, *columns: Any, ascending: Union[bool, Sequence[bool]] = True) -> "DataFrame":
        keys = _expressions(columns)
        flags = list(ascending) if isinstance(ascending, (list, tuple)) else [ascending] * len(keys)
        order = []
        for key, up in zip(keys, flags):
            descending = getattr(key, "_descending", None)
            descending = (not up) if descending is None else descending
            # Spark puts NULLs first going up and last going down.
            order.append(f"{key._sql} {'DESC NULLS LAST' if descending else 'ASC NULLS FIRST'}")
        frame = self._frame
        select = frame._select if frame._select.takes_order() else frame._nested()
        sorted_by = [k._name for k in keys] if all(_passes(k) for k in keys) else None
        return DataFrame(frame._with(select.with_(order_by=order), frame._columns, sorted_by))

    sort = orderBy

    def limit(self, n: int) -> "DataFrame":
        return DataFrame(self._frame.head(n))

    def distinct(self) -> "DataFrame":
        return DataFrame(self._frame.unique())

    def dropDuplicates(self, subset: Optional[Sequence[str]] = None) -> "DataFrame":
        return DataFrame(self._frame.unique(subset=list(subset) if subset else None))

    drop_duplicates = dropDuplicates

    # Results.

    def toPandas(self):
        return self._frame.to_pandas()

    def toArrow(self):
        return self._frame.to_arrow()

    def collect(self) -> List[Row]:
        result = self._frame._result()
        row = _row_type(result.columns)
        return [row(values) for values in result.fetchall()]

    def first(self) -> Optional[Row]:
        rows = self.limit(1).collect()
        return rows[0] if rows else None

    def head(self, n: Optional[int] = None) -> Union[Optional[Row], List[Row]]:
        if n is None:
            return self.first()
        return self.limit(n).collect()

    def take(self, n: int) -> List[Row]:
        return self.limit(n).collect()

    def count(self) -> int:
        counted = self._frame._connection.sql(f"SELECT count(*) FROM ({self.sql()}) AS _c")
        return int(counted.fetchone()[0])

    def show(self, n: int = 20, truncate: Union[bool, int] = True) -> None:
        self._frame.head(n)._result().show(max_rows=n)


def _flattened(items: Sequence[Any]) -> List[Any]:
    out: List[Any] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out.extend(_flattened(item))
        else:
            out.append(item)
    return out


def _aggregates(exprs: Sequence[Any]) -> List[Expr]:
    """`agg`'s arguments: aggregate columns, or a dict of column to function name."""
    out: List[Expr] = []
    for e in exprs:
        if isinstance(e, dict):
            for name, function in e.items():
                out.append(functions._aggregate(function, name))
        elif isinstance(e, (list, tuple)):
            out.extend(_aggregates(e))
        else:
            out.append(_column(e))
    return out


def _join_on_condition(left: Frame, right: Frame, condition: Expr, how: str) -> Frame:
    """A join on a condition over both sides' columns: every column of both (their names
    must differ, as they are named unqualified)."""
    kinds = {"inner": "JOIN", "left": "LEFT JOIN", "full": "FULL JOIN", "semi": "SEMI JOIN", "anti": "ANTI JOIN", "cross": "CROSS JOIN"}
    left_columns, right_columns = left.columns, right.columns
    clash = set(left_columns) & set(right_columns)
    if clash and how not in ("semi", "anti"):
        raise ValueError(
            f"join on a condition: both sides have columns {sorted(clash)}; rename one side's "
            "(withColumnRenamed) or join on their names"
        )
    names = list(left_columns) + ([] if how in ("semi", "anti") else list(right_columns))
    source = f"({left.sql()}) AS _l {kinds[how]} ({right.sql()}) AS _r ON {condition._sql}"
    items = [identifier(n) for n in names]
    return left._with(Select(source=source, items=items), names)


class GroupedData:
    """`df.groupBy(...)`, waiting for its aggregates."""

    def __init__(self, frame: DataFrame, keys: List[Expr]) -> None:
        self._frame = frame
        self._keys = keys

    def agg(self, *exprs: Any) -> DataFrame:
        grouped = self._frame._frame.group_by(*self._keys)
        return DataFrame(grouped.agg(*_aggregates(exprs)))

    def count(self) -> DataFrame:
        return self.agg(functions.count("*").alias("count"))

    def _each(self, function: str, columns: Sequence[str]) -> DataFrame:
        return self.agg(*[functions._aggregate(function, c) for c in columns])

    def sum(self, *columns: str) -> DataFrame:
        return self._each("sum", columns)

    def avg(self, *columns: str) -> DataFrame:
        return self._each("avg", columns)

    mean = avg

    def min(self, *columns: str) -> DataFrame:
        return self._each("min", columns)

    def max(self, *columns: str) -> DataFrame:
        return self._each("max", columns)
