"""Train a small Transformer live on a toy task (copy, reverse, sort, induction) and watch its attention form."""
