"""Cython kernels of cbudget. No Python objects in the hot loops; see docs/architecture.md."""
