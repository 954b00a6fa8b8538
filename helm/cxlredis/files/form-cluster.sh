#!/bin/sh
# The cluster hook of the cxlredis chart (post-install and post-upgrade): makes the
# release's pods one Redis Cluster, and leaves a formed cluster as it is, so it is safe
# to run again.
#
#   no pod knows another        redis-cli --cluster create <every pod> --cluster-yes
#   some pods know no other     redis-cli --cluster add-node <pod> <member> for each
#   then, if a pod has no slot  redis-cli --cluster rebalance --cluster-use-empty-masters
#   always, at the end          the nodes agree, and redis-cli --cluster check is clean
#
# Rebalancing moves slots onto the new pods with the keys in them (MIGRATE).
#
# Environment:
#   CLUSTER_NODES         host:port of every pod, in ordinal order, space separated
#   CLUSTER_WAIT_SECONDS  how long to wait for the pods to answer and for the nodes to agree
#   REDISCLI_AUTH         the default user's password, if it has one (redis-cli reads it)
set -euf        # -f: words such as [slot->-id] in CLUSTER NODES are not file patterns

now() { date +%s; }
log() { echo "form-cluster: $*"; }
fail() { echo "form-cluster: $*" >&2; exit 1; }

wait_seconds=${CLUSTER_WAIT_SECONDS:-240}
deadline=$(( $(now) + wait_seconds ))
[ -n "${CLUSTER_NODES:-}" ] || fail "CLUSTER_NODES is empty"

# redis-cli on one node, given as address:port (the address may be IPv6).
at() {
    node=$1
    shift
    redis-cli --no-auth-warning -h "${node%:*}" -p "${node##*:}" "$@"
}

# The address of a pod's DNS name: CLUSTER MEET takes addresses, not names.
resolve() {
    case $1 in
        *:*) echo "$1"; return 0 ;;         # IPv6
        *[!0-9.]*) ;;                       # a name
        *) echo "$1"; return 0 ;;           # IPv4
    esac
    set -- $(getent hosts "$1" || true)
    if [ $# -gt 0 ]; then
        echo "$1"
    fi
}

# A field of the node's CLUSTER INFO.
info_field() {
    at "$1" CLUSTER INFO 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"
}

# Whether every node knows exactly the pods, each connected and not failing (or being
# met), says the cluster is ok (which a node says only a while after it starts), and
# redis-cli --cluster check finds the slots agreed and covered.
agreed() {
    for node in $nodes; do
        [ "$(info_field "$node" cluster_state)" = ok ] || return 1
        view=$(at "$node" CLUSTER NODES 2>/dev/null) || return 1
        [ "$(printf '%s\n' "$view" | grep -c .)" = "$count" ] || return 1
        printf '%s\n' "$view" | while read -r id endpoint flags master sent received epoch link rest; do
            case ",$flags," in
                *,handshake,* | *,noaddr,* | *,fail,* | *,fail?,*) exit 1 ;;
            esac
            [ "$link" = connected ] || exit 1
        done || return 1
    done
    redis-cli --no-auth-warning --cluster check "$seed" >/dev/null 2>&1
}

wait_until_agreed() {
    until agreed; do
        if [ "$(now)" -ge "$deadline" ]; then
            redis-cli --no-auth-warning --cluster check "$seed" >&2 || true
            fail "the nodes did not agree within ${wait_seconds}s: each must know the $count pods, connected and not failing, and be ok, and the slots must be covered once"
        fi
        sleep 1
    done
}

# 1. Every pod resolves and answers PING.
nodes=""
count=0
for pod in $CLUSTER_NODES; do
    host=${pod%:*}
    port=${pod##*:}
    while :; do
        address=$(resolve "$host")
        if [ -z "$address" ]; then
            reply="$host does not resolve yet"
        else
            reply=$(at "$address:$port" PING 2>&1 || true)
            if [ "$reply" = PONG ]; then
                break
            fi
        fi
        if [ "$(now)" -ge "$deadline" ]; then
            fail "$pod did not answer PING within ${wait_seconds}s: $reply"
        fi
        sleep 2
    done
    nodes="$nodes $address:$port"
    count=$((count + 1))
done
log "$count pods answer:$nodes"

# 2. Which pods are in a cluster already: those that know another node.
seed=""
alone=""
for node in $nodes; do
    known=$(info_field "$node" cluster_known_nodes)
    [ -n "$known" ] || fail "$node gives no CLUSTER INFO: is it running with cluster-enabled yes?"
    if [ "$known" -gt 1 ]; then
        if [ -z "$seed" ]; then
            seed=$node
        fi
    else
        alone="$alone $node"
    fi
done

# 3. Form the cluster, or add the pods that are not in it.
if [ -z "$seed" ]; then
    log "no pod knows another: creating the cluster"
    seed=${nodes# }
    seed=${seed%% *}
    redis-cli --no-auth-warning --cluster create $nodes --cluster-yes
elif [ -n "$alone" ]; then
    for node in $alone; do
        log "adding $node to the cluster of $seed"
        redis-cli --no-auth-warning --cluster add-node "$node" "$seed"
    done
else
    log "every pod is in the cluster already"
fi
wait_until_agreed

# 4. New pods own no slots until the slots are rebalanced onto them.
empty=""
for node in $nodes; do
    id=$(at "$node" CLUSTER MYID)
    set -- $(at "$node" CLUSTER NODES | grep "^$id ")
    if [ $# -le 8 ]; then               # id, address, flags, master, 2 times, epoch, link
        empty="$empty $node"
    fi
done
if [ -n "$empty" ]; then
    log "rebalancing the slots onto the pods that have none:$empty"
    redis-cli --no-auth-warning --cluster rebalance "$seed" --cluster-use-empty-masters
    wait_until_agreed
fi

redis-cli --no-auth-warning --cluster check "$seed"
log "the cluster of $count pods is formed"
