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
