"""QQ through OneBot v11 (NapCat, LLOneBot/LuckyLilliaBot): reverse WebSocket server or forward client."""

from adapters.onebot_v11.adapter import OneBotAdapter
from adapters.onebot_v11.config import OneBotConfig
from adapters.onebot_v11.errors import ActionFailed, ActionTimeout, NotConnected, OneBotError

__all__ = ["ActionFailed", "ActionTimeout", "NotConnected", "OneBotAdapter", "OneBotConfig", "OneBotError"]
