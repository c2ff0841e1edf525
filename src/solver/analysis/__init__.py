"""Analyses of a solved game: what a designer asks of it (card usage,
restricted play, sensitivity, skill gap, annotated positions). They read
solved tables and game graphs; none re-derives the rules."""
