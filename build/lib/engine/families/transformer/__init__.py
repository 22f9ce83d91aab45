"""Our own transformer (kind ``transformer``): decoders and encoders from the same code, with TransformerLens-style
hook points. :mod:`~engine.families.transformer.network` is the network, :mod:`~engine.families.transformer.positional`
its positional encodings, :mod:`~engine.families.transformer.adapter` tracing, generation and loading."""
