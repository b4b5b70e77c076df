"""Whether code a process executes is a library's own, page for page: the page at a sampled address, read from
``/proc/<pid>/mem`` by the monitor, against the library file's bytes at the same file offset.

A mapping's path in ``/proc/<pid>/maps`` says which file was mapped, not what its pages hold now: a process can
map a library's file again, privately and writable, or make the library's own text writable, and copy code of
its own over it; the path stays the library's (an outside case, 2026-11-30: helper threads whose code was copied
into libgomp's mapping precomputed in the settle uncharged, 1.5-2.0x against the honest 1.2-1.3x). A shared
library's executable pages are not relocated, so in a process that did neither they equal the file's bytes.

Opening ``/proc/<pid>/mem`` needs ptrace access to the process (the monitor is its ancestor; the runner stays
dumpable, verifier.sandbox.zygote). Where it cannot be opened no page is genuine: whatever rests on it is
charged, never exempted.
"""

from __future__ import annotations

import os

PAGE = os.sysconf("SC_PAGE_SIZE")
FILE_PAGES_KEPT = 256  # file pages cached per process (a spin loop's samples fall on one to three)


class GenuinePages:
    def __init__(self, pid: int) -> None:
        try:
            self.mem: int | None = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.mem = None
        self._file_pages: dict[tuple[str, int], bytes | None] = {}

    def genuine(self, path: str, mapping_start: int, mapping_offset: int, address: int) -> bool:
        """Whether the page holding ``address``, in a mapping of ``path`` that starts at ``mapping_start`` (file
        offset ``mapping_offset``), holds the file's own bytes."""
        if self.mem is None:
            return False
        page = address - address % PAGE
        want = self._file_page(path, mapping_offset + (page - mapping_start))
        if want is None:
            return False
        try:
            got = os.pread(self.mem, PAGE, page)
        except OSError:
            return False
        return got == want  # a file's last page is compared with the zeros past its end, as mapped

    def _file_page(self, path: str, offset: int) -> bytes | None:
        key = (path, offset)
        if key not in self._file_pages:
            if len(self._file_pages) >= FILE_PAGES_KEPT:
                self._file_pages.clear()
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:
                fd = -1
            try:
                data = os.pread(fd, PAGE, offset) if fd >= 0 else b""
            except OSError:
                data = b""
            finally:
                if fd >= 0:
                    os.close(fd)
            # a page past the file's end: nothing to compare, not genuine; a partial last page reads as mapped
            self._file_pages[key] = data.ljust(PAGE, b"\0") if data else None
        return self._file_pages[key]

    def close(self) -> None:
        if self.mem is not None:
            os.close(self.mem)
            self.mem = None
