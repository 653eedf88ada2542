"""Language-model roles (extract, judge, write, answer) over one OpenAI-compatible client.

Everything here is optional: without ``TEAMLORE_LLM_BASE_URL`` nothing in this package is built
and Teamlore stays heuristic and offline. Each role validates what the model returns and falls
back to its heuristic counterpart when the model fails; fallbacks are counted in the spend ledger.
"""
