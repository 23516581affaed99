"""What the passes share: the SQL function picking rows, and small statements."""

from __future__ import annotations

import json
from collections.abc import Sequence

HOLDS_INVISIBLE = "qunyi_holds_invisible"
"""SQL function (registered for the run): 1 when its text holds a character that shows nothing."""

BATCH = 500
"""Ids per statement where they are bound one by one."""


def json_ids(ids: Sequence[int]) -> str:
    """`ids` as one JSON parameter, for `IN (SELECT value FROM json_each(:ids))`."""
    return json.dumps(sorted(set(ids)))


def batches(ids: Sequence[int]) -> list[list[int]]:
    """`ids` in lists of at most `BATCH`."""
    return [list(ids[i : i + BATCH]) for i in range(0, len(ids), BATCH)]
