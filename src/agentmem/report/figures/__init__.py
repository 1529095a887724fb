"""Figures (matplotlib, SVG + PNG), one module per figure, drawn from result tables only."""
