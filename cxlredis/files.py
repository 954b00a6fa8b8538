"""Files the server rewrites (config, ACL file, tenants file): always atomically."""
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
