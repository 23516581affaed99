"""How Qunyi sends a text through a discord.py client: for the Discord adapter's own client and for the
bot of a discord.py program that embeds Qunyi (bot.hosts.discord_cog). discord.py is imported when it
sends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.base import SendError, fit_message
from adapters.discord.convert import message_to_chat
from memory.types import ChatMessage

if TYPE_CHECKING:
    import discord

MAX_MESSAGE_CHARS = 2000  # Discord refuses longer content (it counts code points)


async def send_text(client: discord.Client, chat_id: str, text: str, *, reply_to: str | None) -> ChatMessage:
    """Send `text` through `client` (a discord.py Client or Bot) to a channel, thread or DM channel, as
    an answer to message `reply_to` when given, and return the message as Discord stored it;
    @everyone and role pings are never sent. Text over Discord's 2000-character cap is cut there,
    between whole characters, with `…`. `SendError` when Discord refused it."""
    import discord

    text = fit_message(text, MAX_MESSAGE_CHARS, chat_id)
    try:
        channel = client.get_channel(int(chat_id)) or await client.fetch_channel(int(chat_id))
        reference = (
            discord.MessageReference(
                message_id=int(reply_to), channel_id=int(chat_id), fail_if_not_exists=False
            )
            if reply_to
            else None
        )
        sent = await channel.send(  # type: ignore[union-attr]
            text,
            reference=reference,  # type: ignore[arg-type]  # None is accepted; the overloads omit it
            allowed_mentions=discord.AllowedMentions(
                everyone=False, roles=False, users=True, replied_user=False
            ),
        )
    except (discord.DiscordException, ValueError) as exc:
        raise SendError(f"Discord refused the message to {chat_id}: {exc}") from exc
    user = client.user
    converted = message_to_chat(sent, bot_id=user.id if user else 0)
    if converted is None:
        raise SendError(f"Discord returned an empty message for channel {chat_id}")
    return converted
