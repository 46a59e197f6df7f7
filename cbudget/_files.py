"""Writing files safely: every model file cbudget writes (cbudget's JSON, the XGBoost
export) goes through :func:`write_file_atomically`.

A save either replaces a regular file (or creates one) with the complete new content, or
fails and leaves what was there untouched. It never writes into, or replaces, anything
else found at the path, and never follows a symbolic link:

* the content goes to a new temporary file in the same folder, created with ``O_EXCL``
  under a random name (so a link planted at any temporary name is never followed, and
  concurrent saves to one path never share a temporary file), flushed to disk with
  ``fsync``, then renamed over the path (``os.replace``, atomic within a file system);
* a device (``/dev/null``, ``/dev/full``), FIFO, socket or directory at the path is
  refused: renaming over it would silently destroy it (as root, ``/dev/null`` itself);
* a symbolic link at the path is refused too. Renaming over it would replace the link
  and leave its target stale; writing through it would put the model wherever the link
  points, which whoever controls the link may change between a check and the write
  (the classic planted-link attack on shared folders). Save to the target's own path
  instead (``os.path.realpath``);
* an existing file's permission bits are kept; a new file gets the usual ``0o666`` less
  the umask, as ``open(path, "w")`` would give. Other hard links to the old file keep
  the old content (the path now names a new file);
* on any failure (disk full, interrupted write) the temporary file is removed.
"""
from __future__ import annotations

import os
import secrets
import stat

__all__ = ["write_file_atomically", "check_replaceable"]

# flags of the temporary file: created here or not at all (never opened through a link)
_TEMPORARY_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                    | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
_ATTEMPTS = 100
# what a path holds, for the refusal's message
_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFIFO: "a FIFO (named pipe)",
          stat.S_IFSOCK: "a socket"}


def check_replaceable(path: str) -> int | None:
    """The permission bits of the regular file at ``path``, or None when nothing is
    there; FileExistsError for anything else (a link, device, FIFO, socket, folder)."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISREG(status.st_mode):
        return stat.S_IMODE(status.st_mode)
    if stat.S_ISLNK(status.st_mode):
        what = f"a symbolic link (to {os.readlink(path)!r})"
        advice = ("save to the link's target path instead, or remove the link")
    else:
        what = _KINDS.get(stat.S_IFMT(status.st_mode), "not a regular file")
        advice = "choose another path, or remove it first"
    raise FileExistsError(f"{path!r} is {what}; cbudget saves only over regular files "
                          f"(it never replaces or writes through anything else): {advice}")



def write_file_atomically(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (str: as UTF-8) to ``path`` whole or not at all (see the module's
    docstring for what is refused and why).

    Raises
    ------
    FileExistsError
        When ``path`` is a symbolic link, device, FIFO, socket or folder.
    OSError
        When the folder cannot be written (nothing is left behind).
    """
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    content = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    mode = check_replaceable(path)
    folder, name = os.path.split(path)
    temporary, fd = _create_temporary(folder or ".", name, path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        # the path may have changed since the first check (another process): check again
        # just before the rename, which itself never follows a link at the path
        check_replaceable(path)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise
    _sync_folder(folder or ".")


def _create_temporary(folder: str, name: str, path: str) -> tuple[str, int]:
    """A new file ``folder/.name.<random>.tmp`` and its descriptor (mode 0o666 less the
    umask, as ``open`` gives); an OSError naming ``path`` when the folder refuses."""
    for _ in range(_ATTEMPTS):
        temporary = os.path.join(folder, f".{name}.{secrets.token_hex(8)}.tmp")
        try:
            return temporary, os.open(temporary, _TEMPORARY_FLAGS, 0o666)
        except FileExistsError:
            continue   # a name already taken (or a planted link): draw another
        except OSError as exc:
            raise type(exc)(exc.errno, f"cannot save {path!r}: {exc.strerror} "
                                       f"(creating a file in {folder!r})") from None
    raise FileExistsError(f"cannot save {path!r}: no free temporary name in {folder!r} "
                          f"after {_ATTEMPTS} attempts")


def _sync_folder(folder: str) -> None:
    """Flush the folder's entry of the renamed file to disk where the system allows it
    (POSIX); a failure here does not undo a save that already happened."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
