"""Our own models, one readable file each, with TransformerLens-style hook points."""
