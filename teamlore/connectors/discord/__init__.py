"""Discord: live capture and answers (discord.py gateway), REST backfill, DiscordChatExporter import."""
