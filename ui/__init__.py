"""The app's own small package: cached loading, shared widgets and figures (pure functions)."""
