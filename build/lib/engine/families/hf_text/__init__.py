"""Hugging Face text models (BERT-likes, GPT-2, the rotary decoders), read through one capture path:
:mod:`~engine.families.hf_text.adapter` traces them, :mod:`~engine.families.hf_text.generate` lets decoders
write, :mod:`~engine.families.hf_text.settings` says what differs per family and loads one, and
:mod:`~engine.families.hf_text.tiny_gpt2` builds the offline ``tiny-random-gpt2``."""
