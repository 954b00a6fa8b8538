"""Pub/Sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB *.

State lives in cxlredis/pubsub.py. Every name is taken in the namespace of the
session's tenant, so a tenant never hears another tenant's channels.
"""
from .. import errors
from ..errors import CommandError
from ..pubsub import CHANNELS, PATTERNS, SHARD_CHANNELS
from .connection import reply_help

PUBSUB_HELP = (
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
)


def _confirm(c, verb, name, kind):
    """One (un)subscribe confirmation: [verb, name or null, the session's count after it]."""
    c.reply.push(3)
    c.reply.bulk(verb)
    if name is None:
        c.reply.null()
    else:
        c.reply.bulk(name)
    subscriptions = c.subscriptions
    c.reply.integer(len(subscriptions.shard_channels) if kind == SHARD_CHANNELS
                    else subscriptions.count())


def _subscribe(c, argv, kind, verb):
    pubsub = c.services.pubsub
    for name in argv[1:]:
        pubsub.subscribe(c, kind, name)
        _confirm(c, verb, name, kind)


def _unsubscribe(c, argv, kind, verb):
    pubsub = c.services.pubsub
    if len(argv) > 1:
        for name in argv[1:]:
            pubsub.unsubscribe(c, kind, (c.tenant, bytes(name)))
            _confirm(c, verb, name, kind)
        return
    held = list(getattr(c.subscriptions, kind))
    for entry in held:
        pubsub.unsubscribe(c, kind, entry)
        _confirm(c, verb, entry[1], kind)
    if not held:
        _confirm(c, verb, None, kind)


def cmd_subscribe(c, argv):
    _subscribe(c, argv, CHANNELS, "subscribe")


def cmd_psubscribe(c, argv):
    _subscribe(c, argv, PATTERNS, "psubscribe")


def cmd_ssubscribe(c, argv):
    _subscribe(c, argv, SHARD_CHANNELS, "ssubscribe")


def cmd_unsubscribe(c, argv):
    _unsubscribe(c, argv, CHANNELS, "unsubscribe")


def cmd_punsubscribe(c, argv):
    _unsubscribe(c, argv, PATTERNS, "punsubscribe")


def cmd_sunsubscribe(c, argv):
    _unsubscribe(c, argv, SHARD_CHANNELS, "sunsubscribe")


def cmd_publish(c, argv):
    # Tenants' channels are this node's own: the cluster bus knows no tenants.
    if c.services.cluster is not None and c.tenant is None:
        c.services.cluster.publish(argv[1], argv[2])
    c.reply.integer(c.services.pubsub.publish(c.tenant, argv[1], argv[2]))


def cmd_spublish(c, argv):
    c.reply.integer(c.services.pubsub.publish(c.tenant, argv[1], argv[2], shard=True))


def _names(c, argv, kind):
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    names = c.services.pubsub.names(kind, c.tenant, bytes(argv[2]) if len(argv) == 3 else None)
    c.reply.array(len(names))
    for name in names:
        c.reply.bulk(name)


def _listeners(c, argv, kind):
    pubsub = c.services.pubsub
    c.reply.array(2 * (len(argv) - 2))
    for name in argv[2:]:
        c.reply.bulk(name)
        c.reply.integer(pubsub.listeners(kind, c.tenant, name))


def cmd_pubsub_channels(c, argv):
    _names(c, argv, CHANNELS)


def cmd_pubsub_shardchannels(c, argv):
    _names(c, argv, SHARD_CHANNELS)


def cmd_pubsub_numsub(c, argv):
    _listeners(c, argv, CHANNELS)


def cmd_pubsub_shardnumsub(c, argv):
    _listeners(c, argv, SHARD_CHANNELS)


def cmd_pubsub_numpat(c, argv):
    c.reply.integer(c.services.pubsub.count(PATTERNS, c.tenant))


def cmd_pubsub_help(c, argv):
    reply_help(c, PUBSUB_HELP)
