"""The text-classification task on top of the core: IMDB and SST-2 readers, training, masked-LM
pre-training, evaluation, calibration, attributions, head ablation and batched prediction."""
