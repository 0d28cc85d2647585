"""Remove a folder a reviewer could write, whatever it left in it.

A reviewer's scratch HOME may hold anything it made: folders nested thousands deep (deeper
than a path can name, and than recursion allows), folders without read, write or search
permission, symbolic links to anything (never followed), FIFOs, sockets. `remove_tree`
walks it without recursion, one open folder at a time, every step relative to a folder's
descriptor (no long paths, no link followed), gives each folder to its owner again before
it reads or empties it, stops after a time bound, and returns what it could not remove
instead of raising.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass, field

REMOVE_SECONDS = 60.0  # a tree that takes longer is left, and said so
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SHOWN = 3  # paths named of what stayed


@dataclass
class Removal:
    """What `remove_tree` left: a few of the paths (relative to the tree) and how many."""

    left: list[str] = field(default_factory=list)
    count: int = 0
    timed_out: bool = False

    def note(self, path: str) -> None:
        self.count += 1
        if len(self.left) < _SHOWN:
            self.left.append(path if len(path) <= 200 else path[:97] + "..." + path[-100:])

    def text(self) -> str:
        """'' when everything went; else one sentence."""
        if not self.count and not self.timed_out:
            return ""
        what = f"{self.count} entries could not be removed (e.g. {', '.join(self.left)})" if self.count else ""
        late = f"removal stopped after {REMOVE_SECONDS:g}s" if self.timed_out else ""
        return "; ".join(t for t in (what, late) if t)


def _open_folder(name: str, parent: int) -> int:
    """Open the folder `name` of `parent` (never a link), made readable and writable by its
    owner first when it is not."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        # no read permission: reach it without reading (O_PATH) and chmod the very folder
        path_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{path_fd}", 0o700)
        finally:
            os.close(path_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    _owner_rwx(fd)
    return fd


def _owner_rwx(fd: int) -> None:
    """Give the open folder's owner read, write and search (emptying it needs write and search)."""
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_mode & 0o700 != 0o700:
            os.fchmod(fd, 0o700)


def _empty_files(fd: int, dev: int, skip: set[tuple[int, int]], where: str, result: Removal) -> str | None:
    """Remove every entry of the open folder that is not a folder; return the name of a
    subfolder still to empty (None when there is none left to try)."""
    try:
        entries = os.listdir(fd)
    except OSError:
        result.note(where)
        return None
    for name in entries:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError:
            result.note(f"{where}/{name}")
            continue
        if stat.S_ISDIR(st.st_mode):
            if (st.st_dev, st.st_ino) in skip:
                continue
            if st.st_dev != dev:  # another file system mounted here: left alone
                skip.add((st.st_dev, st.st_ino))
                result.note(f"{where}/{name}")
                continue
            return name
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError:
            skip.add((st.st_dev, st.st_ino))
            result.note(f"{where}/{name}")
    return None


def remove_tree(folder: str, seconds: float = REMOVE_SECONDS) -> Removal:
    """Remove `folder` and everything in it; what could not go is returned, never raised."""
    result = Removal()
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except FileNotFoundError:
        return result
    except OSError:
        result.note(".")
        return result
    _owner_rwx(fd)
    top = os.fstat(fd)
    try:
        _walk(fd, top.st_dev, (top.st_dev, top.st_ino), time.monotonic() + seconds, result)
    except OSError as exc:  # the tree changed under the walk: what is left stays
        result.note(f"({exc.strerror or exc})")
    finally:
        os.close(fd)
    try:
        os.rmdir(folder)
    except FileNotFoundError:
        pass
    except OSError:
        result.note(".")
    return result


def _walk(start: int, dev: int, top_id: tuple[int, int], end: float, result: Removal) -> None:
    """Empty the folder open at `start`, depth first, holding one extra descriptor at most:
    a finished folder is left through `..` (checked to be the folder it was entered from)."""
    fd = os.dup(start)
    names: list[str] = []  # the path from the top to where `fd` is
    ids: list[tuple[int, int]] = [top_id]  # the identity of each folder on that path
    skip: set[tuple[int, int]] = set()  # folders that could not be entered or removed
    try:
        while True:
            if time.monotonic() > end:
                result.timed_out = True
                return
            where = "/".join(["."] + names)
            child = _empty_files(fd, dev, skip, where, result)
            if child is not None:
                try:
                    inner = _open_folder(child, fd)
                except OSError:
                    _skip(child, fd, skip)
                    result.note(f"{where}/{child}")
                    continue
                os.close(fd)
                fd = inner
                st = os.fstat(fd)
                names.append(child)
                ids.append((st.st_dev, st.st_ino))
                continue
            if not names:
                return
            fd = _leave(fd, names, ids, skip, result)
    finally:
        os.close(fd)


def _skip(name: str, fd: int, skip: set[tuple[int, int]]) -> None:
    """Never try the folder `name` of `fd` again (it cannot be entered)."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return  # gone: the next listing will not show it
    skip.add((st.st_dev, st.st_ino))


def _leave(fd: int, names: list[str], ids: list[tuple[int, int]], skip: set[tuple[int, int]],
           result: Removal) -> int:
    """Go up from the emptied folder open at `fd` and remove it; the parent's descriptor."""
    parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
    st = os.fstat(parent)
    if (st.st_dev, st.st_ino) != ids[-2]:
        os.close(parent)
        raise OSError("a folder was moved during its removal")
    os.close(fd)
    name, gone = names.pop(), ids.pop()
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except OSError:
        skip.add(gone)
        result.note("/".join(["."] + names + [name]))
    return parent


__all__ = ["REMOVE_SECONDS", "Removal", "remove_tree"]
