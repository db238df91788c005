"""Latency, throughput, peak memory, FLOPs, hardware fingerprints and device profiles."""
