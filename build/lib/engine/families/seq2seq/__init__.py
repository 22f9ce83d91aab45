"""Our own encoder-decoder translator (kind ``seq2seq``): :mod:`~engine.families.seq2seq.network` is the network,
:mod:`~engine.families.seq2seq.adapter` how text gets in (English sentences and written dates), tracing,
generation and loading."""
