"""Interpolation geometry on plain arrays: a line in 1-D, barycentric weights over a Delaunay
simplex in 2-D/3-D, and the outcome both report. No I/O, no profstore types above ``model``."""
