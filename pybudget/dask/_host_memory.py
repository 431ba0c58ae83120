"""One copy of arrays for all the worker processes of a host: a file in /dev/shm (a
tmpfs, Linux), made by the first of the workers that write the arrays' parts into it,
and mapped by all.

Method "whole" gives every worker that runs a problem all the rows.  Two worker
processes each with their own copy computed the same problems 4-9 % slower than with
one copy they share (two one-vs-rest fits of debian-sections20 at once on a 2-core
machine, medians of 8-12), and each copy costs the host the rows' bytes again.  The
file's name is chosen by the client, so that it can have the file unlinked as soon as
the other workers have mapped it (a mapping outlives its name): nothing is left in
/dev/shm after the fit, unless every worker of the host died in between.
"""
import mmap
import os

import numpy as np

ROOT = "/dev/shm"
ALIGN = 64           # each array starts on a cache line


def available():
    """Whether this machine has the tmpfs and a way to reserve its space (elsewhere
    every worker keeps its own copy)."""
    return os.path.isdir(ROOT) and hasattr(os, "posix_fallocate")


def path(name):
    return os.path.join(ROOT, name)


def create(name, shapes):
    """Views of the arrays of ``shapes`` ((shape, dtype) each, zeroed when new) in file
    ``name``, and its layout (what ``attach`` needs): the file's writers each call this,
    and whichever comes first makes the file, which the others open (reserving the same
    space again changes nothing), so no task has to make it before they start.  None
    when the file cannot be made (no tmpfs, or too little room: the space is reserved
    before a page is written, so a full tmpfs fails here and not with SIGBUS at a
    write)."""
    layout, size = layout_of(shapes)
    if not available():
        return None
    try:
        fd = os.open(path(name), os.O_CREAT | os.O_RDWR, 0o600)
    except OSError:
        return None
    try:
        os.posix_fallocate(fd, 0, size)
        mm = mmap.mmap(fd, size)
    except OSError:
        unlink(name)
        return None
    finally:
        os.close(fd)
    return _views(mm, layout), (layout, size)


def layout_of(shapes):
    """(each array's offset, shape and dtype, the file's size) for ``shapes``."""
    layout, size = [], 0
    for shape, dtype in shapes:
        size = -(-size // ALIGN) * ALIGN
        layout.append((size, tuple(shape), np.dtype(dtype).str))
        size += int(np.prod(shape)) * np.dtype(dtype).itemsize
    return layout, max(size, 1)


def attach(name, layout):
    """Views of the arrays in file ``name`` (``create``'s layout); OSError when this
    process does not see the file (another host's, or another /dev/shm)."""
    layout, size = layout
    fd = os.open(path(name), os.O_RDWR)
    try:
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    return _views(mm, layout)


def _views(mm, layout):
    # (each view keeps the mapping alive; it is unmapped with the last of them)
    return [np.frombuffer(mm, dtype=np.dtype(dtype), count=int(np.prod(shape)),
                          offset=offset).reshape(shape) if np.prod(shape) else
            np.empty(shape, dtype=np.dtype(dtype)) for offset, shape, dtype in layout]


def unlink(name):
    """Remove the file's name (the mappings stay valid); gone already: nothing."""
    try:
        os.unlink(path(name))
    except FileNotFoundError:
        pass


async def unlink_async(names):
    """unlink for each name, as a coroutine: ``Client.run`` sends it without waiting."""
    for name in names:
        unlink(name)
