"""Latency, throughput, peak memory, FLOPs, hardware fingerprints and device profiles.

Takes plain callables; torch is imported only when a measurement runs."""

from argus_eval.efficiency.devices import DEVICES, DeviceProfile, get_device, project
from argus_eval.efficiency.fingerprint import fingerprint_id, hardware_fingerprint
from argus_eval.efficiency.flops import count_flops
from argus_eval.efficiency.params import count_params
from argus_eval.efficiency.record import EfficiencyProfile

__all__ = [
    "DEVICES",
    "DeviceProfile",
    "EfficiencyProfile",
    "count_flops",
    "count_params",
    "fingerprint_id",
    "get_device",
    "hardware_fingerprint",
    "project",
]
