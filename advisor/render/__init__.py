"""Renderers: pure functions from the report model to text, Markdown, HTML and figures.

They never measure and never write files; the CLI decides where output goes.
"""
