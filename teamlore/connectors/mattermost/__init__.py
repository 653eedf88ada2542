"""Mattermost: websocket capture, REST backfill, bulk export import, answers in the channel."""
