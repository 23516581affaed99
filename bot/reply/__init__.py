"""The reply pipeline: record, decide, build context, answer, record the bot's own message."""
