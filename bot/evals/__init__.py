"""Evaluations of Qunyi components on public development data."""
