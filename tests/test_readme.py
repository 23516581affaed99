import itertools
import json
import re
from pathlib import Path

import click

from bot.cli.main import cli

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


def _named_commands(span: str) -> tuple[list[click.Command], list[str]]:
    """The commands a README span such as `qunyi jargon list\\|show --chat CHAT` names (alternatives
    split at `|`), and the options it gives them. An unknown command name fails."""
    words = span.replace("\\|", "|").split()
    commands: list[click.Command] = [cli]
    for word in words:
        if not re.fullmatch(r"[a-z]+(\|[a-z]+)*", word):
            break
        groups = [command for command in commands if isinstance(command, click.Group)]
        if len(groups) < len(commands):
            choices = [
                p.type.choices for c in commands for p in c.params[:1] if isinstance(p.type, click.Choice)
            ]
            assert all(set(word.split("|")) <= set(c) for c in choices), (
                f"`qunyi {span}`: {word} not accepted"
            )
            break
        with click.Context(cli) as ctx:
            found = [group.get_command(ctx, name) for group in groups for name in word.split("|")]
        assert None not in found, f"`qunyi {span}`: {word} is no command"
        commands = [command for command in found if command is not None]
    return commands, re.findall(r"--[a-z][a-z-]*", span)


def _options(command: click.Command) -> set[str]:
    return {name for param in command.params for name in param.opts + param.secondary_opts}


def test_readme_commands_and_options_exist() -> None:
    """Every `qunyi …` the README shows names real commands with the options it gives them, and every
    other `--option` in the same table row or paragraph belongs to one of those commands."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraphs = readme.split("\n\n")
    blocks = [line for part in paragraphs for line in (part.splitlines() if part.startswith("|") else [part])]
    checked = 0
    for block in blocks:
        named = [_named_commands(span) for span in re.findall(r"`qunyi ([^`]*)`", block)]
        for commands, options in named:
            for command, option in itertools.product(commands, options):
                assert option in _options(command), f"`qunyi {command.name}` has no {option}"
                checked += 1
        mentioned = re.findall(r"`\[?(--[a-z][a-z-]*)", block)
        known = {option for commands, _ in named for command in commands for option in _options(command)}
        if named:
            checked += len(mentioned)
            unknown = set(mentioned) - known - {"--config", "--data-dir", "--help"}  # --help: every command
            assert not unknown, f"{sorted(unknown)} belong to none of the commands in: {block[:100]}"
    assert checked > 40


def test_data_dir_help_is_true_where_it_is_no_data_directory() -> None:
    """README: `bench` and `eval jargon` work in a temporary folder unless given one, and `eval
    disentangle` ignores `--data-dir`. Their `--help` said, as every command's, that it defaults to
    `[storage] data_dir`, so a user running `qunyi bench` feared for the bot's own database."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`bench` and `eval jargon` work in a temporary folder" in readme
    for words, said in (
        (["bench"], "temporary"),
        (["eval", "jargon"], "temporary"),
        (["eval", "disentangle"], "Not used"),
    ):
        commands, _ = _named_commands(" ".join(words))
        (data_dir,) = [param for param in commands[0].params if "--data-dir" in param.opts]
        assert isinstance(data_dir, click.Option) and data_dir.help is not None
        assert "[storage] data_dir" not in data_dir.help and said in data_dir.help, words
