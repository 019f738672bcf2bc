"""Policies: turn an observation into tool calls of the action contract."""
