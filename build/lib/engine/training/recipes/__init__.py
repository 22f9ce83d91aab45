"""Recipes that rebuild the shipped checkpoints (``python -m engine.training.pretrain NAME``), one module per model
family; :mod:`~engine.training.recipes.common` holds what they share (the training log, the card's run fields)."""
