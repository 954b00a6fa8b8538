"""Redis Cluster, layer by layer: key slots, DUMP/RESTORE payloads, the bus codec and nodes.conf.

Nothing here imports the server, dispatch or the command modules: they build on this.
"""
