"""Pondra's Python function worker (ADR 0081).

The server starts this script and talks to it over stdin and stdout in frames: a 4-byte
little-endian length and a JSON header, then an 8-byte little-endian length and a payload.
Requests are `define` (compile a function once) and `call` (run it on a batch of rows).
Arguments and results travel as Arrow IPC streams when pyarrow is installed, else as JSON; an
Arrow stream is read from and written to the pipe itself, to its end-of-stream marker.
What the function prints goes to stderr, so that it cannot break the frames.
"""

import json
import struct
import sys
import traceback

try:
    import pyarrow as pa
    import pyarrow.ipc

    HAVE_PYARROW = True
except ImportError:
    HAVE_PYARROW = False

REQUESTS = sys.stdin.buffer
REPLIES = sys.stdout.buffer
sys.stdout = sys.stderr

FUNCTIONS = {}


def read_exact(size):
    chunks = []
    while size > 0:
        chunk = REQUESTS.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


# In place of a payload's length: an Arrow IPC stream follows, read to its end.
ARROW_FOLLOWS = 0xFFFFFFFFFFFFFFFF


def read_frame():
    """A request's header and payload: bytes, or a pyarrow Table for an Arrow stream."""
    head = read_exact(4)
    if head is None:
        return None, None
    header = json.loads(read_exact(struct.unpack("<I", head)[0]))
    (size,) = struct.unpack("<Q", read_exact(8))
    if size == ARROW_FOLLOWS:
        return header, pa.ipc.open_stream(REQUESTS).read_all()
    return header, read_exact(size) if size else b""


def write_frame(header, payload=b""):
    """A reply: bytes, or a pyarrow RecordBatch sent as an Arrow stream."""
    encoded = json.dumps(header).encode()
    REPLIES.write(struct.pack("<I", len(encoded)) + encoded)
    if isinstance(payload, bytes):
        REPLIES.write(struct.pack("<Q", len(payload)))
        REPLIES.write(payload)
    else:
        REPLIES.write(struct.pack("<Q", ARROW_FOLLOWS))
        with pa.ipc.new_stream(REPLIES, payload.schema) as writer:
            writer.write_batch(payload)
    REPLIES.flush()


def define(header):
    """Compiles the body as the body of `def name(parameters):`, as PL/Python does."""
    lines = header["source"].strip("\n").splitlines() or ["pass"]
    body = "\n".join("    " + line for line in lines)
    source = "def {}({}):\n{}\n".format(header["name"], ", ".join(header["parameters"]), body)
    scope = {}
    try:
        code = compile(source, "<function {}>".format(header["name"]), "exec")
    except SyntaxError as error:
        # The body starts on the line after the `def` added above it.
        raise SyntaxError("{} (line {} of its body)".format(error.msg, (error.lineno or 2) - 1)) from None
    exec(code, scope)
    FUNCTIONS[header["id"]] = (scope[header["name"]], header["vectorized"])


def arguments(header, payload):
    """The call's arguments: pyarrow arrays, or lists without pyarrow."""
    if HAVE_PYARROW:
        return [column.combine_chunks() for column in payload.columns]
    return json.loads(payload)


def as_values(column):
    return column.to_pylist() if HAVE_PYARROW else column


def call(header, payload):
    function, vectorized = FUNCTIONS[header["id"]]
    columns = arguments(header, payload)
    rows = header["rows"]
    if vectorized:
        result = function(*columns)
    else:
        values = [as_values(column) for column in columns]
        result = list(map(function, *values)) if values else [function() for _ in range(rows)]
    return encode(result)


def encode(result):
    if not HAVE_PYARROW:
        if hasattr(result, "tolist"):
            result = result.tolist()
        return json.dumps(list(result)).encode()
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    if not isinstance(result, pa.Array):
        result = pa.array(result)
    return pa.record_batch([result], names=["result"])


def main():
    write_frame({"ready": True, "pyarrow": HAVE_PYARROW, "python": sys.version.split()[0]})
    while True:
        header, payload = read_frame()
        if header is None:
            return
        try:
            if header["op"] == "define":
                define(header)
                write_frame({"ok": True})
            else:
                write_frame({"ok": True}, call(header, payload))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the statement
            message = "{}: {}".format(type(error).__name__, error)
            write_frame({"ok": False, "message": message, "traceback": traceback.format_exc()})


if __name__ == "__main__":
    main()
