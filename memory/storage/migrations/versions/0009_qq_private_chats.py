"""QQ private chats are named `private-<QQ>`: QQ numbers and group numbers share one number space, and
under the bare number the private chat with user N and group N were one chat (one memory). A QQ chat
recorded as private (its first message was) is renamed with all it holds: a chat both already fed
cannot be split.

Revision ID: 0009_qq_private_chats
Revises: 0008_id_floors
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009_qq_private_chats"
down_revision: str | Sequence[str] | None = "0008_id_floors"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "UPDATE chats SET platform_chat_id = 'private-' || platform_chat_id "
        "WHERE platform = 'qq' AND kind = 'private' AND platform_chat_id NOT LIKE 'private-%' "
        "AND NOT EXISTS (SELECT 1 FROM chats AS c WHERE c.platform = 'qq' "
        "AND c.platform_chat_id = 'private-' || chats.platform_chat_id)"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE chats SET platform_chat_id = substr(platform_chat_id, 9) "
        "WHERE platform = 'qq' AND kind = 'private' AND platform_chat_id LIKE 'private-%' "
        "AND NOT EXISTS (SELECT 1 FROM chats AS c WHERE c.platform = 'qq' "
        "AND c.platform_chat_id = substr(chats.platform_chat_id, 9))"
    )
