"""The MCP server: Teamlore's read capabilities for agents, over stdio or streamable HTTP."""

from teamlore.mcp_server.server import TeamloreMCP, http_server, stdio_server

__all__ = ["TeamloreMCP", "http_server", "stdio_server"]
