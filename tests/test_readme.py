import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ci.split("# README test command:\n", 1)[1].strip().splitlines()[0]
    assert f"```bash\n{command}\n```" in readme


def test_readme_first_command_replays_the_shipped_sample() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install -e . && qunyi replay samples/group_chat.jsonl" in readme
    assert (ROOT / "samples" / "group_chat.jsonl").is_file()


NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


def test_readme_counts_the_sample_as_it_is() -> None:
    """The set-up paragraph said "seven people": g1 has seven, but the sample holds ten (g2 adds three)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = re.search(r"`samples/group_chat\.jsonl` \((\d+) messages, (\w+) groups, (\w+) people,", readme)
    assert said is not None, "the README no longer describes the sample"
    rows = [
        json.loads(line) for line in (ROOT / "samples" / "group_chat.jsonl").read_text("utf-8").splitlines()
    ]
    people = {row["sender_id"] for row in rows} - {"bot"}
    assert int(said[1]) == len(rows)
    assert NUMBER_WORDS.index(said[2]) == len({row["chat"] for row in rows})
    assert NUMBER_WORDS.index(said[3]) == len(people)
