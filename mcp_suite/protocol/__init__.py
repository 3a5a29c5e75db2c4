"""The protocol core: framing, strict JSON-RPC decoding, MCP messages, the sanitizer. No I/O, no trio."""
