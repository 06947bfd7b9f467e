"""`Frame`: a lazy query with Polars' method names (`filter`, `select`, `with_columns`,
`group_by(...).agg(...)`, `join`, `sort`, `head`, ...) and expressions (`col`, `lit`,
`when`), compiled to one SQL statement the engine runs (`frame.sql()` shows it)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from ._sql import Select, identifier, literal, sql_type


class Expr:
    """A column expression: its SQL over the frame's columns, and the name Polars gives it."""

    def __init__(self, sql: str, name: str, aggregate: bool = False) -> None:
        self._sql = sql
        self._name = name
        self._aggregate = aggregate

    # Naming.

    def alias(self, name: str) -> "Expr":
        return Expr(self._sql, name, self._aggregate)

    @property
    def meta_name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<Expr {self._sql} AS {self._name}>"

    # Operators.

    def _binary(self, op: str, other: Any, reverse: bool = False) -> "Expr":
        other = _expr(other)
        left, right = (other, self) if reverse else (self, other)
        aggregate = self._aggregate or other._aggregate
        return Expr(f"({left._sql} {op} {right._sql})", left._name, aggregate)

    def __add__(self, other: Any) -> "Expr":
        return self._binary("+", other)

    def __radd__(self, other: Any) -> "Expr":
        return self._binary("+", other, True)

    def __sub__(self, other: Any) -> "Expr":
        return self._binary("-", other)

    def __rsub__(self, other: Any) -> "Expr":
        return self._binary("-", other, True)

    def __mul__(self, other: Any) -> "Expr":
        return self._binary("*", other)

    def __rmul__(self, other: Any) -> "Expr":
        return self._binary("*", other, True)

    def __truediv__(self, other: Any) -> "Expr":
        # Polars divides to a float, also integers.
        left, right = self.cast("float64"), _expr(other).cast("float64")
        return Expr(f"({left._sql} / {right._sql})", self._name, self._aggregate)

    def __rtruediv__(self, other: Any) -> "Expr":
        return _expr(other).__truediv__(self)

    def __floordiv__(self, other: Any) -> "Expr":
        return Expr(f"floor({self._binary('/', other)._sql})", self._name, self._aggregate)

    def __mod__(self, other: Any) -> "Expr":
        return self._binary("%", other)

    def __pow__(self, other: Any) -> "Expr":
        return Expr(f"power({self._sql}, {_expr(other)._sql})", self._name, self._aggregate)

    def __neg__(self) -> "Expr":
        return Expr(f"(- {self._sql})", self._name, self._aggregate)

    def __eq__(self, other: Any) -> "Expr":  # type: ignore[override]
        return self._binary("=", other)

    def __ne__(self, other: Any) -> "Expr":  # type: ignore[override]
        return self._binary("<>", other)

    def __lt__(self, other: Any) -> "Expr":
        return self._binary("<", other)

    def __le__(self, other: Any) -> "Expr":
        return self._binary("<=", other)

    def __gt__(self, other: Any) -> "Expr":
        return self._binary(">", other)

    def __ge__(self, other: Any) -> "Expr":
        return self._binary(">=", other)

    def __and__(self, other: Any) -> "Expr":
        return self._binary("AND", other)

    def __rand__(self, other: Any) -> "Expr":
        return self._binary("AND", other, True)

    def __or__(self, other: Any) -> "Expr":
        return self._binary("OR", other)

    def __ror__(self, other: Any) -> "Expr":
        return self._binary("OR", other, True)

    def __invert__(self) -> "Expr":
        return Expr(f"(NOT {self._sql})", self._name, self._aggregate)

    def __bool__(self) -> bool:
        raise TypeError(
            "an expression has no truth value: combine conditions with & and |, not and / or"
        )

    __hash__ = None  # type: ignore[assignment]

    # Predicates and conversions.

    def is_in(self, values: Iterable[Any]) -> "Expr":
        items = ", ".join(_expr(v)._sql for v in values)
        return Expr(f"({self._sql} IN ({items}))", self._name, self._aggregate)

    def is_between(self, lower: Any, upper: Any, closed: str = "both") -> "Expr":
        low_op = ">=" if closed in ("both", "left") else ">"
        high_op = "<=" if closed in ("both", "right") else "<"
        low, high = _expr(lower)._sql, _expr(upper)._sql
        return Expr(
            f"({self._sql} {low_op} {low} AND {self._sql} {high_op} {high})",
            self._name,
            self._aggregate,
        )

    def is_null(self) -> "Expr":
        return Expr(f"({self._sql} IS NULL)", self._name, self._aggregate)

    def is_not_null(self) -> "Expr":
        return Expr(f"({self._sql} IS NOT NULL)", self._name, self._aggregate)

    def fill_null(self, value: Any) -> "Expr":
        return Expr(f"coalesce({self._sql}, {_expr(value)._sql})", self._name, self._aggregate)

    def cast(self, dtype: Any) -> "Expr":
        return Expr(f"CAST({self._sql} AS {sql_type(dtype)})", self._name, self._aggregate)

    def abs(self) -> "Expr":
        return Expr(f"abs({self._sql})", self._name, self._aggregate)

    def round(self, decimals: int = 0) -> "Expr":
        return Expr(f"round({self._sql}, {int(decimals)})", self._name, self._aggregate)

    # Aggregates.

    def _aggregate_of(self, function: str) -> "Expr":
        return Expr(f"{function}({self._sql})", self._name, aggregate=True)

    def sum(self) -> "Expr":
        # Polars sums no values (all null, or no rows) to 0, where SQL gives NULL.
        return Expr(f"coalesce(sum({self._sql}), 0)", self._name, aggregate=True)

    def mean(self) -> "Expr":
        return self._aggregate_of("avg")

    def min(self) -> "Expr":
        return self._aggregate_of("min")

    def max(self) -> "Expr":
        return self._aggregate_of("max")

    def median(self) -> "Expr":
        return self._aggregate_of("median")

    def std(self) -> "Expr":
        return self._aggregate_of("stddev_samp")

    def var(self) -> "Expr":
        return self._aggregate_of("var_samp")

    def count(self) -> "Expr":
        return self._aggregate_of("count")

    def n_unique(self) -> "Expr":
        # Polars counts a null as one value.
        return Expr(
            f"(count(DISTINCT {self._sql}) + max(CASE WHEN {self._sql} IS NULL THEN 1 ELSE 0 END))",
            self._name,
            aggregate=True,
        )

    def first(self) -> "Expr":
        return self._aggregate_of("first")

    def last(self) -> "Expr":
        return self._aggregate_of("last")

    # Namespaces.

    @property
    def str(self) -> "_StringFunctions":
        return _StringFunctions(self)

    @property
    def dt(self) -> "_DateFunctions":
        return _DateFunctions(self)


class _StringFunctions:
    def __init__(self, expr: Expr) -> None:
        self._e = expr

    def _call(self, sql: str) -> Expr:
        return Expr(sql, self._e._name, self._e._aggregate)

    def contains(self, pattern: str, literal: bool = False) -> Expr:
        """Whether the text matches `pattern`, a regular expression (or with `literal` a plain
        string), as Polars' `str.contains`."""
        if literal:
            return self._call(f"(strpos({self._e._sql}, {_expr(pattern)._sql}) > 0)")
        return self._call(f"({self._e._sql} ~ {_expr(pattern)._sql})")

    def starts_with(self, prefix: str) -> Expr:
        return self._call(f"starts_with({self._e._sql}, {_expr(prefix)._sql})")

    def ends_with(self, suffix: str) -> Expr:
        return self._call(f"suffix({self._e._sql}, {_expr(suffix)._sql})")

    def to_uppercase(self) -> Expr:
        return self._call(f"upper({self._e._sql})")

    def to_lowercase(self) -> Expr:
        return self._call(f"lower({self._e._sql})")

    def len_chars(self) -> Expr:
        return self._call(f"length({self._e._sql})")

    def slice(self, offset: int, length: Optional[int] = None) -> Expr:
        start = int(offset) + 1
        if length is None:
            return self._call(f"substring({self._e._sql}, {start})")
        return self._call(f"substring({self._e._sql}, {start}, {int(length)})")


class _DateFunctions:
    def __init__(self, expr: Expr) -> None:
        self._e = expr

    def _part(self, part: str) -> Expr:
        return Expr(f"CAST(date_part('{part}', {self._e._sql}) AS INTEGER)", self._e._name, self._e._aggregate)

    def year(self) -> Expr:
        return self._part("year")

    def month(self) -> Expr:
        return self._part("month")

    def day(self) -> Expr:
        return self._part("day")


def col(name: str) -> Expr:
    """The column `name`."""
    return Expr(identifier(name), name)


def lit(value: Any) -> Expr:
    """A constant."""
    if isinstance(value, Expr):
        return value
    return Expr(literal(value), "literal")


def count_rows() -> Expr:
    """The number of rows (of each group): Polars' `len()`, which the package exports by
    that name."""
    return Expr("count(*)", "len", aggregate=True)


class When:
    """`when(condition).then(value)[.when(...).then(...)].otherwise(value)`."""

    def __init__(self, branches: List[tuple], condition: Expr) -> None:
        self._branches = branches
        self._condition = condition

    def then(self, value: Any) -> "Then":
        return Then(self._branches + [(self._condition, _expr(value, strings_are_columns=False))])


class Then(Expr):
    def __init__(self, branches: List[tuple]) -> None:
        self._branches = branches
        first = branches[0][1]
        super().__init__(self._case(None), first._name, any(c._aggregate or v._aggregate for c, v in branches))

    def _case(self, otherwise: Optional[Expr]) -> str:
        parts = " ".join(f"WHEN {c._sql} THEN {v._sql}" for c, v in self._branches)
        tail = f" ELSE {otherwise._sql}" if otherwise is not None else ""
        return f"(CASE {parts}{tail} END)"

    def when(self, condition: Expr) -> When:
        return When(self._branches, condition)

    def otherwise(self, value: Any) -> Expr:
        value = _expr(value, strings_are_columns=False)
        return Expr(self._case(value), self._name, self._aggregate or value._aggregate)


def when(condition: Expr) -> When:
    return When([], condition)


def _expr(value: Any, strings_are_columns: bool = False) -> Expr:
    """An operand as an expression: a constant unless it is one (strings are constants, as in
    Polars' operators; in `select` and the like they name columns)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, str) and strings_are_columns:
        return col(value)
    return lit(value)


def _columns_of(items: Sequence[Any]) -> List[Expr]:
    """`select`'s arguments (names, expressions, lists of them) as expressions."""
    out: List[Expr] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out.extend(_columns_of(item))
        elif isinstance(item, str):
            out.append(col(item))
        elif isinstance(item, Expr):
            out.append(item)
        else:
            raise TypeError(f"expected a column name or an expression, not {type(item).__name__}")
    return out


def _named(exprs: Sequence[Any], named: Dict[str, Any]) -> List[Expr]:
    return _columns_of(exprs) + [_expr(v).alias(k) for k, v in named.items()]


class Frame:
    """A lazy query over a connection's lake, with Polars' method names."""

    def __init__(
        self,
        connection: Any,
        select: Select,
        columns: Optional[List[str]] = None,
        sorted_by: Optional[List[str]] = None,
    ) -> None:
        self._connection = connection
        self._select = select
        self._columns = columns
        # The columns the frame's ORDER BY reads, when it reads columns as they are: a SELECT
        # over it keeps that order while they are there.
        self._sorted_by = sorted_by

    @classmethod
    def _of_table(cls, connection: Any, name: str) -> "Frame":
        parts = name.split(".")
        source = ".".join(identifier(p) for p in parts)
        return cls(connection, Select(source=source))

    # What it is.

    def sql(self) -> str:
        """The SQL statement the frame runs."""
        return self._select.sql()

    @property
    def columns(self) -> List[str]:
        """The frame's column names (asked of the engine, once)."""
        if self._columns is None:
            described = self._connection.sql(f"DESCRIBE {self.sql()}").fetchall()
            self._columns = [row[0] for row in described]
        return list(self._columns)

    @property
    def schema(self) -> Dict[str, str]:
        described = self._connection.sql(f"DESCRIBE {self.sql()}").fetchall()
        return {row[0]: row[1] for row in described}

    def __repr__(self) -> str:
        return f"<pondra.Frame: {self.sql()}>"

    def _with(
        self,
        select: Select,
        columns: Optional[List[str]] = None,
        sorted_by: Optional[List[str]] = None,
    ) -> "Frame":
        return Frame(self._connection, select, columns, sorted_by)

    def _nested(self) -> Select:
        """The frame as a derived table of a new SELECT, its order kept where the columns it
        sorts by are still there."""
        select = self._select.nested(keep_order=False)
        if self._select.order_by and self._sorted_by is not None:
            if all(name in self.columns for name in self._sorted_by):
                # The keys name the columns unqualified: they read alike one level up.
                return select.with_(order_by=list(self._select.order_by))
        return select

    def _kept_sort(self, select: Select) -> Optional[List[str]]:
        return self._sorted_by if select.order_by else None

    # Verbs.

    def filter(self, *predicates: Expr) -> "Frame":
        if not predicates:
            return self
        conditions = [_expr(p)._sql for p in predicates]
        select = self._select if self._select.takes_filter() else self._nested()
        where = select.with_(where=select.where + conditions)
        return self._with(where, self._columns, self._kept_sort(select))

    where = filter

    def select(self, *exprs: Any, **named: Any) -> "Frame":
        items = _named(exprs, named)
        select = self._select if self._select.takes_projection() else self._nested()
        names = [e._name for e in items]
        if len(set(names)) != len(names):
            raise ValueError(f"select gives duplicate column names: {names}")
        rendered = [f"{e._sql} AS {identifier(e._name)}" for e in items]
        # ORDER BY reads an output column before an input one: a new column of a sorted
        # column's name would take its place in the sort, so the sort stays below.
        sorted_by = self._kept_sort(select) or []
        if any(e._name in sorted_by and not _passes(e) for e in items):
            select = self._select.nested(keep_order=False)
        kept = self._kept_sort(select)
        if kept is not None and not all(name in names for name in kept):
            kept = None
        return self._with(select.with_(items=rendered), names, kept)

    def with_columns(self, *exprs: Any, **named: Any) -> "Frame":
        items = _named(exprs, named)
        added = {e._name: e for e in items}
        out: List[Expr] = []
        for name in self.columns:
            out.append(added.pop(name) if name in added else col(name))
        out.extend(added.values())
        return self.select(*out)

    def rename(self, mapping: Dict[str, str]) -> "Frame":
        return self.select(*[col(c).alias(mapping.get(c, c)) for c in self.columns])

    def drop(self, *columns: Union[str, Sequence[str]]) -> "Frame":
        dropped = set(_names(columns))
        missing = dropped - set(self.columns)
        if missing:
            raise ValueError(f"drop: no column named {sorted(missing)}")
        return self.select(*[c for c in self.columns if c not in dropped])

    def group_by(self, *keys: Any, maintain_order: bool = False) -> "GroupBy":
        return GroupBy(self, _columns_of(keys))

    groupby = group_by

    def sort(
        self,
        by: Union[str, Expr, Sequence[Any]],
        *more_by: Any,
        descending: Union[bool, Sequence[bool]] = False,
        nulls_last: bool = False,
    ) -> "Frame":
        keys = _columns_of([by, *more_by])
        flags = list(descending) if isinstance(descending, (list, tuple)) else [descending] * len(keys)
        if len(flags) != len(keys):
            raise ValueError("sort: one descending flag per key")
        order = [
            f"{k._sql} {'DESC' if d else 'ASC'} NULLS {'LAST' if nulls_last else 'FIRST'}"
            for k, d in zip(keys, flags)
        ]
        select = self._select if self._select.takes_order() else self._nested()
        sorted_by = [k._name for k in keys] if all(_passes(k) for k in keys) else None
        return self._with(select.with_(order_by=order), self._columns, sorted_by)

    def head(self, n: int = 5) -> "Frame":
        select = self._select if self._select.takes_limit() else self._nested()
        limited = select.with_(limit=int(n))
        return self._with(limited, self._columns, self._kept_sort(select))

    limit = head

    def unique(self, subset: Optional[Union[str, Sequence[str]]] = None, maintain_order: bool = False) -> "Frame":
        select = self._nested()
        keys = [] if subset is None else [identifier(n) for n in _names([subset])]
        return self._with(select.with_(distinct=keys), self._columns)

    def join(
        self,
        other: "Frame",
        on: Optional[Union[str, Sequence[str]]] = None,
        how: str = "inner",
        *,
        left_on: Optional[Union[str, Sequence[str]]] = None,
        right_on: Optional[Union[str, Sequence[str]]] = None,
        suffix: str = "_right",
    ) -> "Frame":
        kinds = {"inner": "JOIN", "left": "LEFT JOIN", "semi": "SEMI JOIN", "anti": "ANTI JOIN", "full": "FULL JOIN", "cross": "CROSS JOIN"}
        if how not in kinds:
            raise ValueError(f"join: how is one of {sorted(kinds)}, not {how!r}")
        if on is not None:
            left_keys = right_keys = _names([on])
        elif left_on is not None and right_on is not None:
            left_keys, right_keys = _names([left_on]), _names([right_on])
        elif how == "cross":
            left_keys = right_keys = []
        else:
            raise ValueError("join needs on=, or left_on= and right_on=")
        if len(left_keys) != len(right_keys):
            raise ValueError("join: as many left keys as right keys")
        left_columns, right_columns = self.columns, other.columns
        left, right = "_l", "_r"
        condition = " AND ".join(
            f"{left}.{identifier(lk)} = {right}.{identifier(rk)}" for lk, rk in zip(left_keys, right_keys)
        )
        items = [f"{left}.{identifier(c)} AS {identifier(c)}" for c in left_columns]
        names = list(left_columns)
        if how not in ("semi", "anti"):
            dropped = set(right_keys) if how != "full" else set()
            for c in right_columns:
                if c in dropped:
                    continue
                name = c if c not in names else c + suffix
                items.append(f"{right}.{identifier(c)} AS {identifier(name)}")
                names.append(name)
        on_clause = f" ON {condition}" if condition else ""
        source = f"({self.sql()}) AS {left} {kinds[how]} ({other.sql()}) AS {right}{on_clause}"
        return self._with(Select(source=source, items=items), names)

    # Results.

    def _result(self):
        return self._connection.sql(self.sql())

    def collect(self):
        """The rows as a Polars DataFrame."""
        return self._result().pl()

    def to_pandas(self):
        return self._result().df()

    def to_arrow(self):
        return self._result().arrow()

    def fetchall(self) -> List[tuple]:
        return self._result().fetchall()

    def lazy(self) -> "Frame":
        return self

    def explain(self) -> str:
        rows = self._connection.sql(f"EXPLAIN {self.sql()}").fetchall()
        return "\n".join(str(r[-1]) for r in rows)


def _passes(expr: Expr) -> bool:
    """Whether an expression is a column read as it is."""
    return expr._sql == identifier(expr._name)


def _names(items: Sequence[Any]) -> List[str]:
    out: List[str] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out.extend(_names(item))
        elif isinstance(item, str):
            out.append(item)
        elif isinstance(item, Expr) and _passes(item):
            out.append(item._name)
        else:
            raise TypeError(f"expected a column name, not {item!r}")
    return out


class GroupBy:
    """`frame.group_by(keys)`, waiting for its `agg`."""

    def __init__(self, frame: Frame, keys: List[Expr]) -> None:
        if not keys:
            raise ValueError("group_by needs at least one key")
        self._frame = frame
        self._keys = keys

    def agg(self, *exprs: Any, **named: Any) -> Frame:
        aggregates = _named(exprs, named)
        for a in aggregates:
            if not a._aggregate:
                raise ValueError(
                    f"agg: {a._name} is not an aggregate (Polars would gather a list; use "
                    ".sum(), .mean(), .count(), ...)"
                )
        frame = self._frame
        select = frame._select if frame._select.takes_grouping() else frame._nested()
        select = select.with_(order_by=[])
        items = [f"{k._sql} AS {identifier(k._name)}" for k in self._keys]
        items += [f"{a._sql} AS {identifier(a._name)}" for a in aggregates]
        names = [k._name for k in self._keys] + [a._name for a in aggregates]
        if len(set(names)) != len(names):
            raise ValueError(f"agg gives duplicate column names: {names}")
        grouped = select.with_(items=items, group_by=[k._sql for k in self._keys])
        return frame._with(grouped, names)

    def len(self) -> Frame:
        return self.agg(count_rows())

    def count(self) -> Frame:
        return self.agg(count_rows().alias("count"))
