"""Latency, throughput, peak memory, FLOPs, hardware fingerprints and device profiles.

Takes plain callables; torch is imported only when a measurement runs."""

from argus_eval.efficiency.devices import DEVICES, DeviceProfile, get_device
from argus_eval.efficiency.fingerprint import fingerprint_id, hardware_fingerprint
from argus_eval.efficiency.flops import count_flops
from argus_eval.efficiency.params import count_params
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.roofline import project, project_work
from argus_eval.efficiency.work import Pass, Work, count_work

__all__ = [
    "DEVICES",
    "DeviceProfile",
    "EfficiencyProfile",
    "Pass",
    "Work",
    "count_flops",
    "count_params",
    "count_work",
    "fingerprint_id",
    "get_device",
    "hardware_fingerprint",
    "project",
    "project_work",
]
