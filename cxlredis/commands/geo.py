"""Geo commands, as Redis 7.0's geo.c: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH,
GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their _RO forms.

A geo set is a sorted set (Keyspace.write_collection, TYPE_ZSET) whose scores are the
points' 52-bit geohashes (cxlredis/geohash.py has Redis's arithmetic). GEOADD is Redis's
ZADD of those scores. A search looks at the cell of the centre and its eight neighbours,
each a range of scores, in Redis's order, keeps the points inside the shape and sorts
them as Redis does (glibc's stable qsort, or its own partial pqsort when COUNT keeps
fewer than were found), so the same members come back in the same order.
"""
from collections import namedtuple

from .. import errors, geohash
from .._store import TYPE_ZSET
from ..config import parse_double
from ..errors import CommandError
from .args import c_word, parse_int
from .pqsort import pqsort
from .zsets import ADDED, UPDATED, add_scores, fitting_encoding, store

UNSUPPORTED_UNIT = "ERR unsupported unit provided. please use M, KM, FT, MI"
NO_SUCH_MEMBER = "ERR could not decode requested zset member"

# georadiusGeneric's flags: which command variant is searching
COORDS, MEMBER, NOSTORE, SEARCH, SEARCHSTORE = 1, 2, 4, 8, 16
ASC, DESC = 1, 2

Point = namedtuple("Point", "member score longitude latitude dist")


# --- arguments -----------------------------------------------------------------------

def _double(arg, error=errors.NOT_FLOAT):
    """A number as Redis's getDoubleFromObjectOrReply reads it (string2d)."""
    value = parse_double(bytes(arg).decode("latin-1"))
    if value is None:
        raise CommandError(error)
    return value


def _longitude_latitude(argv, at):
    """extractLongLatOrReply: two numbers inside Web Mercator's limits."""
    longitude, latitude = _double(argv[at]), _double(argv[at + 1])
    if not (geohash.LONG_MIN <= longitude <= geohash.LONG_MAX
            and geohash.LAT_MIN <= latitude <= geohash.LAT_MAX):
        raise CommandError(f"ERR invalid longitude,latitude pair {longitude:f},{latitude:f}")
    return longitude, latitude


def _unit(arg):
    """extractUnitOrReply: meters per unit."""
    meters = geohash.UNITS.get(c_word(arg))
    if meters is None:
        raise CommandError(UNSUPPORTED_UNIT)
    return meters


def _radius(argv, at):
    """extractDistanceOrReply: (radius, meters per unit)."""
    radius = _double(argv[at], "ERR need numeric radius")
    if radius < 0:
        raise CommandError("ERR radius cannot be negative")
    return radius, _unit(argv[at + 1])


def _box(argv, at):
    """extractBoxOrReply: (width, height, meters per unit)."""
    width = _double(argv[at], "ERR need numeric width")
    height = _double(argv[at + 1], "ERR need numeric height")
    if height < 0 or width < 0:
        raise CommandError("ERR height or width cannot be negative")
    return width, height, _unit(argv[at + 2])


def _position(zset, member):
    """longLatFromMember: where a member of the set is."""
    score = zset.zset_score(bytes(member))
    if score is None:
        raise CommandError(NO_SUCH_MEMBER)
    return geohash.decode(score)


# --- replies -------------------------------------------------------------------------

def _reply_distance(c, meters):
    """addReplyDoubleDistance: 4 decimals, a bulk string in both protocols."""
    c.reply.bulk(b"%.4f" % meters)


def _reply_coordinate(c, value):
    """addReplyHumanLongDouble: 17 decimals, trailing zeros dropped; a bulk string in
    RESP2, a double in RESP3 (in this form, not ReplyWriter.double's %.17g)."""
    text = (b"%.17f" % value).rstrip(b"0").rstrip(b".")
    if text == b"-0":
        text = b"0"
    if c.protocol == 3:
        c.reply.raw(b"," + text + b"\r\n")
    else:
        c.reply.bulk(text)


# --- GEOADD, GEODIST, GEOHASH, GEOPOS --------------------------------------------------

def cmd_geoadd(c, argv):
    # GEOADD is Redis's ZADD of the points' scores: its options, events and encodings.
    first = 2
    options = set()
    while first < len(argv) and c_word(argv[first]) in (b"nx", b"xx", b"ch"):
        options.add(c_word(argv[first]))
        first += 1
    if (len(argv) - first) % 3 or {b"nx", b"xx"} <= options:
        raise CommandError(errors.SYNTAX)
    points = []
    for at in range(first, len(argv), 3):
        longitude, latitude = _longitude_latitude(argv, at)
        points.append((bytes(argv[at + 2]), float(geohash.score_of(longitude, latitude))))
    if not points:
        raise CommandError(errors.SYNTAX)
    counts, _ = add_scores(c, argv[1], points, options)
    added, updated = counts[ADDED], counts[UPDATED]
    c.reply.integer(added + updated if b"ch" in options else added)


def cmd_geodist(c, argv):
    meters_per_unit = 1.0
    if len(argv) == 5:
        meters_per_unit = _unit(argv[4])
    elif len(argv) > 5:
        raise CommandError(errors.SYNTAX)
    scores = _member_scores(c, argv[:4])
    if None in scores:
        c.reply.null()
        return
    (long1, lat1), (long2, lat2) = (geohash.decode(score) for score in scores)
    _reply_distance(c, geohash.distance(long1, lat1, long2, lat2) / meters_per_unit)


def _member_scores(c, argv):
    """The score of each member argument (None if missing), after the type check."""
    zset = c.collection(argv[1], TYPE_ZSET)
    return [zset.zset_score(bytes(member)) if zset is not None else None for member in argv[2:]]


def cmd_geohash(c, argv):
    scores = _member_scores(c, argv)
    c.reply.array(len(scores))
    for score in scores:
        if score is None:
            c.reply.null()
        else:
            c.reply.bulk(geohash.geohash_string(score))


def cmd_geopos(c, argv):
    scores = _member_scores(c, argv)
    c.reply.array(len(scores))
    for score in scores:
        if score is None:
            c.reply.null_array()
            continue
        longitude, latitude = geohash.decode(score)
        c.reply.array(2)
        _reply_coordinate(c, longitude)
        _reply_coordinate(c, latitude)


# --- the searches ----------------------------------------------------------------------

def cmd_georadius(c, argv):
    _search(c, argv, COORDS)


def cmd_georadiusbymember(c, argv):
    _search(c, argv, MEMBER)


def cmd_georadius_ro(c, argv):
    _search(c, argv, COORDS | NOSTORE)


def cmd_georadiusbymember_ro(c, argv):
    _search(c, argv, MEMBER | NOSTORE)


def cmd_geosearch(c, argv):
    _search(c, argv, SEARCH)


def cmd_geosearchstore(c, argv):
    _search(c, argv, SEARCH | SEARCHSTORE)


class Query:
    """What a search asks for: its shape and georadiusGeneric's options."""

    def __init__(self):
        self.shape = geohash.Shape()
        self.with_dist = self.with_hash = self.with_coord = False
        self.order = None
        self.count = 0              # 0: all
        self.any = False            # stop once count points are found
        self.store = None           # the key to store the result in
        self.store_dist = False
        self.from_member = self.from_lonlat = self.by_radius = self.by_box = False


# The options that stand alone, and the Query field each one sets.
SWITCHES = {b"withdist": "with_dist", b"withhash": "with_hash", b"withcoord": "with_coord", b"any": "any"}


def _parse(argv, flags, zset):
    """georadiusGeneric's reading of the arguments, each error where Redis meets it. A
    missing set's member search reads its options only (its reply depends on STORE)."""
    query = Query()
    shape = query.shape
    if flags & COORDS:
        at = 6
        shape.longitude, shape.latitude = _longitude_latitude(argv, 2)
        shape.radius, shape.conversion = _radius(argv, 4)
    elif flags & MEMBER:
        at = 5
        if zset is not None:
            shape.longitude, shape.latitude = _position(zset, argv[2])
            shape.radius, shape.conversion = _radius(argv, 3)
    else:
        at = 3 if flags & SEARCHSTORE else 2
        query.store = argv[1] if flags & SEARCHSTORE else None
    may_store = not flags & (NOSTORE | SEARCH)
    while at < len(argv):
        word, more = c_word(argv[at]), len(argv) - at - 1
        if word in SWITCHES:
            setattr(query, SWITCHES[word], True)
        elif word in (b"asc", b"desc"):
            query.order = ASC if word == b"asc" else DESC
        elif word == b"count" and more >= 1:
            query.count = parse_int(argv[at + 1])
            if query.count <= 0:
                raise CommandError("ERR COUNT must be > 0")
            at += 1
        elif word in (b"store", b"storedist") and more >= 1 and may_store:
            query.store, query.store_dist = argv[at + 1], word == b"storedist"
            at += 1
        elif word == b"storedist" and flags & SEARCHSTORE:
            query.store_dist = True
        elif word == b"frommember" and more >= 1 and flags & SEARCH and not query.from_lonlat:
            if zset is not None:
                shape.longitude, shape.latitude = _position(zset, argv[at + 1])
            query.from_member = True
            at += 1
        elif word == b"fromlonlat" and more >= 2 and flags & SEARCH and not query.from_member:
            shape.longitude, shape.latitude = _longitude_latitude(argv, at + 1)
            query.from_lonlat = True
            at += 2
        elif word == b"byradius" and more >= 2 and flags & SEARCH and not query.by_box:
            shape.radius, shape.conversion = _radius(argv, at + 1)
            query.by_radius = True
            at += 2
        elif word == b"bybox" and more >= 3 and flags & SEARCH and not query.by_radius:
            shape.width, shape.height, shape.conversion = _box(argv, at + 1)
            shape.radius = None
            query.by_box = True
            at += 3
        else:
            raise CommandError(errors.SYNTAX)
        at += 1
    return query


def _check(argv, flags, query):
    """The options that do not go together, in Redis's order."""
    if query.store is not None and (query.with_dist or query.with_hash or query.with_coord):
        command = "GEOSEARCHSTORE" if flags & SEARCHSTORE else "STORE option in GEORADIUS"
        raise CommandError(f"ERR {command} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    if flags & SEARCH and not (query.from_member or query.from_lonlat):
        raise CommandError("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for "
                           + errors.c_string(argv[0]))
    if flags & SEARCH and not (query.by_radius or query.by_box):
        raise CommandError("ERR exactly one of BYRADIUS and BYBOX can be specified for "
                           + errors.c_string(argv[0]))
    if query.any and not query.count:
        raise CommandError("ERR the ANY argument requires COUNT argument")


def _search(c, argv, flags):
    """georadiusGeneric."""
    zset = c.collection(argv[2 if flags & SEARCHSTORE else 1], TYPE_ZSET)
    query = _parse(argv, flags, zset)
    _check(argv, flags, query)
    points = [] if zset is None else _points_within(zset, query.shape, query.count if query.any else 0)
    if not points and query.store is None:
        c.reply.array(0)
        return
    kept = min(len(points), query.count) if query.count else len(points)
    # COUNT keeps the nearest, so it sorts (ANY only stops the search early).
    order = query.order or (ASC if query.count and not query.any else None)
    if order is not None:
        _sort(points, order, kept)
    del points[kept:]
    if query.store is None:
        _reply_points(c, points, query)
    else:
        _store_points(c, points, query, b"geosearchstore" if flags & SEARCH else b"georadiusstore")


def _points_within(zset, shape, limit):
    """membersOfAllNeighbors: the points of each search cell inside the shape, in the
    cells' order and each cell's score order; with a limit (ANY) no more than it."""
    points = []
    cells = shape.cells()
    last = 0
    for index, cell in enumerate(cells):
        # Neighbours repeat when huge cells wrap around the globe; Redis skips a cell
        # equal to the one it searched last (the centre is never compared).
        if cell.zeroed or (last and cell == cells[last]):
            continue
        if limit and len(points) >= limit:
            break
        low, high = geohash.score_range(cell)
        _points_in_range(zset, low, high, shape, points, limit)
        last = index
    return points


def _points_in_range(zset, low, high, shape, points, limit):
    """geoGetPointsInRange: the members scored in [low, high) inside the shape, appended."""
    at = zset.zset_seek_score(low)
    while True:
        chunk = zset.zset_range(at, at + 64)
        if not chunk:
            return
        for member, score in chunk:
            if not score < high:
                return
            longitude, latitude = geohash.decode(score)
            dist = shape.distance_if_within(longitude, latitude)
            if dist is not None:
                points.append(Point(member, score, longitude, latitude, dist))
            if limit and len(points) >= limit:
                return
        at += len(chunk)


def _reply_points(c, points, query):
    options = query.with_dist + query.with_hash + query.with_coord
    c.reply.array(len(points))
    for point in points:
        if options:
            c.reply.array(options + 1)
        c.reply.bulk(point.member)
        if query.with_dist:
            _reply_distance(c, point.dist / query.shape.conversion)
        if query.with_hash:
            c.reply.integer(int(point.score))
        if query.with_coord:
            c.reply.array(2)
            _reply_coordinate(c, point.longitude)
            _reply_coordinate(c, point.latitude)


def _store_points(c, points, query, event):
    """Redis's setKey of the set made of the points (whatever the key held replaced, its
    TTL with it: zsets.store), or dbDelete of the key when none was found."""
    items = [(point.member, point.dist / query.shape.conversion if query.store_dist else point.score)
             for point in points]
    store(c, query.store, items, fitting_encoding(c, items), event)


# --- sorting as Redis sorts ----------------------------------------------------------

def _sort(points, order, kept):
    """Redis sorts every point with qsort (glibc's: a stable merge sort) when it keeps
    them all, else only the first `kept` with pqsort, which is not stable: points at the
    same distance come out in the order its partitioning leaves them."""
    if kept == len(points):
        points.sort(key=lambda point: point.dist, reverse=order == DESC)
    else:
        sign = 1 if order == ASC else -1
        pqsort(points, lambda a, b: sign * _compare(a.dist, b.dist), 0, kept - 1)


def _compare(a, b):
    """sort_gp_asc."""
    return 1 if a > b else 0 if a == b else -1
