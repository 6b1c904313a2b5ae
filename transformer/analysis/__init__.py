"""The analysis layer on the core: one ``analyze`` returning every intermediate, the head stepper,
sentence similarity, head roles, attention rollout, switching heads off and the language check."""
