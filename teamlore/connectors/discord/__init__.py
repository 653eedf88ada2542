"""Discord: live capture and answers (discord.py gateway), REST backfill, DiscordChatExporter import."""

PLATFORM = "discord"
DM_WORKSPACE = "@me"  # where DMs live: Discord's own URL segment for them
