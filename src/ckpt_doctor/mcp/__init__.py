"""The MCP face: `ckpt-doctor mcp`, a Model Context Protocol server on stdio for assistants.

- `tools`: what each tool does, over the engine and the sources, redacted as it leaves (no SDK import);
- `prompts`: the common questions as plans over the tools;
- `server`: the SDK's `MCPServer` with the tools (all read-only) and prompts; imported only by the verb.
"""
