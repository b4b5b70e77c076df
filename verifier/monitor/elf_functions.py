"""Which function of a shared library an instruction address lies in, from the library's own ELF symbol
tables (``.symtab`` where the library keeps it, else ``.dynsym``), read by the monitor from the file.

torch's ``libtorch_cpu.so`` keeps its full symbol table (about half a million symbols, internal ATen
kernels and its bundled MKL, oneDNN and SLEEF included), so a sampled address names the function it
ran in, mangled. A table is read once per file and process (about 0.1 s for libtorch_cpu.so); names
are read from the string table only for the functions samples land in.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

SHT_SYMTAB, SHT_DYNSYM, PT_LOAD, STT_FUNC = 2, 11, 1, 2
_SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
                 ("size", "<u8")])
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")


class ElfError(ValueError):
    """Not a readable 64-bit little-endian ELF file."""


@dataclass(frozen=True)
class Segment:
    offset: int
    vaddr: int
    filesz: int


class FunctionTable:
    """The functions of one ELF file: sorted starts and ends (virtual addresses), their names on demand."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.segments, sections = _headers(self._map)
        self.stubs = tuple((addr, addr + size) for kind, offset, size, link, addr, name in sections
                           if name in (".plt", ".plt.got", ".plt.sec"))
        table = next((s[:4] for s in sections if s[0] == SHT_SYMTAB), None) or next(
            (s[:4] for s in sections if s[0] == SHT_DYNSYM), None)
        if table is None:
            self.starts = self.ends = self.names = np.zeros(0, np.uint64)
            self._strtab = 0
            return
        _, offset, size, link = table
        self._strtab = sections[link][1]
        syms = np.frombuffer(self._map, _SYM, count=size // _SYM.itemsize, offset=offset)
        funcs = syms[((syms["info"] & 0xF) == STT_FUNC) & (syms["value"] != 0) & (syms["size"] != 0)]
        order = np.argsort(funcs["value"], kind="stable")
        self.starts = funcs["value"][order]
        self.ends = self.starts + funcs["size"][order]
        self.names = funcs["name"][order]

    def vaddr(self, file_offset: int) -> int | None:
        """The virtual address of a file offset inside a loaded segment (None outside every one)."""
        for seg in self.segments:
            if seg.offset <= file_offset < seg.offset + seg.filesz:
                return seg.vaddr + file_offset - seg.offset
        return None

    def functions_at(self, vaddrs: np.ndarray) -> np.ndarray:
        """The index of the function containing each address (-1: no symbol covers it)."""
        k = np.searchsorted(self.starts, vaddrs, side="right").astype(np.int64) - 1
        covered = (k >= 0) & (vaddrs < self.ends[np.maximum(k, 0)]) if len(self.starts) else np.zeros(len(vaddrs), bool)
        return np.where(covered, k, -1)

    def name(self, index: int) -> str:
        start = self._strtab + int(self.names[index])
        end = self._map.find(b"\0", start)
        return self._map[start:end].decode("ascii", errors="replace")


def _headers(data) -> tuple[tuple[Segment, ...], list[tuple[int, int, int, int, int, str]]]:
    """The loaded segments, and the sections as (type, offset, size, link, address, name)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 54)
    segments = []
    for i in range(phnum):
        kind, _flags, offset, vaddr, _paddr, filesz, _memsz, _align = _PHDR.unpack_from(data, phoff + i * phentsize)
        if kind == PT_LOAD:
            segments.append(Segment(offset, vaddr, filesz))
    raw = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4] if shstrndx < len(raw) else 0
    sections = []
    for name, kind, _flags, addr, offset, size, link, _info, _align, _entsize in raw:
        text = data[names_at + name: data.find(b"\0", names_at + name)].decode("ascii", "replace") if names_at else ""
        sections.append((kind, offset, size, link, addr, text))
    return tuple(segments), sections


@lru_cache(maxsize=8)
def functions(path: str, size: int, mtime_ns: int) -> FunctionTable:
    """The table of ``path`` as it is now (keyed by size and mtime: a rebuilt file is read again)."""
    return FunctionTable(Path(path))


def table_for(path: str) -> FunctionTable | None:
    try:
        st = Path(path).stat()
        return functions(path, st.st_size, st.st_mtime_ns)
    except (OSError, ElfError, ValueError):
        return None
