"""Shared widgets that read session state and call app.runtime (the model picker, layer/head, examples)."""
