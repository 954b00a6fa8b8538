"""Geo commands, replayed on redis-server and cxlredis; replies must match byte for byte
(RESP2 and RESP3): GEOADD's options, coordinates as Redis prints them from the decoded
geohash, distances, GEOHASH strings, every search variant and option error in Redis's
order, poles, the antimeridian and huge radii, COUNT (Redis's pqsort order of points at
the same distance) and ANY, STORE/STOREDIST into listpack and skiplist sets, scores no
GEOADD writes, keyspace events, and generated sets of random points and searches.
"""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import raw_connection
from diff_harness import events_until_sentinel, flushall, keyspace_listener, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

LAT_MAX = "85.05112878"
SICILY = ("GEOADD", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania",
          "12.758489", "38.788135", "edge1", "17.241510", "38.788135", "edge2")

SEQUENCES = {
    "geoadd options": [
        SICILY,
        ("GEOADD", "Sicily", "13.361389", "38.115556", "Palermo"),
        ("GEOADD", "Sicily", "CH", "13.4", "38.1", "Palermo", "1", "1", "new"),
        ("GEOADD", "Sicily", "XX", "CH", "13.5", "38.2", "Palermo", "2", "2", "other"),
        ("GEOADD", "Sicily", "nx", "ch", "13.6", "38.3", "Palermo", "3", "3", "third"),
        ("GEOADD", "Sicily", "ch", "ch", "4", "4", "dup", "5", "5", "dup"),
        ("GEOPOS", "Sicily", "Palermo", "new", "other", "third", "dup"),
        ("GEOADD", "Sicily", "NX", "XX", "1", "1", "x"),
        ("GEOADD", "Sicily", "CH", "CH", "CH"),
        ("GEOADD", "Sicily", "1", "1", "a", "2"),
        ("GEOADD", "Sicily", "GT", "1", "1", "a"),
        ("GEOADD", "Sicily", "1", "1"),
        ("GEOADD", "Sicily", "200", "100", "x"),
        ("GEOADD", "Sicily", "1", "2", "ok", "-180.0000001", "0", "x"),
        ("GEOADD", "Sicily", "0", LAT_MAX + "1", "x"),
        ("GEOADD", "Sicily", "inf", "0", "x"),
        ("GEOADD", "Sicily", "1e300", "-1e300", "x"),
        ("GEOADD", "Sicily", "x", "0", "x"),
        ("GEOADD", "Sicily", "0", "nan", "x"),
        ("GEOADD", "Sicily", " 1", "0", "x"),
        ("GEOADD", "Sicily", "0x10", "0x1p3", "hex"),
        ("GEOPOS", "Sicily", "ok", "x", "hex"),
        ("GEOADD", "new", "XX", "1", "1", "a"),
        ("EXISTS", "new"),
        ("ZCARD", "Sicily"),
    ],
    "geopos geodist geohash": [
        SICILY,
        ("GEOPOS", "Sicily", "Palermo", "nosuch", "Catania"),
        ("GEOPOS", "missing", "a", "b"),
        ("GEODIST", "Sicily", "Palermo", "Catania"),
        ("GEODIST", "Sicily", "Palermo", "Catania", "km"),
        ("GEODIST", "Sicily", "Palermo", "Catania", "MI"),
        ("GEODIST", "Sicily", "Palermo", "Catania", "Ft"),
        ("GEODIST", "Sicily", "Palermo", "Catania", "m"),
        ("GEODIST", "Sicily", "Palermo", "Palermo"),
        ("GEODIST", "Sicily", "Palermo", "nosuch"),
        ("GEODIST", "missing", "a", "b"),
        ("GEODIST", "Sicily", "Palermo", "Catania", "furlong"),
        ("GEODIST", "missing", "a", "b", "furlong"),
        ("GEODIST", "Sicily", "Palermo", "Catania", "km", "extra"),
        ("GEOHASH", "Sicily", "Palermo", "Catania", "edge1", "edge2", "nosuch"),
        ("GEOHASH", "missing", "a"),
    ],
    "poles, antimeridian and huge radii": [
        ("GEOADD", "w", "180", LAT_MAX, "ne", "-180", "-" + LAT_MAX, "sw", "180", "-" + LAT_MAX, "se",
         "-180", LAT_MAX, "nw", "179.9999", "0", "east", "-179.9999", "0", "west", "0", "0", "origin",
         "0.000001", "-0.000001", "near", "-0", "-0", "negzero"),
        ("GEOPOS", "w", "ne", "sw", "se", "nw", "east", "west", "origin", "near", "negzero"),
        ("GEOHASH", "w", "ne", "sw", "se", "nw", "east", "west", "origin", "near", "negzero"),
        ("GEODIST", "w", "east", "west", "km"),
        ("GEODIST", "w", "ne", "sw", "km"),
        ("GEODIST", "w", "origin", "east"),
        ("GEOSEARCH", "w", "FROMMEMBER", "east", "BYRADIUS", "50", "km", "WITHDIST", "WITHCOORD"),
        ("GEOSEARCH", "w", "FROMLONLAT", "180", "0", "BYBOX", "100", "100", "km", "WITHDIST"),
        ("GEOSEARCH", "w", "FROMLONLAT", "-180", "0", "BYRADIUS", "30", "km", "WITHDIST", "WITHHASH"),
        ("GEOSEARCH", "w", "FROMMEMBER", "ne", "BYRADIUS", "500", "km", "WITHDIST", "WITHCOORD"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", LAT_MAX, "BYRADIUS", "20000", "km", "ASC", "WITHDIST"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "-85", "BYBOX", "40000", "40000", "km", "DESC"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "0", "BYRADIUS", "inf", "m", "WITHDIST"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "0", "BYRADIUS", "1e308", "km", "COUNT", "3"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "0", "BYBOX", "inf", "inf", "m", "COUNT", "2", "DESC"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "0", "BYRADIUS", "0", "m", "WITHDIST"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "0", "BYRADIUS", "-0", "m"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "0", "BYBOX", "0", "0", "m"),
        ("GEOSEARCH", "w", "FROMLONLAT", "0", "0", "BYRADIUS", "1e-320", "m"),
        ("GEOSEARCH", "w", "FROMMEMBER", "origin", "BYRADIUS", "0.2", "m", "WITHDIST", "WITHCOORD"),
        ("GEORADIUS", "w", "90", "0", "10008", "km", "WITHDIST"),
        ("GEORADIUS", "w", "90", "0", "10009", "km", "WITHDIST"),
    ],
    "along a meridian (Redis takes the latitudes' difference there)": [
        ("GEOADD", "m", "0", LAT_MAX, "top", "0", "1", "one", "0", "-33.3", "south", "0", "0", "origin",
         "13.361389", "38.115556", "palermo", "13.361389", "-60.5", "below", "-180", "10", "dateline"),
        ("GEODIST", "m", "top", "one"),
        ("GEODIST", "m", "one", "south", "km"),
        ("GEODIST", "m", "palermo", "below", "mi"),
        ("GEODIST", "m", "top", "palermo"),
        ("GEOSEARCH", "m", "FROMMEMBER", "top", "BYRADIUS", "20000", "km", "ASC", "WITHDIST"),
        ("GEOSEARCH", "m", "FROMLONLAT", "0", "1", "BYBOX", "30000", "20000", "km", "ASC", "WITHDIST"),
        ("GEOSEARCH", "m", "FROMLONLAT", "13.361389", "0", "BYBOX", "100", "10700", "km", "WITHDIST"),
        ("GEOSEARCHSTORE", "d", "m", "FROMMEMBER", "top", "BYRADIUS", "20000", "km", "STOREDIST"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("GEORADIUSBYMEMBER", "m", "south", "15000", "km", "WITHDIST", "ASC"),
    ],
    "search options and their errors": [
        SICILY,
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC",
         "WITHCOORD", "WITHDIST", "WITHHASH"),
        ("geosearch", "Sicily", "frommember", "Palermo", "bybox", "400", "400", "km", "desc", "withdist"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "COUNT", "1"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "COUNT", "1", "ANY"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ANY", "COUNT", "2", "DESC"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMMEMBER", "Catania", "BYRADIUS", "1", "km",
         "BYRADIUS", "300", "km", "WITHDIST"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "FROMLONLAT", "15", "37", "BYBOX", "1", "1", "m",
         "BYBOX", "500", "500", "km", "ASC"),
        ("GEOSEARCH", "Sicily", "BYRADIUS", "200", "km"),
        ("GeoSearch", "Sicily", "FROMMEMBER", "Palermo"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "ANY"),
        ("GEOSEARCH", "Sicily", "ANY", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "COUNT", "0"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "COUNT", "-1"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "COUNT", "x"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "COUNT", "9223372036854775808"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "COUNT"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "STORE", "d"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "STOREDIST"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "BOGUS"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "x", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "-1", "x"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "furlong"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "x", "y", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "y", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "-1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "1", "parsec"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "1"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "1", "km", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "200", "1", "BYRADIUS", "x", "km"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "1", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "nosuch", "BYRADIUS", "x", "km"),
        ("GEOSEARCH", "missing", "FROMMEMBER", "nosuch", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "missing", "FROMMEMBER", "nosuch", "BYRADIUS", "x", "km"),
        ("GEOSEARCH", "missing", "FROMMEMBER", "nosuch"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km", "WITHDIST", "BOGUS"),
    ],
    "georadius and georadiusbymember": [
        SICILY,
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHCOORD", "WITHHASH", "ASC"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "KM", "COUNT", "2", "DESC", "WITHDIST"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1", "ANY"),
        ("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "WITHDIST"),
        ("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "d"),
        ("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STOREDIST", "d"),
        ("GEORADIUSBYMEMBER", "Sicily", "Palermo", "300", "km", "WITHDIST", "WITHCOORD"),
        ("GEORADIUSBYMEMBER_RO", "Sicily", "Catania", "100", "mi", "WITHHASH"),
        ("GEORADIUSBYMEMBER_RO", "Sicily", "Catania", "100", "mi", "STORE", "d"),
        ("GEORADIUSBYMEMBER", "Sicily", "nosuch", "x", "y"),
        ("GEORADIUSBYMEMBER", "Sicily", "Palermo", "x", "km"),
        ("GEORADIUSBYMEMBER", "Sicily", "Palermo", "1", "furlong"),
        ("GEORADIUSBYMEMBER", "missing", "x", "y", "z"),
        ("GEORADIUSBYMEMBER", "missing", "x", "y", "z", "BOGUS"),
        ("GEORADIUSBYMEMBER", "missing", "x", "y", "z", "WITHDIST", "STORE", "d"),
        ("GEORADIUS", "Sicily", "x", "37", "200", "km"),
        ("GEORADIUS", "Sicily", "15", "37", "x", "km"),
        ("GEORADIUS", "Sicily", "15", "37", "-1", "km"),
        ("GEORADIUS", "Sicily", "15", "37", "1", "x"),
        ("GEORADIUS", "Sicily", "200", "37", "-1", "x"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d", "WITHDIST"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "FROMMEMBER", "Palermo"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "ANY"),
        ("GEORADIUS", "missing", "15", "37", "200", "km"),
        ("GEORADIUS", "missing", "15", "37", "200", "km", "STORE", "d"),
    ],
    "store and storedist": [
        SICILY,
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("OBJECT", "ENCODING", "d"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "d"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "a", "STOREDIST", "b"),
        ("EXISTS", "a", "b"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "a", "STORE", "b", "COUNT", "1"),
        ("ZRANGE", "b", "0", "-1", "WITHSCORES"),
        ("GEORADIUSBYMEMBER", "Sicily", "Palermo", "1000", "km", "STOREDIST", "e", "DESC", "COUNT", "3"),
        ("ZRANGE", "e", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "f", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "STOREDIST"),
        ("ZRANGE", "f", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "f", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km",
         "STOREDIST", "STOREDIST", "COUNT", "2", "ANY"),
        ("ZRANGE", "f", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "f", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m"),
        ("EXISTS", "f"),
        ("GEOSEARCHSTORE", "f", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m", "WITHDIST"),
        ("GEOSEARCHSTORE", "f", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m", "STORE", "g"),
        ("GEOSEARCHSTORE", "d", "missing", "FROMMEMBER", "x", "BYRADIUS", "1", "m"),
        ("EXISTS", "d"),
        ("GEOSEARCHSTORE", "d", "missing", "FROMMEMBER", "x"),
        # what the destination held goes, its TTL with it; a set may be its own destination
        ("SET", "s", "v", "EX", "100"),
        ("GEOSEARCHSTORE", "s", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "300", "km"),
        ("TYPE", "s"),
        ("TTL", "s"),
        ("ZADD", "z", "1", "old"),
        ("EXPIRE", "z", "100"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "z"),
        ("TTL", "z"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "Sicily", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "100", "km", "STOREDIST"),
        ("ZRANGE", "Sicily", "0", "-1", "WITHSCORES"),
    ],
    "listpack and skiplist destinations": [
        ("GEOADD", "g", *[x for i in range(130) for x in ("13.%03d" % i, "38.1", "p%03d" % i)]),
        ("OBJECT", "ENCODING", "g"),
        ("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "13", "38.1", "BYRADIUS", "200", "km"),
        ("OBJECT", "ENCODING", "d"),
        ("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "13", "38.1", "BYRADIUS", "200", "km", "COUNT", "128"),
        ("OBJECT", "ENCODING", "d"),
        ("GEOADD", "long", "1", "1", "m" * 64, "1", "1", "m" * 65),
        ("OBJECT", "ENCODING", "long"),
        ("GEOSEARCHSTORE", "d", "long", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "COUNT", "1", "ASC"),
        ("OBJECT", "ENCODING", "d"),
        ("GEOSEARCHSTORE", "d", "long", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"),
        ("OBJECT", "ENCODING", "d"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "2"),
        ("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "13", "38.1", "BYRADIUS", "200", "km", "COUNT", "2"),
        ("OBJECT", "ENCODING", "d"),
        ("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "13", "38.1", "BYRADIUS", "200", "km", "COUNT", "3"),
        ("OBJECT", "ENCODING", "d"),
        ("GEOADD", "small", "1", "1", "a", "2", "2", "b", "3", "3", "c"),
        ("OBJECT", "ENCODING", "small"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "0"),
        ("GEOADD", "none", "1", "1", "a"),
        ("OBJECT", "ENCODING", "none"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "128"),
        ("CONFIG", "SET", "zset-max-listpack-value", "1"),
        ("GEOADD", "short", "1", "1", "a", "2", "2", "bb"),
        ("OBJECT", "ENCODING", "short"),
        ("CONFIG", "SET", "zset-max-listpack-value", "64"),
    ],
    "count keeps the nearest, ties in Redis's order": [
        ("GEOADD", "t", *[x for i in range(60) for x in (("11.0", "40.7") if i % 3 else ("11.0%02d" % i, "40.7"))
                          + ("m%02d" % i,)]),
        *[("GEOSEARCH", "t", "FROMLONLAT", "10.9", "40.7", "BYRADIUS", "50", "km", "COUNT", str(n), order)
          for n in (1, 2, 3, 7, 8, 20, 41, 59) for order in ("ASC", "DESC")],
        ("GEOSEARCH", "t", "FROMLONLAT", "10.9", "40.7", "BYRADIUS", "50", "km", "ASC"),
        ("GEOSEARCH", "t", "FROMLONLAT", "10.9", "40.7", "BYRADIUS", "50", "km", "DESC"),
        ("GEOSEARCH", "t", "FROMLONLAT", "10.9", "40.7", "BYRADIUS", "50", "km", "COUNT", "5", "ANY"),
        ("GEORADIUS", "t", "10.9", "40.7", "50", "km", "COUNT", "4", "STORE", "d"),
        ("ZRANGE", "d", "0", "-1"),
    ],
    "scores GEOADD does not write": [
        ("ZADD", "z", "-1", "neg", "1.5", "frac", "9007199254740993", "big", "1e30", "huge", "inf", "pinf",
         "-inf", "ninf", "0", "zero", "4503599627370496", "b52", "18014398509481984", "b54"),
        ("GEOPOS", "z", "neg", "frac", "big", "huge", "pinf", "ninf", "zero", "b52", "b54"),
        ("GEOHASH", "z", "neg", "frac", "big", "huge", "pinf", "ninf", "zero", "b52", "b54"),
        ("GEODIST", "z", "neg", "huge"),
        ("GEODIST", "z", "pinf", "ninf", "mi"),
        ("GEOSEARCH", "z", "FROMMEMBER", "zero", "BYRADIUS", "20000", "km", "WITHHASH", "WITHCOORD"),
        ("GEOSEARCH", "z", "FROMMEMBER", "b54", "BYBOX", "1", "1", "km", "WITHHASH", "WITHDIST"),
        ("GEOSEARCH", "z", "FROMLONLAT", "180", LAT_MAX, "BYRADIUS", "10", "km", "WITHHASH", "WITHCOORD"),
    ],
    "wrong types": [
        ("SET", "str", "v"),
        ("GEOADD", "str", "1", "1", "a"),
        ("GEOADD", "str", "200", "1", "a"),
        ("GEOPOS", "str", "a"),
        ("GEOHASH", "str", "a"),
        ("GEODIST", "str", "a", "b"),
        ("GEODIST", "str", "a", "b", "furlong"),
        ("GEOSEARCH", "str", "BOGUS"),
        ("GEOSEARCHSTORE", "d", "str", "FROMMEMBER", "a", "BYRADIUS", "1", "km"),
        ("GEORADIUS", "str", "200", "0", "1", "km"),
        ("GEORADIUSBYMEMBER_RO", "str", "a", "1", "km"),
        ("RPUSH", "list", "a"),
        ("GEOSEARCHSTORE", "list", "missing", "FROMMEMBER", "a", "BYRADIUS", "1", "km"),
        ("EXISTS", "list"),
    ],
}


@pytest.fixture
def listpack_limits_restored(redis_oracle, cxl):
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            conn.request("CONFIG", "SET", "zset-max-listpack-entries", "128", "zset-max-listpack-value", "64")


@pytest.mark.usefixtures("listpack_limits_restored")
@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_geo_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol=protocol, name=name)


# ---------------------------------------------------------------- keyspace events

EVENT_STEPS = [
    SICILY, ("GEOADD", "Sicily", "13.361389", "38.115556", "Palermo"), ("GEOADD", "Sicily", "XX", "1", "1", "x"),
    ("GEOADD", "new", "XX", "1", "1", "x"), ("GEOADD", "Sicily", "CH", "1", "1", "Palermo"),
    ("GEOPOS", "missing", "a"), ("GEODIST", "missing", "a", "b"), ("GEOHASH", "Sicily", "a"),
    ("GEOSEARCH", "missing", "FROMMEMBER", "a", "BYRADIUS", "1", "km"),
    ("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
    ("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST"),
    ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d"),
    ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "e"),
    ("GEORADIUSBYMEMBER", "Sicily", "Catania", "1", "m", "STORE", "d"),
    ("GEORADIUS", "missing", "15", "37", "200", "km", "STORE", "e"),
    ("GEOSEARCHSTORE", "e", "missing", "FROMMEMBER", "a", "BYRADIUS", "1", "km"),
    ("SET", "s", "v"), ("GEOSEARCHSTORE", "s", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
    ("GEOSEARCHSTORE", "s", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m"),
]


def _replay_events(server):
    with raw_connection(server.port) as conn, keyspace_listener(server.port) as listener:
        conn.request("CONFIG", "SET", "notify-keyspace-events", "KEAnm")
        try:
            return [(" ".join(argv), conn.request(*argv), events_until_sentinel(conn, listener))
                    for argv in EVENT_STEPS]
        finally:
            conn.request("CONFIG", "SET", "notify-keyspace-events", "")


def test_keyspace_events_as_redis(redis_oracle, cxl):
    expected = _replay_events(redis_oracle)
    for want, have in zip(expected, _replay_events(cxl)):
        assert have == want


# ---------------------------------------------------------------- random points and searches

def _number(value):
    return repr(float(value))


# Places: the edges (the antimeridian, the poles' limits), a few spots points share (so
# distances tie), a small area, and anywhere.
EDGES = st.tuples(st.sampled_from([-180.0, 180.0, 0.0, 179.9999, -179.9999]),
                  st.sampled_from([85.05112878, -85.05112878, 0.0, 84.9]))
SPOTS = [(11.0, 40.7), (10.5, 40.6), (11.25, 41.5), (-73.98, 40.75)]
SHARED = st.sampled_from(SPOTS)
NEARBY = st.tuples(st.floats(10, 12).map(lambda x: round(x, 3)), st.floats(40, 42).map(lambda x: round(x, 3)))
ANYWHERE = st.tuples(st.floats(-180, 180), st.floats(-85.05112878, 85.05112878))
PLACES = st.one_of(EDGES, SHARED, NEARBY, ANYWHERE)
UNITS = st.sampled_from(["m", "km", "ft", "mi", "KM"])
SIZES = st.sampled_from([0, 1, 100, 5000, 1e5, 1e6, 5e6, 2e7, 5e7])
SHAPES = st.one_of(
    st.tuples(st.just("BYRADIUS"), SIZES.map(_number), UNITS),
    st.tuples(st.just("BYBOX"), SIZES.map(_number), SIZES.map(_number), UNITS))
OPTIONS = st.tuples(
    st.sampled_from([(), ("COUNT", "1"), ("COUNT", "3"), ("COUNT", "10"), ("COUNT", "2", "ANY"), ("COUNT", "50")]),
    st.sampled_from([(), ("ASC",), ("DESC",)]))
WITHS = st.sets(st.sampled_from(["WITHDIST", "WITHHASH", "WITHCOORD"])).map(sorted)


@st.composite
def searches(draw, points):
    if draw(st.booleans()):
        centre = ("FROMMEMBER", f"m{draw(st.integers(0, points - 1))}")
    else:
        longitude, latitude = draw(PLACES)
        centre = ("FROMLONLAT", _number(longitude), _number(latitude))
    count, order = draw(OPTIONS)
    shape = draw(SHAPES)
    if draw(st.integers(0, 5)) == 0:
        return [("GEOSEARCHSTORE", "d", "k", *centre, *shape, *count, *order,
                 *draw(st.sampled_from([(), ("STOREDIST",)]))),
                ("ZRANGE", "d", "0", "-1", "WITHSCORES")]
    return [("GEOSEARCH", "k", *centre, *shape, *count, *order, *draw(WITHS))]


def _geoadd(places):
    """GEOADD k of the places, (longitude, latitude) each, named m0, m1, ..."""
    return ("GEOADD", "k", *[x for i, (longitude, latitude) in enumerate(places)
                             for x in (_number(longitude), _number(latitude), f"m{i}")])


@st.composite
def geo_sequences(draw):
    places = draw(st.lists(PLACES, min_size=1, max_size=80))
    steps = [_geoadd(places)]
    for found in draw(st.lists(searches(len(places)), min_size=1, max_size=12)):
        steps += found
    names = [f"m{i}" for i in range(len(places))]
    return steps + [("GEOPOS", "k", *names), ("GEOHASH", "k", *names)]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=geo_sequences(), protocol=st.sampled_from([2, 3]))
def test_random_points_and_searches(redis_oracle, cxl, steps, protocol):
    flushall(redis_oracle, cxl)
    run_sequence(redis_oracle, cxl, steps, protocol=protocol, name="random geo")


def test_a_world_of_points_and_searches(redis_oracle, cxl):
    """A fixed larger draw than the generated ones: 300 points (every fifth at one of a few
    spots), 100 GEORADIUS searches around them or anywhere."""
    rnd = random.Random(7)

    def place(i):
        if i % 5 == 0:
            return rnd.choice(SPOTS)
        if i % 2:
            return round(rnd.uniform(10, 12), 2), round(rnd.uniform(40, 42), 2)
        return rnd.uniform(-180, 180), rnd.uniform(-85.05112878, 85.05112878)

    places = [place(i) for i in range(300)]
    steps = [_geoadd(places)]
    for i in range(100):
        longitude, latitude = rnd.choice(places) if i % 2 else (rnd.uniform(-180, 180), rnd.uniform(-85, 85))
        steps.append(("GEORADIUS", "k", _number(longitude), _number(latitude),
                      rnd.choice(["10", "100", "1000", "5000", "20000"]), "km", "WITHDIST", "WITHHASH",
                      *rnd.choice([(), ("COUNT", "5"), ("COUNT", "40"), ("COUNT", "3", "ANY")]),
                      *rnd.choice([(), ("ASC",), ("DESC",)])))
    run_sequence(redis_oracle, cxl, steps, protocol=2, name="a world of points")
