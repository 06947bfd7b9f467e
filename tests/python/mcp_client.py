"""The MCP door (ADR 0082) through the official `mcp` SDK's Streamable HTTP client: the
handshake (the SDK asks for `server/discover` first, then falls back to `initialize`), the four
tools, tables as resources, and tokens: a read token's write through `query` fails and a write
token's succeeds. Then what the SDK never sends, over plain HTTP: no token, a session that
ended, GET, malformed JSON and an unknown method.

Usage: mcp_client.py HOST:PORT READ_TOKEN WRITE_TOKEN ADMIN_TOKEN
Exits non-zero on the first mismatch.
"""

import asyncio
import contextlib
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

address, read_token, write_token, admin_token = sys.argv[1:5]
url = f"http://{address}/mcp"


@contextlib.asynccontextmanager
async def connected(token):
    """An SDK client whose every request carries `token`."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def run(client, sql):
    """The `query` tool's answer to `sql`, checked to be an answer rather than an error."""
    result = await client.call_tool("query", {"sql": sql})
    assert not result.is_error, (sql, result.content[0].text)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(client, sql, *expected):
    """The `query` tool's error for `sql`, checked to name each of `expected`."""
    result = await client.call_tool("query", {"sql": sql})
    message = result.content[0].text
    assert result.is_error, (sql, message)
    for part in expected:
        assert part in message, (sql, message)


async def set_up():
    async with connected(admin_token) as admin:
        assert admin.server_info.name == "pondra", admin.server_info
        assert admin.protocol_version == "2025-11-25", admin.protocol_version
        await run(admin, "CREATE TABLE readings (id INT NOT NULL, place VARCHAR, celsius DOUBLE)")
        await run(admin, "COMMENT ON TABLE readings IS 'one row a minute'")
        await run(admin, "INSERT INTO readings SELECT range::INT, 'p' || (range % 3), range / 10.0 "
                         "FROM range(2500)")
        await run(admin, "CREATE VIEW warm AS SELECT id, celsius FROM readings WHERE celsius > 200")


async def tools_as_a_reader():
    async with connected(read_token) as reader:
        tools = {tool.name: tool for tool in (await reader.list_tools()).tools}
        assert sorted(tools) == ["describe_table", "explain", "list_tables", "query"], tools
        assert tools["query"].input_schema["required"] == ["sql"]
        assert tools["describe_table"].input_schema["properties"]["table"]["type"] == "string"

        listed = await reader.call_tool("list_tables", {})
        assert listed.structured_content == {"tables": [
            {"name": "readings", "kind": "table", "comment": "one row a minute"},
            {"name": "warm", "kind": "view"},
        ]}, listed.structured_content

        described = await reader.call_tool("describe_table", {"table": "readings"})
        assert described.structured_content["columns"] == [
            {"name": "id", "type": "INTEGER", "nullable": False},
            {"name": "place", "type": "VARCHAR", "nullable": True},
            {"name": "celsius", "type": "DOUBLE", "nullable": True},
        ], described.structured_content
        view = await reader.call_tool("describe_table", {"table": "warm"})
        assert [c["name"] for c in view.structured_content["columns"]] == ["id", "celsius"]
        missing = await reader.call_tool("describe_table", {"table": "nowhere"})
        assert missing.is_error and "nowhere" in missing.content[0].text

        everything = await run(reader, "SELECT * FROM readings ORDER BY id")
        assert len(everything["rows"]) == 1000 and everything["row_count"] == 2500, everything["row_count"]
        assert everything["rows"][999] == [999, "p0", 99.9], everything["rows"][999]
        assert "1500 were left out" in everything["note"], everything["note"]
        places = await run(reader, "SELECT place, count(*) AS n FROM readings GROUP BY place ORDER BY place")
        assert places["rows"] == [["p0", 834], ["p1", 833], ["p2", 833]], places
        assert "note" not in places
        await refused(reader, "SELECT nope FROM readings", "nope")

        explained = await reader.call_tool("explain", {"sql": "SELECT count(*) FROM readings WHERE id > 5"})
        assert not explained.is_error and "readings" in explained.content[0].text, explained.content[0].text
        assert explained.structured_content["plan"] == explained.content[0].text

        await refused(reader, "INSERT INTO readings VALUES (1, 'x', 1.0)", "read token cannot write")
        await refused(reader, "CREATE TABLE other (a INT)", "read token cannot create")


async def resources_as_a_reader():
    async with connected(read_token) as reader:
        resources = (await reader.list_resources()).resources
        assert sorted(str(r.uri) for r in resources) == ["pondra://table/readings", "pondra://table/warm"]
        assert all(r.mime_type == "application/json" for r in resources)
        read = await reader.read_resource("pondra://table/readings")
        content = read.contents[0]
        assert content.mime_type == "application/json"
        table = json.loads(content.text)
        assert [c["name"] for c in table["columns"]] == ["id", "place", "celsius"], table["columns"]
        assert len(table["rows"]) == 20, table["rows"]
        try:
            await reader.read_resource("pondra://table/nowhere")
        except MCPError as error:
            assert error.code == -32002, error
        else:
            raise AssertionError("an unknown table was read")


async def writes_as_a_writer():
    async with connected(write_token) as writer:
        inserted = await run(writer, "INSERT INTO readings VALUES (9999, 'p9', -1.5)")
        assert inserted == {"done": "INSERT 0 1"}, inserted
        await refused(writer, "DROP TABLE readings", "write token cannot create")
        counted = await run(writer, "SELECT count(*) FROM readings")
        assert counted["rows"] == [[2501]], counted


async def plain_http():
    """What a client outside the SDK may send: each answered as the transport says."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    reader = {"Authorization": f"Bearer {read_token}"}
    async with httpx2.AsyncClient(timeout=60) as http:
        assert (await http.post(url, json=ping)).status_code == 401
        assert (await http.post(url, json=ping, headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await http.get(url, headers=reader)).status_code == 405

        opened = await http.post(url, json=initialize, headers=reader)
        assert opened.status_code == 200 and opened.headers["content-type"] == "application/json"
        assert opened.json()["result"]["protocolVersion"] == "2025-06-18", opened.json()
        session = {**reader, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
        pinged = await http.post(url, json=ping, headers=session)
        assert pinged.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}, pinged.text
        notified = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        assert notified.status_code == 202 and notified.content == b""
        assert (await http.delete(url, headers=session)).status_code == 204
        assert (await http.post(url, json=ping, headers=session)).status_code == 404

        broken = await http.post(url, content=b'{"jsonrpc": "2.0", "id": 3,', headers=reader)
        assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700, broken.text
        unknown = await http.post(url, json={**ping, "method": "tables/drop"}, headers=reader)
        assert unknown.json()["error"]["code"] == -32601, unknown.text
        # Past the body limit of every HTTP request (2 MiB).
        huge = await http.post(url, content=b" " * (3 << 20), headers=reader)
        assert huge.status_code == 413, huge.status_code


async def main():
    await set_up()
    await tools_as_a_reader()
    await resources_as_a_reader()
    await writes_as_a_writer()
    await plain_http()


asyncio.run(main())
print("mcp: ok")
