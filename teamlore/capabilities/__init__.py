"""What every surface (CLI, web, MCP, bots) calls; surfaces never touch stores directly."""
