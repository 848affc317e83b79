#!/usr/bin/env python3
"""A real MCP server (official Python SDK, stdio) that misbehaves on purpose, for
sre-agent's MCP client tests. Each tool is one bad peer:
  echo          answers normally
  crash         exits the process inside the call
  hang          never answers
  huge          answers with a result larger than the client's max_bytes
  flood         sends 5000 log notifications, then answers
  garbage       writes a line that is not JSON-RPC to stdout, then answers
  not_allowed   answers normally (tests leave it off the allow-list)
"""
import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("misbehaving")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def crash() -> str:
    """Exit the process inside the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await asyncio.sleep(3600)
    return "too late"


@server.tool()
def huge() -> str:
    """Answer with about 4 MB."""
    return "x" * (4 * 1024 * 1024)


@server.tool()
async def flood(ctx: Context) -> str:
    """Send thousands of notifications, then answer."""
    for i in range(5000):
        await ctx.info(f"notification {i}")
    return "flood done"


@server.tool()
def garbage() -> str:
    """Write a line that is not JSON-RPC, then answer."""
    sys.stdout.write("this is not json\n{\"jsonrpc\": \"2.0\", \"broken\n")
    sys.stdout.flush()
    return "garbage done"


@server.tool()
def not_allowed() -> str:
    """A tool the operator did not allow."""
    return "you should never see this"


if __name__ == "__main__":
    server.run()
