"""Fakes for tests: a loopback OpenAI-compatible server."""
