"""cxlredis: a shared KV-cache tier for LLM inference that speaks RESP2/RESP3."""

__version__ = "0.1.0"
# The Redis version we behave like; HELLO and INFO report it as redis_version
# because clients (redis-py, valkey-glide, LMCache) gate features on it.
REDIS_COMPAT_VERSION = "7.0.15"
