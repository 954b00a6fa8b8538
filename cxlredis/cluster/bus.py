"""The Redis Cluster bus message codec, as Redis 7.0 puts clusterMsg on the wire.

Every integer is big-endian (network order); fixed-size text fields (node names,
IPs) are NUL-padded.  A message is a 2256-byte header followed by a body whose
shape depends on the type: gossip entries then ping extensions (PING, PONG, MEET),
a node name (FAIL), a slots update (UPDATE), a channel and message (PUBLISH,
PUBLISHSHARD), a module payload (MODULE), or nothing (failover auth, MFSTART).

decode() checks every length the way clusterIsValidPacket does and raises
BusDecodeError for anything malformed or truncated; it never reads out of bounds
and every loop is bounded by a count it has already checked against the length.
"""
import struct
from dataclasses import dataclass, field

SIGNATURE = b"RCmb"
PROTOCOL_VERSION = 1
SLOTS = 16384
NAME_LEN = 40
IP_LEN = 46                       # NET_IP_STR_LEN

# Message types.
PING, PONG, MEET, FAIL, PUBLISH = 0, 1, 2, 3, 4
FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, UPDATE, MFSTART, MODULE, PUBLISHSHARD = 5, 6, 7, 8, 9, 10
TYPE_NAMES = ("ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack",
              "update", "mfstart", "module", "publishshard")

# Node flags (clusterNode.flags, sent in headers and gossip).
NODE_MASTER = 1
NODE_SLAVE = 2
NODE_PFAIL = 4
NODE_FAIL = 8
NODE_MYSELF = 16
NODE_HANDSHAKE = 32
NODE_NOADDR = 64
NODE_MEET = 128
NODE_MIGRATE_TO = 256
NODE_NOFAILOVER = 512

# mflags[0]
MFLAG_PAUSED = 1
MFLAG_FORCEACK = 2
MFLAG_EXT_DATA = 4

# Cluster state as the sender sees it.
STATE_OK, STATE_FAIL = 0, 1

# Ping extension types of Redis 7.0.
EXT_HOSTNAME = 0

# sig, totlen, ver, port, type, count, currentEpoch, configEpoch, offset, sender,
# myslots, slaveof, myip, extensions, 30 unused bytes, pport, cport, flags, state, mflags
HEADER = struct.Struct(">4sIHHHHQQQ40s2048s40s46sH30sHHHB3s")
HEADER_LEN = HEADER.size          # 2256, offsetof(clusterMsg, data)
GOSSIP = struct.Struct(">40sII46sHHHHH")     # name, ping_sent, pong_received, ip, port, cport, flags, pport, unused
EXT_HEADER = struct.Struct(">IHH")           # length (header included), type, unused
FAIL_BODY = struct.Struct(">40s")
UPDATE_BODY = struct.Struct(">Q40s2048s")
PUBLISH_HEADER = struct.Struct(">II")
MODULE_HEADER = struct.Struct(">QIB")
NO_NAME = bytes(NAME_LEN)


class BusDecodeError(ValueError):
    """A cluster bus message is malformed or truncated."""


@dataclass
class Gossip:
    """What the sender knows of another node."""
    name: bytes
    ping_sent: int
    pong_received: int
    ip: bytes
    port: int
    cport: int
    flags: int
    pport: int = 0


@dataclass
class Message:
    type: int
    sender: bytes                      # 40 hex characters
    port: int
    cport: int
    flags: int
    current_epoch: int = 0
    config_epoch: int = 0
    offset: int = 0
    slots: bytes = bytes(SLOTS // 8)   # bit s of byte s // 8, least significant first
    slaveof: bytes = NO_NAME           # NO_NAME for a master
    myip: bytes = b""                  # empty: the receiver takes the address it sees
    pport: int = 0
    state: int = STATE_OK
    mflags: bytes = bytes(3)
    count: int = 0                     # the gossip count for ping types; kept as sent otherwise
    gossip: list = field(default_factory=list)
    extensions: list = field(default_factory=list)    # (type, body including its padding)
    about: bytes = b""                 # FAIL: the failed node
    update_epoch: int = 0              # UPDATE: the config epoch of...
    update_name: bytes = b""           # ...the node that owns...
    update_slots: bytes = b""          # ...these slots
    channel: bytes = b""               # PUBLISH, PUBLISHSHARD
    payload: bytes = b""               # PUBLISH message, MODULE payload
    module_id: int = 0                 # MODULE
    module_type: int = 0

    def hostname(self):
        for ext_type, body in self.extensions:
            if ext_type == EXT_HOSTNAME:
                return body.split(b"\0", 1)[0]
        return None


def slot_bitmap(slots):
    bitmap = bytearray(SLOTS // 8)
    for slot in slots:
        bitmap[slot >> 3] |= 1 << (slot & 7)
    return bytes(bitmap)


def bitmap_slots(bitmap):
    return [s for s in range(SLOTS) if bitmap[s >> 3] & (1 << (s & 7))]


def hostname_extension(hostname):
    """The hostname extension: the name, a NUL, zero padding to a multiple of 8."""
    padded = hostname + b"\0" * (8 - len(hostname) % 8)
    return EXT_HOSTNAME, padded


def _text(raw):
    return raw.split(b"\0", 1)[0]


# ------------------------------------------------------------------ encode

def encode(msg):
    if msg.type in (PING, PONG, MEET):
        body = b"".join(GOSSIP.pack(g.name, g.ping_sent, g.pong_received, g.ip, g.port, g.cport,
                                    g.flags, g.pport, 0) for g in msg.gossip)
        body += b"".join(EXT_HEADER.pack(EXT_HEADER.size + len(data), ext_type, 0) + data
                         for ext_type, data in msg.extensions)
        count, extensions = len(msg.gossip), len(msg.extensions)
        mflags = bytearray(msg.mflags)
        if extensions:
            mflags[0] |= MFLAG_EXT_DATA
        mflags = bytes(mflags)
    else:
        body, count, extensions, mflags = _encode_other(msg), msg.count, 0, msg.mflags
    header = HEADER.pack(SIGNATURE, HEADER_LEN + len(body), PROTOCOL_VERSION, msg.port, msg.type,
                         count, msg.current_epoch, msg.config_epoch, msg.offset, msg.sender,
                         msg.slots, msg.slaveof, msg.myip, extensions, b"", msg.pport, msg.cport,
                         msg.flags, msg.state, mflags)
    return header + body


def _encode_other(msg):
    if msg.type == FAIL:
        return FAIL_BODY.pack(msg.about)
    if msg.type == UPDATE:
        return UPDATE_BODY.pack(msg.update_epoch, msg.update_name, msg.update_slots)
    if msg.type in (PUBLISH, PUBLISHSHARD):
        return PUBLISH_HEADER.pack(len(msg.channel), len(msg.payload)) + msg.channel + msg.payload
    if msg.type == MODULE:
        return MODULE_HEADER.pack(msg.module_id, len(msg.payload), msg.module_type) + msg.payload
    return b""


# ------------------------------------------------------------------ decode

def message_length(prefix):
    """The total length a message announces in its first 8 bytes, for framing a stream;
    None until 8 bytes are there.  Raises BusDecodeError on a bad signature or length."""
    if len(prefix) < 8:
        return None
    sig, total = struct.unpack_from(">4sI", prefix)
    if sig != SIGNATURE:
        raise BusDecodeError("bad signature")
    if total < HEADER_LEN:
        raise BusDecodeError(f"message length {total} below the header's {HEADER_LEN}")
    return total


def decode(data):
    """One whole message (exactly its totlen bytes) as a Message."""
    data = bytes(data)
    total = message_length(data)
    if total is None or len(data) != total:
        raise BusDecodeError(f"message of {len(data)} bytes, announced {total}")
    (_, _, version, port, msg_type, count, current_epoch, config_epoch, offset, sender, slots,
     slaveof, myip, extensions, _, pport, cport, flags, state, mflags) = HEADER.unpack_from(data)
    if version != PROTOCOL_VERSION:
        raise BusDecodeError(f"protocol version {version}")
    msg = Message(type=msg_type, sender=sender, port=port, cport=cport, flags=flags,
                  current_epoch=current_epoch, config_epoch=config_epoch, offset=offset,
                  slots=slots, slaveof=slaveof, myip=_text(myip), pport=pport, state=state,
                  mflags=mflags, count=count)
    body = memoryview(data)[HEADER_LEN:]
    if msg_type in (PING, PONG, MEET):
        _decode_ping(msg, body, count, extensions)
    elif msg_type == FAIL:
        (msg.about,) = _unpack(FAIL_BODY, body, exact=True)
    elif msg_type == UPDATE:
        msg.update_epoch, msg.update_name, msg.update_slots = _unpack(UPDATE_BODY, body, exact=True)
    elif msg_type in (PUBLISH, PUBLISHSHARD):
        channel_len, message_len = _unpack(PUBLISH_HEADER, body, exact=False)
        data_end = PUBLISH_HEADER.size + channel_len + message_len
        if len(body) != data_end:
            raise BusDecodeError("publish body not the size of its channel and message")
        msg.channel = bytes(body[PUBLISH_HEADER.size:PUBLISH_HEADER.size + channel_len])
        msg.payload = bytes(body[PUBLISH_HEADER.size + channel_len:data_end])
    elif msg_type == MODULE:
        msg.module_id, payload_len, msg.module_type = _unpack(MODULE_HEADER, body, exact=False)
        if len(body) != MODULE_HEADER.size + payload_len:
            raise BusDecodeError("module body not the size of its payload")
        msg.payload = bytes(body[MODULE_HEADER.size:MODULE_HEADER.size + payload_len])
    elif msg_type in (FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART):
        if len(body):
            raise BusDecodeError(f"{len(body)} bytes after a header-only message")
    else:
        raise BusDecodeError(f"unknown message type {msg_type}")
    return msg


def _unpack(layout, body, exact):
    if len(body) < layout.size or (exact and len(body) != layout.size):
        raise BusDecodeError(f"body of {len(body)} bytes, expected {layout.size}")
    return layout.unpack_from(body)


def _decode_ping(msg, body, count, extensions):
    gossip_end = count * GOSSIP.size
    if len(body) < gossip_end:
        raise BusDecodeError(f"{count} gossip entries announced, {len(body)} bytes of body")
    for pos in range(0, gossip_end, GOSSIP.size):
        name, ping_sent, pong_received, ip, port, cport, flags, pport, _ = GOSSIP.unpack_from(body, pos)
        msg.gossip.append(Gossip(name, ping_sent, pong_received, _text(ip), port, cport, flags, pport))
    pos = gossip_end
    has_ext = msg.mflags[0] & MFLAG_EXT_DATA
    for _ in range(extensions if has_ext else 0):
        if len(body) - pos < EXT_HEADER.size:
            raise BusDecodeError("truncated ping extension header")
        length, ext_type, _ = EXT_HEADER.unpack_from(body, pos)
        if length < EXT_HEADER.size or length % 8 or length > len(body) - pos:
            raise BusDecodeError(f"ping extension of bad length {length}")
        msg.extensions.append((ext_type, bytes(body[pos + EXT_HEADER.size:pos + length])))
        pos += length
    if pos != len(body):
        raise BusDecodeError(f"{len(body) - pos} bytes after the ping body")
