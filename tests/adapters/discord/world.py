"""A Discord guild with #general and a thread in it, on a discord.py state that never touches the network,
and the gateway payloads of its members' messages: for the adapter's tests and those of Qunyi as a
discord.py cog (bot.hosts.discord_cog). A module of its own, not conftest, as
tests/adapters/onebot_v11/peers.py says why; the `world` fixture (tests/adapters/discord/conftest.py)
makes one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import discord
from discord.state import ConnectionState

BOT_ID = 800000000000000009
WHEN = datetime(2026, 3, 1, 12, 1, tzinfo=UTC)


def snowflake(when: datetime, n: int = 0) -> str:
    return str(((int(when.timestamp() * 1000) - 1420070400000) << 22) + n)


def user(uid: int, name: str, global_name: str | None = None, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(uid),
        "username": name,
        "global_name": global_name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
    }


def member(nick: str | None) -> dict[str, Any]:
    return {
        "nick": nick,
        "roles": [],
        "joined_at": "2025-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "avatar": None,
    }


class World:
    """A guild with #general and a thread in it, on a state that never touches the network."""

    def __init__(self, state: ConnectionState) -> None:
        self.state = state
        self.guild = discord.Guild(
            data={
                "id": "1",
                "name": "Qunyi Lab",
                "channels": [],
                "members": [],
                "member_count": 3,
                "roles": [
                    {
                        "id": "1",
                        "name": "@everyone",
                        "permissions": "0",
                        "position": 0,
                        "color": 0,
                        "hoist": False,
                        "managed": False,
                        "mentionable": False,
                    },
                    {
                        "id": "5",
                        "name": "raiders",
                        "permissions": "0",
                        "position": 1,
                        "color": 0,
                        "hoist": False,
                        "managed": False,
                        "mentionable": True,
                    },
                ],
            },
            state=state,
        )
        state._add_guild(self.guild)
        self.general = discord.TextChannel(
            state=state,
            guild=self.guild,
            data={
                "id": "10",
                "type": 0,
                "name": "general",
                "position": 0,
                "guild_id": "1",
                "permission_overwrites": [],
            },
        )
        self.guild._add_channel(self.general)
        self.thread = discord.Thread(
            guild=self.guild,
            state=state,
            data={
                "id": "11",
                "parent_id": "10",
                "owner_id": "2",
                "name": "raid plan",
                "type": 11,
                "guild_id": "1",
                "message_count": 0,
                "member_count": 0,
                "rate_limit_per_user": 0,
                "thread_metadata": {
                    "archived": False,
                    "auto_archive_duration": 1440,
                    "locked": False,
                    "archive_timestamp": "2026-03-01T12:00:00+00:00",
                },
            },
        )

    def message(self, channel: Any = None, **payload: Any) -> Any:
        channel = channel or self.general
        data = self.payload(channel) | payload
        return discord.Message(state=self.state, channel=channel, data=data)

    def forward(self, **snapshot: Any) -> Any:
        """Alice forwarding, to #general, a message of another channel made of `snapshot`'s fields."""
        forwarded = {"type": 0, "content": "", "embeds": [], "attachments": []} | snapshot
        forwarded |= {"timestamp": WHEN.isoformat(), "edited_timestamp": None}
        return self.message(
            content="",
            message_reference={"type": 1, "message_id": "777", "channel_id": "555", "guild_id": "1"},
            message_snapshots=[{"message": forwarded}],
        )

    @staticmethod
    def payload(channel: Any) -> dict[str, Any]:
        """A gateway MESSAGE_CREATE payload from Alice in `channel`."""
        return {
            "id": snowflake(WHEN),
            "channel_id": str(channel.id),
            "guild_id": "1",
            "type": 0,
            "content": "",
            "timestamp": WHEN.isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "mentions": [],
            "author": user(2, "alice", "Alice"),
            "member": member("Raid Lead"),
        }
