"""What the commands that pick random elements share (HRANDFIELD, SRANDMEMBER): the range
of their count, and the refusal of a reply of repeated picks too big to ever be sent."""
from .. import errors
from ..errors import CommandError
from .args import INT64_MAX, parse_int

# Redis takes a count in [-LONG_MAX, LONG_MAX]: its -count must not overflow.
COUNT_RANGE = errors.int_out_of_range(-INT64_MAX, INT64_MAX)


def parse_count(arg):
    count = parse_int(arg)
    if count < -INT64_MAX:
        raise CommandError(COUNT_RANGE)
    return count


def bulk_size(data):
    return len(data) + len(b"%d" % len(data)) + 5        # $<len>\r\n<data>\r\n


def check_repeated_reply(c, command, repeats, smallest):
    """A negative count repeats picks: the reply grows with the count, not the collection,
    so Redis builds it until memory runs out. Refuse `repeats` picks of at least
    `smallest()` bytes each (asked only for a count that big) when that is over
    proto-max-bulk-len (and over the client's output limit when one is set)."""
    limit = c.services.config["proto-max-bulk-len"]
    hard = c.services.config["client-output-buffer-limit"]["normal"].hard
    if hard:
        limit = min(limit, hard)
    if repeats * bulk_size(b"") > limit and repeats * smallest() > limit:
        raise CommandError(f"ERR {command} count -{repeats} would need a reply of more than "
                           f"{limit} bytes (proto-max-bulk-len, client-output-buffer-limit)")
