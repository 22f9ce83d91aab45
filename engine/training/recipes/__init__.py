"""Recipes that rebuild the shipped checkpoints (``python -m engine.training.pretrain NAME``), one module per model family."""
