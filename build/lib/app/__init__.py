"""Attention Playground's Streamlit UI (pages, render helpers, cached engine calls)."""
