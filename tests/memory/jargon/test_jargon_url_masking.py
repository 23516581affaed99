"""Long runs a member may send ("1.1.1.…") are read in time growing with their length: a pattern used
to try every position inside the run and read the run to its end from each."""

from __future__ import annotations

from tests.child_reader import read_in_child

LONG_RUNS_READER = """
import json
from memory.jargon.filters import mask_mentions

dotted = "1." * 100_000
print(json.dumps([mask_mentions(dotted) == dotted, mask_mentions("看 " + dotted + "x.com 好").split()]))
"""


def test_a_long_dotted_run_is_masked_at_once() -> None:
    """Found checking every pattern with long runs after QA pass 17: a bare domain could start at
    each word inside a run of name characters and read the run to its end from there, so "1." ×
    10,000 took 7 s in the miner's URL masking (each message of the window, each run). Read in a
    child process with a 120 s guard (milliseconds now; the old pattern needs about half an hour for
    this run)."""
    found = read_in_child(LONG_RUNS_READER)
    assert found == [True, ["看", "好"]]
