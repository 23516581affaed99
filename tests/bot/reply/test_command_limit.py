"""`[reply] commands_per_member`: a member's memory commands per rolling window in one chat. Past it the
bot says once when they may ask again, then nothing until the window has room; every message is still
recorded. The limit counts on the app's clock, a ManualClock here, moved by hand."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select

from bot.app import App
from bot.config.settings import Settings
from bot.reply.pipeline import OVER_LIMIT, Outcome, Send
from memory.clock import ManualClock
from memory.models import Message
from memory.rate_limit import RateLimit, Rule
from tests.bot.reply.test_memory_commands import answering
from tests.conftest import make_message

HIKE = "周六去西湖边爬山"


async def ask(
    app: App,
    send: Send,
    n: int,
    sender: str = "alice",
    chat: str = "g1",
    text: str = "/recall 西湖",
    **extra: object,
) -> Outcome:
    """Member `sender` sends the command `text` (message `n`) in `chat`."""
    return await app.pipeline.handle(make_message(n, chat=chat, sender=sender, text=text, **extra), send)


def later(app: App, seconds: float) -> None:
    assert isinstance(app.clock, ManualClock)
    app.clock.advance(timedelta(seconds=seconds))


async def stored_count(app: App, **where: object) -> int:
    async with app.db.read() as session:
        query = select(func.count()).select_from(Message).filter_by(**where)
        return int((await session.execute(query)).scalar_one())


async def test_past_the_limit_a_member_is_told_once_when_to_ask_again_and_every_message_is_recorded(
    tmp_path: Path,
) -> None:
    async with answering(tmp_path) as (app, send, sent):
        await app.pipeline.handle(make_message(1, sender="bob", text=HIKE), send)
        answered = [await ask(app, send, n) for n in range(2, 7)]
        note = await ask(app, send, 7)
        later(app, 25)
        quiet = await ask(app, send, 8)
        # addressed to the bot, a command over the limit is still no question for the reply policy
        addressed = await ask(app, send, 9, text="@群忆 /recall 西湖", to_bot=True)
        members = await stored_count(app, is_bot=False)
        bots = await stored_count(app, is_bot=True)
    assert all(o.reason == "command" and o.reply is not None and HIKE in o.reply for o in answered)
    assert note.reason == OVER_LIMIT and note.reply == "问得有点频繁了，60 秒后再问吧。"
    assert quiet == Outcome(True, reason=OVER_LIMIT) and addressed == Outcome(True, reason=OVER_LIMIT)
    assert len(sent) == 6, "five answers and one note"
    assert members == 9 and bots == 6, "every command is recorded, answered or not, and so is what was sent"


async def test_other_members_and_other_chats_keep_their_own_count(tmp_path: Path) -> None:
    async with answering(tmp_path) as (app, send, _sent):
        for n in range(1, 7):
            await ask(app, send, n)
        bob = await ask(app, send, 7, sender="bob")
        elsewhere = await ask(app, send, 8, chat="g2")
        alice = await ask(app, send, 9)
    assert bob.reason == "command" and elsewhere.reason == "command"
    assert alice == Outcome(True, reason=OVER_LIMIT)


async def test_the_window_rolls_and_each_spell_over_the_limit_is_told_once(tmp_path: Path) -> None:
    async with answering(tmp_path) as (app, send, _sent):
        for n in range(1, 6):  # at 0, 10, 20, 30 and 40 s
            later(app, 10 if n > 1 else 0)
            assert (await ask(app, send, n)).reason == "command"
        later(app, 5)  # 45 s: the first leaves the window at 60 s
        first_note = await ask(app, send, 6)
        later(app, 14)  # 59 s
        quiet = await ask(app, send, 7)
        later(app, 1)  # 60 s
        again = await ask(app, send, 8)
        later(app, 1)  # 61 s: the one at 10 s leaves the window at 70 s
        second_note = await ask(app, send, 9)
    assert first_note.reply == "问得有点频繁了，15 秒后再问吧。"
    assert quiet == Outcome(True, reason=OVER_LIMIT)
    assert again.reason == "command"
    assert second_note.reply == "问得有点频繁了，9 秒后再问吧。"


async def test_an_english_chat_is_told_in_english_and_a_long_wait_in_minutes(tmp_path: Path) -> None:
    settings = Settings.model_validate({"reply": {"commands_per_member": 1, "commands_window_seconds": 300}})
    async with answering(tmp_path, settings) as (app, send, _sent):
        await app.pipeline.handle(
            make_message(1, sender="bob", text="who wants to go hiking this weekend"), send
        )
        await ask(app, send, 2, text="/recall hiking")
        later(app, 100)
        note = await ask(app, send, 3, text="/recall hiking")
    assert note.reply == "That's a lot of questions at once; ask again in 4 minutes."


async def test_a_limit_of_0_answers_every_command_and_keeps_nothing(tmp_path: Path) -> None:
    settings = Settings.model_validate({"reply": {"commands_per_member": 0}})
    async with answering(tmp_path, settings) as (app, send, sent):
        outcomes = [await ask(app, send, n, sender=("alice", "bob")[n % 2]) for n in range(1, 21)]
        kept = len(app.pipeline.command_limit)
    assert all(o.reason == "command" for o in outcomes) and len(sent) == 20
    assert kept == 0


async def test_a_reload_changes_the_limit_at_once(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[reply]\ncommands_per_member = 2\n", encoding="utf-8")
    async with answering(tmp_path, config=config) as (app, send, _sent):
        before = [(await ask(app, send, n)).reason for n in range(1, 4)]
        config.write_text("[reply]\ncommands_per_member = 3\n", encoding="utf-8")
        assert app.config.reload()
        after = [(await ask(app, send, n)).reason for n in range(4, 6)]
        config.write_text("[reply]\ncommands_per_member = 0\n", encoding="utf-8")
        assert app.config.reload()
        unlimited = (await ask(app, send, 6)).reason
    assert before == ["command", "command", OVER_LIMIT]
    assert after == ["command", OVER_LIMIT]
    assert unlimited == "command"


async def test_only_members_who_asked_within_the_window_are_remembered(tmp_path: Path) -> None:
    async with answering(tmp_path) as (app, send, _sent):
        for n in range(1, 51):
            await ask(app, send, n, sender=f"member{n}")
        crowd = len(app.pipeline.command_limit)
        later(app, 60)
        await ask(app, send, 51)
        after = len(app.pipeline.command_limit)
    assert crowd == 50
    assert after == 1, "those whose every command left the window are dropped"


def test_past_its_most_keys_the_limit_drops_those_that_asked_longest_ago() -> None:
    now = [0.0]
    limit = RateLimit(lambda: Rule(1, 60.0), lambda: now[0], max_keys=3)
    for key in ("a", "b", "c", "d"):
        limit.add(key)
        now[0] += 1
    assert len(limit) == 3
    assert limit.check("a").allowed, "the oldest was dropped: it has room again"
    assert not limit.check("b").allowed and not limit.check("d").allowed
