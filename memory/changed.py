"""The one refusal every admin edit made from a page shares: what the page showed has changed since."""

from __future__ import annotations


class ChangedMeanwhile(Exception):
    """An edit refused because what it was made from (a jargon entry, a person's name) changed after
    the caller read it, at the revision the caller passed back; nothing was saved. The console answers
    it with a 409."""
