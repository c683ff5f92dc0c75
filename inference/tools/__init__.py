"""The tool loop of a conversation (through a ``ModelCalls``), the turn's bounds over all
of its levels, the toolbox, and the agent's own tools: MCP servers and subagents."""
