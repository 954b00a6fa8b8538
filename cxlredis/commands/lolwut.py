"""LOLWUT [VERSION v] [arguments]: computer art and the version, as Redis 7.0 answers it.

Redis 7.0 draws nothing of its own (its LOLWUT prints "Redis ver. 7.0.15"); VERSION 5
draws Georg Nees's Schotter in Braille dots, VERSION 6 a skyline of 8-bit games in
terminal colours, each with its own arguments after the VERSION pair, in the sizes and
the captions Redis uses. The drawings are random, as Redis's.
"""
import math
import random
import struct

from .. import REDIS_COMPAT_VERSION
from .args import c_word, parse_int


def _f32(x):
    """x rounded to a C float, as Redis computes Schotter's geometry."""
    return struct.unpack("f", struct.pack("f", x))[0]


class _Canvas:
    def __init__(self, width, height, background):
        self.width, self.height = width, height
        self.pixels = bytearray([background]) * (width * height)

    def set(self, x, y, color):
        if 0 <= x < self.width and 0 <= y < self.height:
            self.pixels[x + y * self.width] = color

    def get(self, x, y):
        if 0 <= x < self.width and 0 <= y < self.height:
            return self.pixels[x + y * self.width]
        return 0

    def line(self, x1, y1, x2, y2, color):
        """Bresenham's line from (x1, y1) to (x2, y2)."""
        dx, dy = abs(x2 - x1), abs(y2 - y1)
        sx, sy = (1 if x1 < x2 else -1), (1 if y1 < y2 else -1)
        err = dx - dy
        while True:
            self.set(x1, y1, color)
            if x1 == x2 and y1 == y2:
                return
            e2 = err * 2
            if e2 > -dy:
                err -= dy
                x1 += sx
            if e2 < dx:
                err += dx
                y1 += sy

    def square(self, x, y, size, angle, color):
        """A square of side `size` centred at (x, y), turned by angle: its corners on the
        circle around it, a quarter turn apart."""
        radius = round(_f32(size / 1.4142135623))
        k = math.pi / 4 + angle
        corners = []
        for _ in range(4):
            corners.append((round(math.sin(k) * radius + x), round(math.cos(k) * radius + y)))
            k += math.pi / 2
        for j in range(4):
            self.line(*corners[j], *corners[(j + 1) % 4], color)


def _long_in(argv, at, default, low, high):
    """An optional long argument, clamped as Redis clamps LOLWUT's sizes."""
    value = parse_int(argv[at]) if len(argv) > at else default
    return min(max(value, low), high)


def _schotter(argv):
    """LOLWUT 5 [columns] [squares per row] [squares per column]."""
    cols = _long_in(argv, 1, 66, 1, 1000)
    per_row = _long_in(argv, 2, 8, 1, 200)
    per_col = _long_in(argv, 3, 12, 1, 200)
    width = cols * 2
    padding = 2 if width > 4 else 0
    side = _f32((width - padding * 2) / per_row)
    canvas = _Canvas(width, int(_f32(_f32(side * per_col) + padding * 2)), 0)
    for y in range(per_col):
        for x in range(per_row):
            sx = int(_f32(_f32(x * side) + side / 2 + padding))
            sy = int(_f32(_f32(y * side) + side / 2 + padding))
            angle = 0.0
            if y > 1:       # lower rows turn and shift more and more at random
                r1, r2, r3 = (random.random() / per_col * y * random.choice((1, -1)) for _ in range(3))
                angle = r1
                sx = int(sx + r2 * side / 3)
                sy = int(sy + r3 * side / 3)
            canvas.square(sx, sy, side, angle, 1)
    rows = []
    for y in range(0, canvas.height, 4):
        row = []
        for x in range(0, canvas.width, 2):
            dots = (canvas.get(x, y) | canvas.get(x, y + 1) << 1 | canvas.get(x, y + 2) << 2
                    | canvas.get(x + 1, y) << 3 | canvas.get(x + 1, y + 1) << 4 | canvas.get(x + 1, y + 2) << 5
                    | canvas.get(x, y + 3) << 6 | canvas.get(x + 1, y + 3) << 7)
            row.append(chr(0x2800 + dots))
        rows.append("".join(row) + ("\n" if y != canvas.height - 1 else ""))
    return ("".join(rows) + "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. "
            + REDIS_COMPAT_VERSION + "\n")


# the terminal's four grays, foreground and background alike, darkest first
_GRAYS = ("0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m")


def _skyscraper(canvas, xoff, width, height, windows, color):
    bottom = canvas.height - 1
    top = bottom - height + 1
    for y in range(bottom, top - 1, -1):
        for x in range(xoff, xoff + width):
            if y == top and (x <= xoff + 1 or x >= xoff + width - 2):
                continue        # the roof is four pixels narrower
            pixel = color
            if windows and xoff + 1 < x < xoff + width - 2 and top + 1 < y < bottom - 1:
                relx, rely = x - (xoff + 1), y - (top + 1)
                if relx // 2 % 2 and rely % 2:
                    # a window two pixels wide, of a gray other than the wall's
                    pixel = canvas.get(x - 1, y) if relx % 2 else random.choice([g for g in (1, 2) if g != color])
            canvas.set(x, y, pixel)


def _skyline(argv):
    """LOLWUT 6 [columns] [rows]."""
    cols = _long_in(argv, 1, 80, 1, 1000)
    rows = _long_in(argv, 2, 20, 1, 1000)
    canvas = _Canvas(cols, rows, 3)
    for color in (2, 1):        # the lighter ones behind, without windows
        offset = -10
        while offset < canvas.width:
            offset += random.randrange(8)
            width = 10 + random.randrange(9)
            height = rows // 2 + random.randrange(rows) // (2 if color == 2 else 3)
            _skyscraper(canvas, offset, width, height, False, color)
            offset += width // 2 if color == 2 else width + 1
    offset = -10
    while offset < canvas.width:
        offset += random.randrange(8)
        width = 5 + random.randrange(14)
        if width % 4:
            width += width % 3
        _skyscraper(canvas, offset, width, rows // 3 + random.randrange(rows) // 2, True, 0)
        offset += width + 5
    lines = ("".join(f"\033[{_GRAYS[canvas.get(x, y)]} \033[0m" for x in range(cols)) for y in range(rows))
    return ("\n".join(lines) + "\nDedicated to the 8 bit game developers of past and present.\n"
            "Original 8 bit image from Plaguemon by hikikomori. Redis ver. " + REDIS_COMPAT_VERSION + "\n")


def cmd_lolwut(c, argv):
    version = REDIS_COMPAT_VERSION
    if len(argv) >= 3 and c_word(argv[1]) == b"version":
        version = f"{parse_int(argv[2]) & 0xFFFFFFFF}.0.0"      # Redis prints it as unsigned
        argv = argv[:1] + argv[3:]
    if version.startswith("5.") and not version.startswith("5.9") or version.startswith("4.9"):
        art = _schotter(argv)
    elif version.startswith("6.") and not version.startswith("6.9") or version.startswith("5.9"):
        art = _skyline(argv)
    else:
        art = f"Redis ver. {REDIS_COMPAT_VERSION}\n"
    c.reply.verbatim(art)
