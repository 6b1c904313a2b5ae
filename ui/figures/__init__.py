"""Figures: pure functions, numpy in, ``plotly.graph_objects.Figure`` out (they work in a notebook too)."""
