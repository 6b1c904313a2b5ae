"""Language modelling: a decoder-only Transformer on the core layers (causal mask in every layer),
its byte-level BPE tokenizer, training, cached decoding and sampling, and the induction probe.

Modules are imported by name (``transformer.lm.model``, ``transformer.lm.decode``, ...); this
package file imports nothing, so the bundle loader can import the model without the trainer.
"""
