"""The engine: the Transformer's parts (attention, masks, positions, layers, embedding, models, config,
tokenizers, devices). It knows no task, file format or page; everything else in the package stands on it."""
