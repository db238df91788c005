"""`argus zoo complete`: give a shipped checkpoint the processor files it lacks, weights untouched.

A checkpoint saved where torchvision is missing has no video processor config, which transformers needs
for a Qwen2.5-VL processor where torchvision is installed (models/processor_files.py). Retraining would
add it but change the weights; this writes only the missing files, derived from the checkpoint's own
configs, after checking every recorded file against the manifest, and records the new files' hashes.
"""

from __future__ import annotations

from argus_eval.models.processor_files import complete_processor_files
from argus_eval.zoo.catalog import dir_size, read_manifest, sha256_file, verify_checkpoint, write_entry


def complete_checkpoint(name: str) -> list[str]:
    """Write the processor files zoo model `name` lacks into its checkpoint and its manifest entry
    (files and size_bytes; nothing else changes). Returns the names written (empty: already complete).

    Raises CheckpointError first if any recorded file is missing or modified: only new files are added.
    """
    d = verify_checkpoint(name)
    written = complete_processor_files(d)
    if written:
        entry = read_manifest()["models"][name]
        entry["files"] = {**entry["files"], **{rel: sha256_file(d / rel) for rel in written}}
        entry["size_bytes"] = dir_size(d)
        write_entry(name, entry)
    return written
