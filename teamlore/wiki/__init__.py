"""The wiki: deterministic routing of facts to pages, the durable dirty set, page writers.

Built by the wiki issue (#4) on top of ``teamlore.capabilities.facts.FactReader``.
"""
