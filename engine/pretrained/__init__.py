"""Hugging Face models: loading (``hub``) and one adapter per family (``adapters``)."""
