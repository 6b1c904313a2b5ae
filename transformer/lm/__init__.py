"""Language modelling on the core's decoder-only Transformer (``transformer.core.decoder``) and its
byte-level BPE (``transformer.core.bpe``): training, cached decoding and sampling, and the induction probe.

Modules are imported by name (``transformer.lm.decode``, ``transformer.lm.train``, ...); this package file
imports nothing.
"""
