"""Pure data: the action contract and the observation. No browser, network or pytest here."""

from webeval.actions.observation import Box, Element, Observation, TabInfo
from webeval.actions.schema import (
    Action, ActionError, Computer, Navigate, Tabs, Terminate, TOOL_NAMES, parse_call, parse_turn, tool_schemas,
)

__all__ = [
    "Action", "ActionError", "Box", "Computer", "Element", "Navigate", "Observation", "TabInfo", "Tabs", "Terminate",
    "TOOL_NAMES", "parse_call", "parse_turn", "tool_schemas",
]
