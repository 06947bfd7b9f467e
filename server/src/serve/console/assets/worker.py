"""A console Python cell, run in a worker process of its own (ADR 0080): the code comes on
stdin, `con` is the `pondra` client connected to the node, and the outcome (stdout, an error,
and the value of a last expression that is a DataFrame, as columns and rows) is written as
JSON to the file PONDRA_CELL_RESULT names."""

import ast
import contextlib
import io
import json
import os
import sys
import traceback

MAX_ROWS = 10_000


def frame_of(value):
    """A DataFrame-like value's columns and first rows as text, or None."""
    table = None
    module = type(value).__module__.split(".")[0]
    if module == "pondra" and hasattr(value, "arrow"):
        value = value.arrow()
        module = "pyarrow"
    if module == "pandas" and hasattr(value, "columns") and hasattr(value, "itertuples"):
        columns = [{"name": str(c), "type": str(t)} for c, t in zip(value.columns, value.dtypes)]
        rows = [list(r) for r in value.head(MAX_ROWS).itertuples(index=False, name=None)]
        total = len(value)
    elif module == "polars" and hasattr(value, "rows"):
        columns = [{"name": c, "type": str(t)} for c, t in zip(value.columns, value.dtypes)]
        rows = [list(r) for r in value.head(MAX_ROWS).rows()]
        total = value.height
    elif module == "pyarrow" and hasattr(value, "to_pylist") and hasattr(value, "schema"):
        table = value
        columns = [{"name": f.name, "type": str(f.type)} for f in table.schema]
        rows = [list(r.values()) for r in table.slice(0, MAX_ROWS).to_pylist()]
        total = table.num_rows
    else:
        return None
    text = lambda v: None if v is None or v != v else str(v)  # noqa: E731 - NaN is missing
    return {"columns": columns, "rows": [[text(v) for v in row] for row in rows], "total": total}


def main():
    code = sys.stdin.read()
    result = {"stdout": "", "error": None, "frame": None}
    printed = io.StringIO()
    namespace = {"__name__": "__main__"}
    try:
        import pondra

        namespace["pondra"] = pondra
        namespace["con"] = pondra.connect(os.environ["PONDRA_URL"], token=os.environ.get("PONDRA_TOKEN") or None)
    except Exception as error:  # noqa: BLE001 - shown to the cell's author
        result["error"] = f"the pondra client cannot connect from {sys.executable}: {error}"
    if result["error"] is None:
        try:
            tree = ast.parse(code, "<cell>", "exec")
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            with contextlib.redirect_stdout(printed):
                exec(compile(tree, "<cell>", "exec"), namespace)
                value = None
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
            frame = frame_of(value) if value is not None else None
            result["frame"] = frame
            if value is not None and frame is None:
                printed.write(repr(value) + "\n")
        except BaseException:  # noqa: BLE001 - the cell's own error, shown in place
            result["error"] = "".join(traceback.format_exc().splitlines(True)[-12:])
    result["stdout"] = printed.getvalue()[-1_000_000:]
    with open(os.environ["PONDRA_CELL_RESULT"], "w") as out:
        json.dump(result, out, default=str)


main()
