"""Evaluation harnesses that run production memory code over the public development data."""
