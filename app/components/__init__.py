"""Render-only helpers: arrays in, figures out. No engine calls, no torch."""
