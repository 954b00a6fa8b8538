"""Files: the ones the server rewrites (config, ACL file, tenants file), always atomically;
the ones a start creates; and what the file system under a path is."""
import os
import tempfile


def write_atomically(path, data: bytes, mode=None):
    """Replace path with data: a crash leaves the old file or the new one, never a mix.

    Raises OSError (nothing left behind) when the directory or the write fails.
    """
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}-", dir=directory)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError:
        os.unlink(temporary)
        raise


class CreatedFiles:
    """The files one start created, removed again if the start fails: a file that was
    there before, such as someone's warm arena, is never touched."""

    def __init__(self):
        self.arenas = []     # arena files: removed unless another process has locked one since
        self.others = []     # the unix socket, the pid, tenants and nodes.conf files, locks

    def note(self, path):
        if path and not os.path.lexists(path):
            self.others.append(path)

    def note_arena(self, path):
        if not os.path.lexists(path):
            self.arenas.append(path)

    def remove(self, arena_locked):
        """arena_locked(path): whether another process holds a region of that arena file."""
        for path in self.others:
            _unlink_quietly(path)
        for path in self.arenas:
            if not arena_locked(path):
                _unlink_quietly(path)


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def mount_of(path):
    """(file system type, set of mount options) of the mount holding path, from
    /proc/self/mounts; None when that cannot be read."""
    try:
        with open("/proc/self/mounts") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    path = os.path.abspath(path)
    best = max((m for m in mounts if len(m) >= 4 and path.startswith(m[1].rstrip("/") + "/")),
               key=lambda m: len(m[1]), default=None)
    return (best[2], set(best[3].split(","))) if best else None

