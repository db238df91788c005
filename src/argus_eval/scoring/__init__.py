"""The ARGUS axes (P, CDC, RR, E), the overall score, rankings and bootstrap statistics."""
