"""Hugging Face models: loading (``hub``), one capture path for every family (``interface``,
``adapters``; ``vit_hf`` for images) and what differs per text family (``families``)."""
