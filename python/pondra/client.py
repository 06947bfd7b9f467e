"""A connection to a Pondra node over its HTTP door, and the results of statements.

Results travel as Arrow IPC when pyarrow is installed (the columns as they are, straight into
pandas, Polars or pyarrow), and as JSON otherwise (`fetchall` needs nothing but Python)."""

from __future__ import annotations

import datetime
import decimal
import http.client
import io
import json
import threading
from typing import Any, Iterable, List, Optional, Sequence, Tuple
from urllib.parse import quote, urlsplit

from . import _node

ARROW_STREAM = "application/vnd.apache.arrow.stream"


class Error(Exception):
    """A statement or request the node refused, with the engine's message."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _pyarrow():
    try:
        import pyarrow  # noqa: F401
        import pyarrow.ipc  # noqa: F401

        return pyarrow
    except ImportError:
        return None


class Connection:
    """A session with a Pondra node: one of the bundled binary on a lake (`connect(None)`, a
    folder or a bucket URL), or a running `pondra serve` (`connect("http://host:port")`)."""

    def __init__(self, target: Optional[str] = None, *, token: Optional[str] = None) -> None:
        self._token = token
        self._local = None
        if target is not None and target.startswith(("http://", "https://")):
            parts = urlsplit(target)
            self._https = parts.scheme == "https"
            self._host = parts.hostname or "localhost"
            self._port = parts.port or (443 if self._https else 80)
            self._database = parts.path.strip("/") or None
        else:
            self._local = _node.acquire(target)
            host, _, port = self._local.http_address.rpartition(":")
            self._https = False
            self._host = host
            self._port = int(port)
            self._database = None
        self._lock = threading.Lock()
        self._http: Optional[http.client.HTTPConnection] = None
        self._closed = False

    # Life.

    def close(self) -> None:
        """Ends the connection; a node this process started stops with its last connection."""
        if self._closed:
            return
        self._closed = True
        if self._http is not None:
            self._http.close()
            self._http = None
        if self._local is not None:
            _node.release(self._local)
            self._local = None

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - at interpreter exit
        try:
            self.close()
        except Exception:
            pass

    @property
    def address(self) -> str:
        """The node's HTTP address."""
        scheme = "https" if self._https else "http"
        return f"{scheme}://{self._host}:{self._port}"

    # Statements.

    def sql(self, text: str, params: Optional[Sequence[Any]] = None) -> "Result":
        """Runs `text` (statements separated by `;`; the last one's answer is returned), with
        `params` for its `$1`, `$2`, ... or `?` placeholders."""
        if not isinstance(text, str):
            raise TypeError(f"sql() takes SQL text, not {type(text).__name__}")
        if params is None:
            body = text.encode()
            content_type = "text/plain; charset=utf-8"
        else:
            if isinstance(params, (str, bytes)) or not isinstance(params, (list, tuple)):
                raise TypeError("params is a list or tuple of values")
            request = {"sql": text, "params": [_json_parameter(p) for p in params]}
            body = json.dumps(request).encode()
            content_type = "application/json"
        arrow = _pyarrow()
        accept = ARROW_STREAM if arrow is not None else "application/json"
        headers = {"Content-Type": content_type, "Accept": accept}
        read_arrow = lambda response: arrow.ipc.open_stream(response).read_all()  # noqa: E731
        _, response_headers, payload = self._request(
            "POST", "/sql", body, headers, read=read_arrow if arrow is not None else None
        )
        tag = response_headers.get("x-pondra-tag")
        if response_headers.get("content-type", "").startswith(ARROW_STREAM):
            return Result._of_arrow(payload, tag)
        document = json.loads(payload, parse_float=str)
        return Result._of_json(document, tag or document.get("tag"))

    execute = sql

    def append(
        self,
        table: str,
        data: Any,
        *,
        producer: Optional[str] = None,
        seq: Optional[int] = None,
        follows: Optional[int] = None,
    ) -> int:
        """Appends `data` (a pandas or Polars DataFrame, a pyarrow Table or RecordBatch, or a
        list of dicts) to `table`; returns the rows appended. Given a `producer` and a `seq`, the
        batch is appended once: a repeat of (producer, seq) appends nothing and returns 0. With
        `follows`, the `seq` of the producer's previous append, appends sent together from
        several threads commit in that order; one whose predecessor failed raises `Error`
        (HTTP 409) with nothing written, and is sent again after it."""
        if (producer is None) != (seq is None):
            raise ValueError("producer and seq go together")
        if follows is not None and seq is None:
            raise ValueError("follows goes with producer and seq")
        query = ""
        if producer is not None:
            if not isinstance(seq, int) or seq < 0:
                raise ValueError("seq is a whole number")
            query = f"?producer={quote(str(producer))}&seq={seq}"
            if follows is not None:
                if not isinstance(follows, int) or not 0 <= follows < seq:
                    raise ValueError("follows is a whole number below seq")
                query += f"&follows={follows}"
        body, content_type = _encode_rows(data)
        path = f"/tables/{quote(table)}/append{query}"
        _, _, payload = self._request("POST", path, body, {"Content-Type": content_type})
        return int(json.loads(payload)["rows"])

    def table(self, name: str):
        """A lazy `Frame` over table `name`, with Polars' method names."""
        from .frame import Frame

        return Frame._of_table(self, name)

    # The wire.

    def _request(
        self, method: str, path: str, body: bytes, headers: dict, read: Any = None
    ) -> Tuple[int, dict, Any]:
        """Sends a request; the answer's status, headers and body (read by `read` from the
        response as it arrives, when given and the answer is an Arrow stream)."""
        if self._closed:
            raise Error("the connection is closed")
        headers = dict(headers)
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if self._database and "?" not in path:
            path = f"{path}?db={quote(self._database)}"
        with self._lock:
            for attempt in range(2):
                connection = self._connection()
                try:
                    connection.request(method, path, body=body, headers=headers)
                    response = connection.getresponse()
                    break
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                    # A kept-alive connection the node had closed, before it read the
                    # request: once more on a new one.
                    connection.close()
                    self._http = None
                    if attempt == 1:
                        raise
            streamed = read is not None and response.status < 400 and (
                response.getheader("content-type", "").startswith(ARROW_STREAM)
            )
            try:
                if streamed:
                    # Parsed as it arrives, without a copy of the whole body.
                    payload = read(response)
                    response.read()
                else:
                    payload = response.read()
            except Exception:
                connection.close()
                self._http = None
                raise
        response_headers = {k.lower(): v for k, v in response.getheaders()}
        if response.status >= 400:
            try:
                message = json.loads(payload)["error"]
            except (ValueError, KeyError, TypeError):
                message = payload.decode(errors="replace")
            raise Error(message, response.status)
        return response.status, response_headers, payload

    def _connection(self) -> http.client.HTTPConnection:
        if self._http is None:
            if self._https:
                self._http = http.client.HTTPSConnection(self._host, self._port)
            else:
                self._http = http.client.HTTPConnection(self._host, self._port)
        return self._http


def connect(target: Optional[str] = None, *, token: Optional[str] = None) -> Connection:
    """A connection to a lake: `None` for a new temporary one, a folder path or a bucket URL
    (`s3://bucket/prefix`, `gs://`, `az://`) for a node of the bundled binary on that lake,
    `http://host:port` for a running `pondra serve`."""
    return Connection(target, token=token)


def _json_parameter(value: Any) -> Any:
    """A parameter as the HTTP door takes it."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, datetime.datetime):
        kind = "TIMESTAMPTZ" if value.tzinfo is not None else "TIMESTAMP"
        return {"type": kind, "value": value.isoformat(sep=" ")}
    if isinstance(value, datetime.date):
        return {"type": "DATE", "value": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"type": "TIME", "value": value.isoformat()}
    if isinstance(value, decimal.Decimal):
        return {"type": "DECIMAL", "value": str(value)}
    if isinstance(value, (list, tuple)):
        return [_json_parameter(v) for v in value]
    raise TypeError(f"a parameter of type {type(value).__name__} is not supported")


def _encode_rows(data: Any) -> Tuple[bytes, str]:
    """Rows to append, as an Arrow IPC stream (or JSON lines without pyarrow)."""
    arrow = _pyarrow()
    if arrow is None:
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise TypeError("without pyarrow, append takes a list of dicts")
        lines = "".join(json.dumps(row, default=str) + "\n" for row in data)
        return lines.encode(), "application/x-ndjson"
    table = _as_arrow_table(arrow, data)
    sink = io.BytesIO()
    with arrow.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue(), ARROW_STREAM


def _as_arrow_table(arrow, data: Any):
    if isinstance(data, arrow.Table):
        return data
    if isinstance(data, arrow.RecordBatch):
        return arrow.Table.from_batches([data])
    module = type(data).__module__
    if module.startswith("polars"):
        return data.to_arrow()
    if module.startswith("pandas"):
        return arrow.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, dict):
        data = [data]
    if isinstance(data, list):
        return arrow.Table.from_pylist(data)
    raise TypeError(
        "append takes a pandas or Polars DataFrame, a pyarrow Table or RecordBatch, or a list "
        f"of dicts, not {type(data).__name__}"
    )


class Result:
    """The answer to a statement: its columns and rows, read as a cursor (`fetchone`,
    `fetchmany`, `fetchall`) or whole (`df`, `pl`, `arrow`). A statement other than a query
    answers its row count, in one column `Count`."""

    def __init__(self) -> None:
        self._table = None
        self._rows: Optional[List[tuple]] = None
        self._columns: List[str] = []
        self._types: List[str] = []
        self._position = 0
        self.tag: Optional[str] = None

    @classmethod
    def _of_arrow(cls, table, tag: Optional[str]) -> "Result":
        result = cls()
        result.tag = tag
        if tag is not None and table.num_columns == 0:
            return result._counted(tag)
        result._table = table
        result._columns = list(table.column_names)
        result._types = [str(t) for t in table.schema.types]
        return result

    @classmethod
    def _of_json(cls, document: dict, tag: Optional[str]) -> "Result":
        result = cls()
        result.tag = tag
        columns = document.get("columns", [])
        if tag is not None and not columns:
            return result._counted(tag)
        result._columns = [c["name"] for c in columns]
        result._types = [c["type"] for c in columns]
        convert = [_converter(t) for t in result._types]
        result._rows = [
            tuple(f(v) for f, v in zip(convert, row)) for row in document.get("rows", [])
        ]
        return result

    def _counted(self, tag: str) -> "Result":
        words = tag.split()
        count = int(words[-1]) if words and words[-1].isdigit() else None
        if count is None:
            self._rows = []
            return self
        self._columns = ["Count"]
        self._types = ["BIGINT"]
        self._rows = [(count,)]
        return self

    # The shape.

    @property
    def columns(self) -> List[str]:
        return list(self._columns)

    @property
    def types(self) -> List[str]:
        return list(self._types)

    def __len__(self) -> int:
        return len(self._all_rows())

    # Rows.

    def _all_rows(self) -> List[tuple]:
        if self._rows is None:
            table = self._table
            columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
            self._rows = list(zip(*columns)) if columns else []
        return self._rows

    def fetchall(self) -> List[tuple]:
        rows = self._all_rows()[self._position :]
        self._position = len(self._all_rows())
        return rows

    def fetchone(self) -> Optional[tuple]:
        rows = self._all_rows()
        if self._position >= len(rows):
            return None
        self._position += 1
        return rows[self._position - 1]

    def fetchmany(self, size: int = 1) -> List[tuple]:
        rows = self._all_rows()[self._position : self._position + size]
        self._position += len(rows)
        return rows

    def __iter__(self) -> Iterable[tuple]:
        return iter(self.fetchall())

    # Whole.

    def arrow(self):
        """The rows as a pyarrow Table."""
        arrow = _pyarrow()
        if arrow is None:
            raise ImportError("arrow() needs pyarrow (pip install pyarrow)")
        if self._table is not None:
            return self._table
        columns = list(zip(*self._all_rows())) if self._all_rows() else [[] for _ in self._columns]
        return arrow.table({name: list(values) for name, values in zip(self._columns, columns)})

    def df(self):
        """The rows as a pandas DataFrame."""
        if self._table is not None:
            return self._table.to_pandas()
        import pandas

        return pandas.DataFrame(self._all_rows(), columns=self._columns)

    def pl(self):
        """The rows as a Polars DataFrame."""
        import polars

        if self._table is not None:
            # The batches as they came: Polars reads them chunk by chunk, without a copy.
            return polars.from_arrow(self._table, rechunk=False)
        return polars.DataFrame(self._all_rows(), schema=self._columns, orient="row")

    fetchdf = df
    fetch_arrow_table = arrow

    def show(self, max_rows: int = 40) -> None:
        """Prints the rows as a table."""
        print(self._render(max_rows))

    def __repr__(self) -> str:
        return self._render(10)

    def _render(self, max_rows: int) -> str:
        rows = self._all_rows()
        shown = rows[:max_rows]
        texts = [[_text(v) for v in row] for row in shown]
        widths = [len(c) for c in self._columns]
        for row in texts:
            widths = [max(w, len(v)) for w, v in zip(widths, row)]
        line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        out = [line, "| " + " | ".join(c.ljust(w) for c, w in zip(self._columns, widths)) + " |", line]
        out += ["| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |" for row in texts]
        out.append(line)
        if len(rows) > max_rows:
            out.append(f"({len(rows)} rows, {max_rows} shown)")
        return "\n".join(out)


def _text(value: Any) -> str:
    return "NULL" if value is None else str(value)


def _converter(sql_type: str):
    """How a JSON value of a column of `sql_type` becomes a Python value (numbers arrive as
    text, so that decimals keep every digit)."""
    name = sql_type.upper()
    if name in ("DOUBLE", "FLOAT", "REAL"):
        return lambda v: None if v is None else float(v)
    if name.startswith("DECIMAL") or name.startswith("NUMERIC"):
        return lambda v: None if v is None else decimal.Decimal(v)
    if name in ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "INT"):
        return lambda v: None if v is None else int(v)
    if name == "DATE":
        return lambda v: None if v is None else datetime.date.fromisoformat(v)
    if name == "TIMESTAMP":
        return lambda v: None if v is None else datetime.datetime.fromisoformat(v)
    return lambda v: v
