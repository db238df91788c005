"""A byte-bounded cache of decoded (and perturbed) images, owned by an execution context, in front of
an optional on-disk store of perturbed images (runner/inputs/perturbed_store.py) that outlives the run."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from argus_eval.data.images import ImageArray, read_image
from argus_eval.data.paths import InsideRoot
from argus_eval.errors import PerturbationError, SampleError
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.processes import CorruptionProcesses
from argus_eval.runner.inputs import digests
from argus_eval.runner.inputs.perturbed_store import PerturbedStore

# (path, mtime, size, condition or None for the decoded file, seed). No sample id: every question of
# an image shares its decoding, and a perturbation whose seed the image shares is computed once.
_Key = tuple[Path, int, int, Condition | None, int]


@dataclass
class InputCounts:
    """What the image cache did this run (run_log.json "corruptions")."""

    decoded: int = 0  # image files decoded
    computed: int = 0  # corruptions computed (images a kind makes from the source, kept on disk)
    made: int = 0  # other images a condition made (a blank control): cheap, never kept on disk
    reused_memory: int = 0  # perturbed images served from memory to another sample or model


class ImageCache:
    """A byte-bounded LRU of decoded (and perturbed) images, so that every model of a run sees the
    same pixels computed once; functools.lru_cache bounds entries, not bytes, and images vary in size.
    A file is decoded once for all its conditions; a condition that leaves the pixels as they are
    (clean, text, swap) shares the decoded image instead of storing a copy. With a disk store, an
    image a kind makes from its source (a corruption) is also kept there by the file's content, so a
    model planned after the memory has moved on, a rerun, or a run that adds a model reads it back.
    With `processes`, corruptions are computed in worker processes (perturb/processes.py), equal bit for
    bit; the calling thread waits for its image there, so the run's input threads keep them busy."""

    def __init__(
        self,
        max_bytes: int = 256 * 2**20,
        disk: PerturbedStore | None = None,
        processes: CorruptionProcesses | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        self.disk = disk
        self.processes = processes
        self.counts = InputCounts()
        self._items: OrderedDict[_Key, ImageArray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # held for bookkeeping only, never while an image is made
        self._making: dict[_Key, Future[tuple[ImageArray, bool]]] = {}
        self._identities: dict[Condition, str | None] = {}
        self.inside = InsideRoot()  # images are checked against their root once per run, not per question

    def get(self, path: Path, sample_id: str, condition: Condition, seed: int) -> ImageArray:
        """The image of sample_id's file at path as a model sees it under condition with seed
        (sample_id names the sample in the error raised when the file cannot be decoded). Safe from
        several threads (prefetch and batches sent ahead): distinct images are made at once, and an
        image asked for while another thread makes it is waited for, so each is still made once."""
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)  # a file changed on disk is decoded afresh
        except OSError:
            stamp = (-1, -1)  # missing: load_image below raises the SampleError that names it
        # a corruption that ignores the seed (brightness) is the same image for every sample
        seed = seed if condition.uses_seed else 0
        key: _Key = (path, *stamp, condition, seed)
        return self._once(key, lambda: self._make(path, stamp, sample_id, condition, seed))

    def _make(
        self, path: Path, stamp: tuple[int, int], sample_id: str, condition: Condition, seed: int
    ) -> tuple[ImageArray, bool]:
        """The image and whether to keep it under its own key (not when it is the decoded file's)."""
        disk_key = ""
        if self.disk is not None and condition.shows_perturbed_image and stamp[0] >= 0:
            digest = _content_digest(path)
            disk_key = self.disk.key(digest, condition.id, seed, self._identity(condition)) if digest else ""
            read = self.disk.get(disk_key) if disk_key else None
            if read is not None:
                return read, True
        decoded = self._once((path, *stamp, None, 0), lambda: (self._decode(path, stamp, sample_id), True))
        if self.processes is not None and condition.shows_perturbed_image:
            image = self.processes.apply(condition, decoded, seed)
        else:
            image = condition.apply_image(decoded, seed)
        if image is decoded:
            return decoded, False  # clean, text, swap: the decoded file itself, kept once
        with self._lock:
            if condition.shows_perturbed_image:
                self.counts.computed += 1
            else:
                self.counts.made += 1
        if disk_key and self.disk is not None:
            self.disk.put(disk_key, image)
        return image, True

    def _identity(self, condition: Condition) -> str | None:
        """condition's identity (a user's perturbation's code fingerprint), made once per cache: the
        registry is frozen while a run uses it."""
        if condition not in self._identities:
            self._identities[condition] = condition.identity  # the same value whichever thread stores it
        return self._identities[condition]

    def _decode(self, path: Path, stamp: tuple[int, int], sample_id: str) -> ImageArray:
        image, data = read_image(path, sample_id)
        if data is not None and stamp[0] >= 0:
            digests.note(path, stamp[1], stamp[0], data)  # the input stamp needs no second read
        with self._lock:
            self.counts.decoded += 1
        return image

    def _once(self, key: _Key, make: Callable[[], tuple[ImageArray, bool]]) -> ImageArray:
        """key's image from memory, from the thread making it now, or made here. A reuse of a kept
        perturbed image is counted whether it was in memory or being made, as a serial run counts it."""
        with self._lock:
            hit = self._lookup(key)
            if hit is not None:
                self._count_reuse(key)
                return hit
            making = self._making.get(key)
            mine = making is None
            if making is None:
                making = self._making[key] = Future()
        if not mine:
            try:
                image, kept = making.result()
            except (SampleError, PerturbationError):
                return make()[0]  # the maker's error names its sample: fail with this one's own
            if kept:
                with self._lock:
                    self._count_reuse(key)
            return image
        try:
            image, keep = make()
        except BaseException as e:
            with self._lock:
                del self._making[key]
            making.set_exception(e)
            raise
        with self._lock:
            if keep:
                self._store(key, image)
            del self._making[key]
        making.set_result((image, keep))
        return image

    def _count_reuse(self, key: _Key) -> None:
        if key[3] is not None:  # a condition's image; the decoded file's reuse is not counted
            self.counts.reused_memory += 1

    def _lookup(self, key: _Key) -> ImageArray | None:
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
        return hit

    def _store(self, key: _Key, image: ImageArray) -> ImageArray:
        image.setflags(write=False)  # shared between models: nobody may modify it in place
        self._items[key] = image
        self._bytes += image.nbytes
        while self._bytes > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self._bytes -= old.nbytes
        return image

    def to_json(self) -> dict[str, int]:
        """The counts of this cache and its disk store, as run_log.json reports them."""
        out = {
            "decoded": self.counts.decoded,
            "computed": self.counts.computed,
            "made": self.counts.made,
            "reused_memory": self.counts.reused_memory,
        }
        if self.disk is not None:
            d = self.disk.counts
            out |= {"read_disk": d.read, "written_disk": d.written, "corrupt": d.corrupt}
            out |= {"write_failed": d.write_failed, "over_budget": d.over_budget}
        if self.processes is not None:
            out |= self.processes.to_json()
        return out


def _content_digest(path: Path) -> str:
    """A file's content digest ("" if unreadable: decoding names it): an entry is that image only if its
    source bytes are. The input stamps' memo (runner/inputs/digests.py), so a file is read for its digest
    once per process whichever asks first."""
    return digests.digest(path) or ""
