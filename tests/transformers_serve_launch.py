"""Launch `transformers serve` with the project's Qwen2.5-VL processor workaround (models/compat.py).

A file, not `python -c`: transformers serve loads the model in a process it starts with the "spawn"
method, which re-imports this file as `__mp_main__` (without running the `__main__` block), so the
workaround applies in that process too. From `python -c` it applied only in the API process, and the
model process failed with "Qwen2VLVideoProcessor requires the Torchvision library" (transformers 5.25).
"""

import sys

from argus_eval.models.compat import ensure_qwen_processor_compat

ensure_qwen_processor_compat()

if __name__ == "__main__":
    from transformers.cli.transformers import main

    sys.argv[0] = "transformers"
    sys.exit(main())
