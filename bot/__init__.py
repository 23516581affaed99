"""Qunyi's runtime: configuration, wiring, the reply pipeline, the LLM gateway, the CLI."""
