"""Runs made elsewhere, in and out: importers that turn other harnesses' trajectories into a run directory that
`webeval reverify` judges, and exporters that write a run as other tools read it (Inspect AI's eval log,
Online-Mind2Web's result folders).

It sits beside `cli` at the top of the house: an importer writes the WebVoyager suite's run configuration so that
its re-judge reads an imported run as any run.
"""
