"""Our own tiny ViT (kind ``vit``): :mod:`~engine.families.vit.network` is the network,
:mod:`~engine.families.vit.images` how any image becomes what it reads, :mod:`~engine.families.vit.adapter`
tracing and loading."""
