"""Names stored before Qunyi dropped the characters that show nothing (`memory.text.invisible`),
brought to what today's code stores for them; run once, by migration 0016_clean_stored_names.

Every name column is cleaned with the function its write path applies (`ChatMessage`'s
`clean_name_field` for what the platform sends: senders' names and cards, chat names, nicknames and
cards of members; `clean_name` for names people's memory keeps: aliases and the names the bot uses),
and what is derived from names follows: alias keys, rows that become duplicates (folded as merges fold
them), timeline lines naming a card or a declared name, the verbatim text and participants of
ChatHistory rows and their full-text entries, message vectors whose document names the speaker, the
speakers' names the topic check keeps, and the alias-index versions. Only rows holding such a
character are read closely and only rows that change are written. Message text is never touched: it is
kept as sent.
"""

from memory.name_cleanup.run import CleanupReport, clean_stored_names

__all__ = ["CleanupReport", "clean_stored_names"]
