#!/usr/bin/env python3
"""An MCP client on the official Python SDK (`mcp`, pinned by install_deps.sh), driving
sre-agent's MCP server as a desktop assistant would. Runs a list of operations in one
session and prints one JSON document with their results.

Usage:
  client.py --stdio CMD [ARG...] -- OPS_JSON      (starts CMD and talks over its stdio)
  client.py --http URL [--token T] -- OPS_JSON    (Streamable HTTP)

OPS_JSON is a list of {"op": "list"}, {"op": "call", "tool": …, "args": {…}},
{"op": "resources"}, {"op": "read", "uri": …}, {"op": "ask_and_wait", "question": …,
"timeout": seconds}, {"op": "follow_up_last", "question": …} (of the last asked one). A
failed operation gives {"error": "…"} and the next one runs.
"""
import asyncio
import json
import re
import sys
import time

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def describe(e):
    """The exception's text, with those of a group's members (anyio wraps errors in them)."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}"


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def call(client, tool, args):
    r = await client.call_tool(tool, args)
    return {"is_error": bool(r.is_error), "text": text_of(r)}


async def run(client, ops):
    out = []
    last_id = None
    for op in ops:
        try:
            kind = op["op"]
            if kind == "list":
                tools = (await client.list_tools()).tools
                out.append({"tools": [
                    {"name": t.name, "description": t.description, "schema": t.input_schema}
                    for t in tools]})
            elif kind == "call":
                out.append(await call(client, op["tool"], op.get("args", {})))
            elif kind == "resources":
                res = (await client.list_resources()).resources
                out.append({"resources": [str(r.uri) for r in res]})
            elif kind == "read":
                r = await client.read_resource(op["uri"])
                out.append({"text": "\n".join(getattr(c, "text", "") for c in r.contents)})
            elif kind == "ask_and_wait":
                asked = await call(client, "ask", {"question": op["question"]})
                m = re.search(r"investigation (\S+) is", asked["text"])
                if asked["is_error"] or not m:
                    out.append({"ask": asked})
                    continue
                deadline = time.monotonic() + op.get("timeout", 60)
                while True:
                    got = await call(client, "investigation", {"id": m.group(1)})
                    if "has not ended yet" not in got["text"] or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.2)
                last_id = m.group(1)
                out.append({"ask": asked, "id": last_id, "investigation": got})
            elif kind == "follow_up_last":
                out.append(await call(client, "follow_up", {"id": last_id, "question": op["question"]}))
            else:
                out.append({"error": f"unknown op {kind}"})
        except Exception as e:  # noqa: BLE001 - every failure is a result to report
            out.append({"error": describe(e)})
    return out


async def main(argv):
    sep = argv.index("--")
    target, ops = argv[:sep], json.loads(argv[sep + 1])
    if target[0] == "--stdio":
        server = StdioServerParameters(command=target[1], args=target[2:])
    else:
        headers = {}
        if "--token" in target:
            headers["Authorization"] = f"Bearer {target[target.index('--token') + 1]}"
        server = streamable_http_client(target[1], http_client=httpx2.AsyncClient(headers=headers))
    try:
        async with Client(server) as client:
            results = await run(client, ops)
    except Exception as e:  # noqa: BLE001
        results = [{"error": f"connect: {describe(e)}"}]
    print(json.dumps(results))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
