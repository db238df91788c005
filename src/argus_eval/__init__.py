"""ARGUS-EVAL: evaluate vision-language models on capability, consistency, robustness and efficiency."""

__version__ = "0.1.0"
