"""verifier.monitor.genuine_code on a real process: libgomp's text as loaded is genuine; a page of it overwritten in
place, or code written into another mapping of libgomp's file, is not, although /proc/<pid>/maps still names
libgomp for both (the settle's charge exempts only genuine libgomp pages: verifier.monitor.cpu_sampler)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifier.monitor.genuine_code import PAGE, GenuinePages

CHILD = textwrap.dedent(r"""
    import ctypes, ctypes.util, mmap, os, sys
    gomp = ctypes.CDLL(ctypes.util.find_library("gomp") or "libgomp.so.1")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    text = next(line.split() for line in open("/proc/self/maps") if "libgomp" in line and " r-xp " in line)
    start, end = (int(x, 16) for x in text[0].split("-"))
    print(text[0], text[2], text[5], flush=True)
    for command in sys.stdin:
        if command.startswith("patch"):  # the last page of libgomp's text, made writable and written
            page = end - mmap.PAGESIZE
            assert libc.mprotect(page, mmap.PAGESIZE, 7) == 0, ctypes.get_errno()
            ctypes.memmove(page + 64, b"\x90" * 32, 32)
            assert libc.mprotect(page, mmap.PAGESIZE, 5) == 0
            print(hex(page), flush=True)
        elif command.startswith("private"):  # libgomp's file mapped again, privately, and code written into it
            fd = os.open(text[5], os.O_RDONLY)
            at = libc.mmap(None, end - start, 7, 2, fd, int(text[2], 16))
            os.close(fd)
            ctypes.memmove(at + 128, b"\xc3" * 16, 16)
            libc.mprotect(at, end - start, 5)
            print(hex(at), flush=True)
""")


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().split()
        if len(first) != 3:
            pytest.skip("no libgomp to load here")
        yield proc, first
    finally:
        proc.kill()
        proc.wait()


def _ask(proc, command: str) -> int:
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    return int(proc.stdout.readline(), 16)


def test_libgomp_as_loaded_is_genuine_and_a_page_written_over_is_not(child):
    proc, (span, offset, path) = child
    start, end = (int(x, 16) for x in span.split("-"))
    pages = GenuinePages(proc.pid)
    if pages.mem is None:
        pytest.skip("the monitor cannot read this process's memory (no ptrace access)")
    try:
        assert all(pages.genuine(path, start, int(offset, 16), a) for a in (start, start + 5, end - PAGE, end - 1))
        patched = _ask(proc, "patch")
        assert not pages.genuine(path, start, int(offset, 16), patched + 70)
        assert pages.genuine(path, start, int(offset, 16), start)  # the pages left alone still are
        again = _ask(proc, "private")
        assert not pages.genuine(path, again, int(offset, 16), again + 128)  # maps names libgomp's file there too
        assert pages.genuine(path, again, int(offset, 16), again + 2 * PAGE)  # its unwritten pages are the file's
        assert not pages.genuine(path + ".missing", start, int(offset, 16), start)  # no file to compare with
    finally:
        pages.close()


def test_no_page_is_genuine_where_the_process_cannot_be_read(tmp_path: Path):
    pages = GenuinePages(2 ** 22 + 12345)  # no such process
    assert pages.mem is None and not pages.genuine("/usr/lib/x86_64-linux-gnu/libgomp.so.1", 0, 0, 0)
