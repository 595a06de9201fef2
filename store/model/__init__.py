"""What the rest of profstore talks about: the leaf descriptor, the op mapping, a profiling
row, a lookup's result, and the one bounded cache type. Depends on nothing else in profstore."""
