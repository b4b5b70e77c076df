"""Prompt templates (package data: the *.md files beside this module)."""
