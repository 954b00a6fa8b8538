"""Redis 7.0's geohash arithmetic (geohash.c, geohash_helper.c), for the geo commands.

A geo set is a sorted set whose score is a point's 52-bit geohash: 26 bits of longitude
and 26 of latitude, interleaved (latitude in the even bits). Clients see only what comes
out of this arithmetic (the members a search finds, their order, the coordinates and
distances printed from the decoded cell's centre), so every step is C's own: Python's
floats are IEEE doubles rounded as C's, `math` calls the same libm, and integers are
masked where C's uint64_t or uint32_t would wrap. Where libm answers NaN (cos of an
infinite radius's bounding box, asin of a sum rounded past 1) Python raises; `_cos` and
`_asin` answer as C does.
"""
import math
from dataclasses import dataclass

LONG_MIN, LONG_MAX = -180.0, 180.0
LAT_MIN, LAT_MAX = -85.05112878, 85.05112878    # Web Mercator's limits (EPSG:3857)
STEP_MAX = 26                                   # bits per coordinate of a stored point
EARTH_RADIUS_IN_METERS = 6372797.560856
MERCATOR_MAX = 20037726.37
D_R = math.pi / 180.0
# Units as GEODIST and the searches name them (strcasecmp), in meters.
UNITS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}

_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1
_EVEN = 0x5555555555555555
_ODD = 0xAAAAAAAAAAAAAAAA
_SPREAD = ((16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
           (2, 0x3333333333333333), (1, _EVEN))
_SQUEEZE = ((1, 0x3333333333333333), (2, 0x0F0F0F0F0F0F0F0F), (4, 0x00FF00FF00FF00FF),
            (8, 0x0000FFFF0000FFFF), (16, 0x00000000FFFFFFFF))
# What a NaN from x86's SSE arithmetic is (0/0, inf - inf): the sign bit set, "-nan".
_DEFAULT_NAN = -math.nan
_GEOHASH_ALPHABET = b"0123456789bcdefghjkmnpqrstuvwxyz"


def _cos(x):
    return math.cos(x) if math.isfinite(x) or math.isnan(x) else _DEFAULT_NAN


def _asin(x):
    return math.asin(x) if not x > 1.0 else _DEFAULT_NAN


@dataclass(frozen=True)
class Cell:
    """A GeoHashBits: the interleaved bits of a cell `step` bits per coordinate deep."""
    bits: int
    step: int

    @property
    def zeroed(self):
        """HASHISZERO: a neighbour the search left out (GZERO)."""
        return not self.bits and not self.step


_NONE = Cell(0, 0)


def _interleave(lat_bits, long_bits):
    """interleave64: latitude's bits to the even positions, longitude's to the odd."""
    x, y = lat_bits, long_bits
    for shift, mask in _SPREAD:
        x = (x | (x << shift)) & mask
        y = (y | (y << shift)) & mask
    return x | (y << 1)


def _deinterleave(bits):
    """deinterleave64: (latitude's bits, longitude's bits), each the uint32_t C reads."""
    x, y = bits & _EVEN, (bits >> 1) & _EVEN
    for shift, mask in _SQUEEZE:
        x = (x | (x >> shift)) & mask
        y = (y | (y >> shift)) & mask
    return x & _U32, y & _U32


def encode(longitude, latitude, step, long_range=(LONG_MIN, LONG_MAX), lat_range=(LAT_MIN, LAT_MAX)):
    """geohashEncode: the cell of a point at `step` bits, None outside the ranges."""
    if not (LONG_MIN <= longitude <= LONG_MAX and LAT_MIN <= latitude <= LAT_MAX):
        return None
    if not (lat_range[0] <= latitude <= lat_range[1] and long_range[0] <= longitude <= long_range[1]):
        return None
    lat_offset = (latitude - lat_range[0]) / (lat_range[1] - lat_range[0])
    long_offset = (longitude - long_range[0]) / (long_range[1] - long_range[0])
    lat_offset *= float(1 << step)
    long_offset *= float(1 << step)
    return Cell(_interleave(int(lat_offset), int(long_offset)), step)


def align52(cell):
    """geohashAlign52Bits: the cell's bits as a 52-bit score prefix."""
    return (cell.bits << (52 - cell.step * 2)) & _U64


def score_of(longitude, latitude):
    """The score GEOADD stores for a point (already checked to be in range)."""
    return align52(encode(longitude, latitude, STEP_MAX))


@dataclass(frozen=True)
class Area:
    long_min: float
    long_max: float
    lat_min: float
    lat_max: float


def area_of(cell):
    """geohashDecode over the WGS84 ranges: the cell's corners."""
    ilat, ilong = _deinterleave(cell.bits)
    lat_scale = LAT_MAX - LAT_MIN
    long_scale = LONG_MAX - LONG_MIN
    cells = float(1 << cell.step)
    return Area(LONG_MIN + (float(ilong) / cells) * long_scale,
                LONG_MIN + (float((ilong + 1) & _U32) / cells) * long_scale,
                LAT_MIN + (float(ilat) / cells) * lat_scale,
                LAT_MIN + (float((ilat + 1) & _U32) / cells) * lat_scale)


def _c_uint64(score):
    """(uint64_t) of a double as gcc compiles it for x86-64: truncated, a negative value
    wrapped, one out of range (or NaN) the "integer indefinite" result."""
    if math.isnan(score) or score < -(2.0 ** 63):
        return 1 << 63
    if score < 2.0 ** 63:
        return int(score) & _U64
    if score < 2.0 ** 64:
        return int(score)
    return 0


def decode(score):
    """decodeGeohash: (longitude, latitude) of the centre of a stored point's cell, clamped
    to the ranges."""
    area = area_of(Cell(_c_uint64(score), STEP_MAX))
    longitude = min(max((area.long_min + area.long_max) / 2, LONG_MIN), LONG_MAX)
    latitude = min(max((area.lat_min + area.lat_max) / 2, LAT_MIN), LAT_MAX)
    return longitude, latitude


def geohash_string(score):
    """GEOHASH's 11 characters: the point re-encoded over the standard ranges
    ([-180, 180] x [-90, 90]); the 11th character stands for bits Redis does not have."""
    longitude, latitude = decode(score)
    bits = encode(longitude, latitude, STEP_MAX, lat_range=(-90.0, 90.0)).bits
    return bytes(_GEOHASH_ALPHABET[(bits >> (52 - (i + 1) * 5)) & 0x1F] for i in range(10)) + b"0"


def distance(lon1, lat1, lon2, lat2):
    """geohashGetDistance: the haversine great-circle distance in meters. Along a meridian
    (the sine of half the longitudes' difference is 0) Redis takes the latitudes'
    difference instead, which the haversine rounds differently in the last bit."""
    v = math.sin((lon2 * D_R - lon1 * D_R) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r = lat1 * D_R
    lat2r = lat2 * D_R
    u = math.sin((lat2r - lat1r) / 2)
    return 2.0 * EARTH_RADIUS_IN_METERS * _asin(math.sqrt(u * u + math.cos(lat1r) * math.cos(lat2r) * v * v))


def lat_distance(lat1, lat2):
    """geohashGetLatDistance: the distance in meters between two latitudes."""
    return EARTH_RADIUS_IN_METERS * abs(lat2 * D_R - lat1 * D_R)


@dataclass
class Shape:
    """A GeoShape: the centre, and a radius or a box (width, height), in `conversion` units."""
    longitude: float = 0.0
    latitude: float = 0.0
    conversion: float = 1.0
    radius: float = None         # None for a box
    width: float = 0.0
    height: float = 0.0

    def distance_if_within(self, longitude, latitude):
        """The distance in meters of a point inside the shape, None outside it
        (geohashGetDistanceIfInRadiusWGS84, geohashGetDistanceIfInRectangle)."""
        if self.radius is not None:
            found = distance(self.longitude, self.latitude, longitude, latitude)
            return None if found > self.radius * self.conversion else found
        width, height = self.width * self.conversion, self.height * self.conversion
        if (lat_distance(latitude, self.latitude) > height / 2
                or distance(longitude, latitude, self.longitude, latitude) > width / 2):
            return None
        return distance(self.longitude, self.latitude, longitude, latitude)

    def _bounding_box(self):
        """geohashBoundingBox: (min long, min lat, max long, max lat), the box widened on
        the side of the hemisphere's pole."""
        circle = self.radius is not None
        height = self.conversion * (self.radius if circle else self.height / 2)
        width = self.conversion * (self.radius if circle else self.width / 2)
        lat_delta = (height / EARTH_RADIUS_IN_METERS) / D_R
        long_delta_top = (width / EARTH_RADIUS_IN_METERS / _cos((self.latitude + lat_delta) * D_R)) / D_R
        long_delta_bottom = (width / EARTH_RADIUS_IN_METERS / _cos((self.latitude - lat_delta) * D_R)) / D_R
        long_delta = long_delta_bottom if self.latitude < 0 else long_delta_top
        return (self.longitude - long_delta, self.latitude - lat_delta,
                self.longitude + long_delta, self.latitude + lat_delta)

    def _radius_meters(self):
        if self.radius is not None:
            return self.radius * self.conversion
        half_width, half_height = self.width / 2, self.height / 2
        return math.sqrt(half_width * half_width + half_height * half_height) * self.conversion

    def cells(self):
        """geohashCalculateAreasByShapeWGS84: the centre's cell and its eight neighbours
        (north, south, east, west, north-east, north-west, south-east, south-west), at a
        depth where they cover the shape; those it proves useless are zeroed."""
        min_long, min_lat, max_long, max_lat = self._bounding_box()
        step = estimate_step(self._radius_meters(), self.latitude)
        centre = encode(self.longitude, self.latitude, step)
        neighbours = _neighbours(centre)
        north, south, east, west = (area_of(cell) for cell in neighbours[:4])
        if step > 1 and (north.lat_max < max_lat or south.lat_min > min_lat
                         or east.long_max < max_long or west.long_min > min_long):
            step -= 1       # a neighbour does not reach the shape's edge: one level coarser
            centre = encode(self.longitude, self.latitude, step)
            neighbours = _neighbours(centre)
        area = area_of(centre)
        n, s, e, w, ne, nw, se, sw = neighbours
        if step >= 2:
            if area.lat_min < min_lat:
                s = sw = se = _NONE
            if area.lat_max > max_lat:
                n = ne = nw = _NONE
            if area.long_min < min_long:
                w = sw = nw = _NONE
            if area.long_max > max_long:
                e = se = ne = _NONE
        return [centre, n, s, e, w, ne, nw, se, sw]


def estimate_step(range_meters, latitude):
    """geohashEstimateStepsByRadius: how deep the search cells are."""
    if range_meters == 0:
        return STEP_MAX
    step = 1
    while range_meters < MERCATOR_MAX:
        range_meters *= 2
        step += 1
    step -= 2
    if latitude > 66 or latitude < -66:     # meridians closer: wider cells
        step -= 1
        if latitude > 80 or latitude < -80:
            step -= 1
    return min(max(step, 1), STEP_MAX)


def _move_x(cell, d):
    x, y = cell.bits & _ODD, cell.bits & _EVEN
    zz = _EVEN >> (64 - cell.step * 2)
    x = (x + (zz + 1)) if d > 0 else ((x | zz) - (zz + 1))
    x &= _ODD >> (64 - cell.step * 2)
    return Cell((x | y) & _U64, cell.step)


def _move_y(cell, d):
    x, y = cell.bits & _ODD, cell.bits & _EVEN
    zz = _ODD >> (64 - cell.step * 2)
    y = (y + (zz + 1)) if d > 0 else ((y | zz) - (zz + 1))
    y &= _EVEN >> (64 - cell.step * 2)
    return Cell((x | y) & _U64, cell.step)


def _neighbours(cell):
    """geohashNeighbors: north, south, east, west, north-east, north-west, south-east,
    south-west (wrapping around at the grid's edges)."""
    east, west = _move_x(cell, 1), _move_x(cell, -1)
    return [_move_y(cell, 1), _move_y(cell, -1), east, west,
            _move_y(east, 1), _move_y(west, 1), _move_y(east, -1), _move_y(west, -1)]


def score_range(cell):
    """scoresOfGeoHashBox: the scores [min, max) of the points inside a cell."""
    return float(align52(cell)), float(align52(Cell((cell.bits + 1) & _U64, cell.step)))
