"""helm test: log in as the default user and as every user of users.conf, then PING,
SET, GET and DEL a key of the test's own.

Environment: SMOKE_HOST, SMOKE_PORT; SMOKE_USERS_FILE (the users.conf of the
release, if any); SMOKE_TLS=yes with SMOKE_TLS_CA, SMOKE_TLS_CERT, SMOKE_TLS_KEY;
SMOKE_CLUSTER=yes for a Redis Cluster (a cluster client, which follows -MOVED).

A user is tested when it is on and its password is known: a ">password" rule,
"nopass", or requirepass for the default user (hashed passwords cannot be
tried). It must log in and answer PING; its SET/GET must round-trip unless its
ACL rules refuse them (NOPERM, which proves the rules are in force). The test
fails unless at least one user could write and read back.
"""
import os
import secrets
import sys

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from cxlredis.config import Config

KEY_GLOBS = "*?[\\"


def declared_users(path):
    """{name: rules} from the file's user lines, and its requirepass."""
    config = Config.load([path], environ={})
    users = {}
    for name, *rules in config.users:
        users[name.decode()] = [rule.decode() for rule in rules]
    return users, config["requirepass"]


def login_and_keys(rules):
    """(enabled, password or None, key patterns) after applying the rules in order."""
    enabled, passwords, nopass, patterns = False, [], False, []
    for rule in rules:
        word = rule.lower()
        if word == "on":
            enabled = True
        elif word == "off":
            enabled = False
        elif rule.startswith(">"):
            passwords.append(rule[1:])
            nopass = False
        elif rule.startswith("<") and rule[1:] in passwords:
            passwords.remove(rule[1:])
        elif word == "nopass":
            passwords, nopass = [], True
        elif word == "resetpass":
            passwords, nopass = [], False
        elif word == "reset":
            enabled, passwords, nopass, patterns = False, [], False, []
        elif word == "allkeys":
            patterns.append("*")
        elif word == "resetkeys":
            patterns = []
        elif rule.startswith("~"):
            patterns.append(rule[1:])
        elif rule.startswith("%") and "~" in rule and "W" in rule.split("~", 1)[0].upper():
            patterns.append(rule.split("~", 1)[1])
    password = passwords[0] if passwords else ("any" if nopass else None)
    return enabled, password, patterns


def test_key(user, patterns):
    """A fresh key the user's patterns allow, when one is easy to make."""
    suffix = f"cxlredis-helm-test:{user}:{secrets.token_hex(4)}"
    for pattern in patterns:
        head = pattern[:-1]
        if pattern.endswith("*") and not any(c in head for c in KEY_GLOBS):
            return head + suffix
    return suffix


def candidates():
    """(label, username or None, password or None, key patterns) to test."""
    path = os.environ.get("SMOKE_USERS_FILE", "")
    if not path:
        return [("default", None, None, ["*"])], []
    users, requirepass = declared_users(path)
    skipped = []
    if requirepass:
        tested = [("default", None, requirepass, ["*"])]
    elif "default" in users:
        tested = []
    else:
        tested = [("default", None, None, ["*"])]
    for name, rules in users.items():
        enabled, password, patterns = login_and_keys(rules)
        if name == "default" and requirepass:
            continue
        if not enabled:
            skipped.append(f"{name}: off")
        elif password is None:
            skipped.append(f"{name}: no plaintext password in users.conf")
        else:
            tested.append((name, name, password, patterns))
    return tested, skipped


def connect(username, password):
    options = {"host": os.environ["SMOKE_HOST"], "port": int(os.environ["SMOKE_PORT"]),
               "username": username, "password": password, "socket_timeout": 10,
               "socket_connect_timeout": 10,
               # One attempt: a failure is reported at once (a wrong password would be retried).
               "retry": Retry(NoBackoff(), 0)}
    if os.environ.get("SMOKE_TLS") == "yes":
        options.update(ssl=True, ssl_ca_certs=os.environ["SMOKE_TLS_CA"],
                       ssl_certfile=os.environ.get("SMOKE_TLS_CERT") or None,
                       ssl_keyfile=os.environ.get("SMOKE_TLS_KEY") or None)
    if os.environ.get("SMOKE_CLUSTER") == "yes":
        # It logs in to the nodes as it meets them, so a refused login shows here already.
        return RedisCluster(**options)
    return redis.Redis(**options)


def check(label, username, password, patterns):
    """(problem or None, whether a SET/GET round trip was made); prints what it did."""
    client = None
    try:
        client = connect(username, password)
        if client.ping() is not True:
            return "PING did not answer PONG", False
        key, value = test_key(label, patterns), secrets.token_bytes(64)
        try:
            client.set(key, value, ex=300)
        except redis.exceptions.NoPermissionError:
            print(f"ok   {label}: logged in, PING; SET refused by its ACL rules (NOPERM)")
            return None, False
        stored = client.get(key)
        try:
            client.delete(key)
        except redis.exceptions.NoPermissionError:
            pass        # the key expires by itself
        if stored != value:
            return f"GET {key} returned {stored!r}, not what SET stored", False
        print(f"ok   {label}: logged in, PING, SET/GET/DEL {key}")
        return None, True
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as error:
        return f"{type(error).__name__}: {error}", False
    finally:
        if client is not None:
            client.close()


def main():
    tested, skipped = candidates()
    for reason in skipped:
        print(f"skip {reason}")
    failures, round_trips = 0, 0
    for label, username, password, patterns in tested:
        problem, wrote = check(label, username, password, patterns)
        round_trips += wrote
        if problem is not None:
            print(f"FAIL {label}: {problem}")
            failures += 1
    if not round_trips:
        print("FAIL no user could SET and GET a key")
        return 1
    print(f"smoke test: {len(tested) - failures} of {len(tested)} users passed")
    return 1 if failures else 0


sys.exit(main())
