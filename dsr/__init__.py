"""dsr: dynamical-systems reconstruction in JAX (GTF-DEER)."""

__version__ = "0.1.0"
