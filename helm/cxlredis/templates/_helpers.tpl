{{/* Names */}}

{{- define "cxlredis.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<chart>, or the release name alone when it already contains the chart name. */}}
{{- define "cxlredis.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "cxlredis.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "cxlredis.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "cxlredis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cxlredis.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The label that admits a pod through the NetworkPolicy. */}}
{{- define "cxlredis.clientLabel" -}}
{{ include "cxlredis.fullname" . }}-client
{{- end -}}

{{- define "cxlredis.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "cxlredis.authSecretName" -}}
{{- if .Values.auth.existingSecret -}}
{{ .Values.auth.existingSecret }}
{{- else -}}
{{ include "cxlredis.fullname" . }}-auth
{{- end -}}
{{- end -}}

{{/* Whether users.conf exists: an existing Secret, or one the chart generates. */}}
{{- define "cxlredis.hasAuthSecret" -}}
{{- if or .Values.auth.existingSecret .Values.auth.password .Values.auth.users .Values.tenants -}}true{{- end -}}
{{- end -}}

{{/* Paths inside the server container */}}

{{- define "cxlredis.configDir" -}}/etc/cxlredis{{- end -}}
{{- define "cxlredis.dataDir" -}}/var/lib/cxlredis{{- end -}}
{{- define "cxlredis.arenaDir" -}}/var/lib/cxlredis-arena{{- end -}}
{{/* The unix socket: the probes' way in, and with colocated the inference pods'. */}}
{{- define "cxlredis.unixSocket" -}}
{{- if .Values.colocated.enabled -}}
{{ .Values.colocated.mountPath }}/cxlredis.sock
{{- else -}}
/tmp/cxlredis.sock
{{- end -}}
{{- end -}}

{{- define "cxlredis.arenaPath" -}}
{{- if eq .Values.arena.backing "devdax" -}}
{{ .Values.arena.devdax.path }}
{{- else -}}
{{ include "cxlredis.arenaDir" . }}/cxlredis.arena
{{- end -}}
{{- end -}}

{{/* Cluster mode */}}

{{/* The StatefulSet's pods: the shards in cluster mode, else the independent caches. */}}
{{- define "cxlredis.replicas" -}}
{{- if .Values.cluster.enabled -}}
{{ .Values.cluster.shards | int }}
{{- else -}}
{{ .Values.replicaCount | int }}
{{- end -}}
{{- end -}}

{{/* The domain of the pods' DNS names, <pod>.<this>. */}}
{{- define "cxlredis.podDomain" -}}
{{ include "cxlredis.fullname" . }}-headless.{{ .Release.Namespace }}.svc.{{ .Values.cluster.announce.clusterDomain }}
{{- end -}}

{{/* nodes.conf, where it lives at least as long as the arena: a node that comes back with
     its arena must come back as the same node (one with keys cannot join as a new one),
     while one that keeps nodes.conf and loses its arena rejoins empty, as a cache may.
     Beside a file arena (a claim or the node's directory); else on the data claim; else
     beside the shm arena (both last as long as the pod). Huge pages and a device hold no
     ordinary file: the working directory then. */}}
{{- define "cxlredis.clusterConfigFile" -}}
{{- $backing := .Values.arena.backing -}}
{{- if or (eq $backing "file") (and (eq $backing "shm") (not .Values.persistence.enabled)) -}}
{{ include "cxlredis.arenaDir" . }}/nodes.conf
{{- else -}}
{{ include "cxlredis.dataDir" . }}/nodes.conf
{{- end -}}
{{- end -}}

{{/* The default user's password for the cluster hook's redis-cli: a Secret and its key, or
     nothing when the default user has none. */}}
{{- define "cxlredis.clusterPasswordRef" -}}
{{- if .Values.auth.existingSecret -}}
{{- with .Values.cluster.hook.existingSecretPasswordKey -}}
{{ toJson (dict "name" $.Values.auth.existingSecret "key" .) }}
{{- end -}}
{{- else if .Values.auth.password -}}
{{ toJson (dict "name" (include "cxlredis.authSecretName" .) "key" "default-password") }}
{{- end -}}
{{- end -}}

{{/* Sizes */}}

{{/* A quantity in Mi, Gi or Ti as a number of MiB. */}}
{{- define "cxlredis.mebibytes" -}}
{{- $quantity := toString . -}}
{{- if regexMatch "^[0-9]+Mi$" $quantity -}}
{{- trimSuffix "Mi" $quantity | int64 -}}
{{- else if regexMatch "^[0-9]+Gi$" $quantity -}}
{{- mul (trimSuffix "Gi" $quantity | int64) 1024 -}}
{{- else if regexMatch "^[0-9]+Ti$" $quantity -}}
{{- mul (trimSuffix "Ti" $quantity | int64) 1048576 -}}
{{- else -}}
{{- fail (printf "%q is not a quantity in Mi, Gi or Ti" $quantity) -}}
{{- end -}}
{{- end -}}

{{/* Arena size in MiB, checked against the backing. */}}
{{- define "cxlredis.arenaMebibytes" -}}
{{- $size := include "cxlredis.mebibytes" .Values.arena.size | int64 -}}
{{- if eq .Values.arena.backing "hugepages" -}}
{{- $page := include "cxlredis.mebibytes" .Values.arena.hugepages.pageSize | int64 -}}
{{- if mod $size $page -}}
{{- fail (printf "arena.size %s is not a whole number of %s huge pages" .Values.arena.size .Values.arena.hugepages.pageSize) -}}
{{- end -}}
{{- end -}}
{{- $size -}}
{{- end -}}

{{/* Where the disk tier's claim is mounted. */}}
{{- define "cxlredis.diskTierDir" -}}
/var/lib/cxlredis-tier
{{- end -}}

{{/* A cxlredis memory value (Redis's units: k = 1000, kb = 1024, ...) as bytes. */}}
{{- define "cxlredis.memoryBytes" -}}
{{- $value := lower (toString .) -}}
{{- $units := dict "" 1 "b" 1 "k" 1000 "kb" 1024 "m" 1000000 "mb" 1048576 "g" 1000000000 "gb" 1073741824 -}}
{{- $digits := regexReplaceAll "[a-z]+$" $value "" -}}
{{- $unit := trimPrefix $digits $value -}}
{{- if or (not (regexMatch "^[0-9]+$" $digits)) (not (hasKey $units $unit)) -}}
{{- fail (printf "%q is not a memory value (digits and b, k, kb, m, mb, g or gb)" .) -}}
{{- end -}}
{{- mul ($digits | int64) (get $units $unit) -}}
{{- end -}}

{{/* The tenants with `arena: own` (each an arena file of its own in colocated.hostPath). */}}
{{- define "cxlredis.ownArenaTenants" -}}
{{- $own := list -}}
{{- range .Values.tenants -}}
{{- if eq (.arena | default "") "own" -}}
{{- $own = append $own . -}}
{{- end -}}
{{- end -}}
{{- toJson $own -}}
{{- end -}}

{{/* MiB of the arena files of the tenants with arena own: each is sized from its quota as
     cxlredis/tenant_arenas.py's size_for does (quota + 1/128 for the index + 4 MiB,
     rounded up to 2 MiB). */}}
{{- define "cxlredis.tenantArenasMebibytes" -}}
{{- $align := 2097152 -}}
{{- $total := 0 -}}
{{- range include "cxlredis.ownArenaTenants" . | fromJsonArray -}}
{{- $quota := include "cxlredis.memoryBytes" .quota | int64 -}}
{{- $bytes := mul (div (add $quota (div $quota 128) (mul 3 $align) -1) $align) $align -}}
{{- $total = add $total (div $bytes 1048576) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/* A tenant's arenaGroup as the config line writes it: a gid's digits or a group name. */}}
{{- define "cxlredis.arenaGroup" -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- printf "%d" (int64 .) -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* podSecurityContext, with the gids of the tenants' arenaGroups added to
     supplementalGroups: the server gives each tenant's arena file its group, which a
     process without CAP_CHOWN may do only for a group it belongs to. */}}
{{- define "cxlredis.podSecurityContext" -}}
{{- $context := deepCopy .Values.podSecurityContext -}}
{{- $groups := list -}}
{{- range $context.supplementalGroups | default list -}}
{{- $groups = append $groups (int64 .) -}}
{{- end -}}
{{- range include "cxlredis.ownArenaTenants" . | fromJsonArray -}}
{{- $group := include "cxlredis.arenaGroup" (.arenaGroup | default "") -}}
{{- if regexMatch "^[0-9]+$" $group -}}
{{- $groups = append $groups ($group | int64) -}}
{{- end -}}
{{- end -}}
{{- if $groups -}}
{{- $_ := set $context "supplementalGroups" ($groups | uniq) -}}
{{- end -}}
{{- toYaml $context -}}
{{- end -}}

{{/* The container's resources: the user's, plus memory, huge pages and the DAX device. */}}
{{- define "cxlredis.resources" -}}
{{- $resources := deepCopy .Values.resources -}}
{{- $requests := $resources.requests | default dict -}}
{{- $limits := $resources.limits | default dict -}}
{{- $arena := include "cxlredis.arenaMebibytes" . | int64 -}}
{{- if not (hasKey $limits "memory") -}}
{{- $memory := include "cxlredis.mebibytes" .Values.arena.memoryOverhead | int64 -}}
{{- if eq .Values.arena.backing "shm" -}}
{{- $memory = add $memory $arena -}}
{{- end -}}
{{- if and .Values.colocated.enabled .Values.colocated.memoryBacked -}}
{{- $memory = add $memory (include "cxlredis.tenantArenasMebibytes" . | int64) -}}
{{- end -}}
{{- if .Values.diskTier.enabled -}}
{{- $memory = add $memory (include "cxlredis.mebibytes" .Values.diskTier.writeBuffer | int64) -}}
{{- end -}}
{{- $_ := set $limits "memory" (printf "%dMi" $memory) -}}
{{- if not (hasKey $requests "memory") -}}
{{- $_ := set $requests "memory" (printf "%dMi" $memory) -}}
{{- end -}}
{{- end -}}
{{- if eq .Values.arena.backing "hugepages" -}}
{{- $name := printf "hugepages-%s" .Values.arena.hugepages.pageSize -}}
{{- $_ := set $requests $name .Values.arena.size -}}
{{- $_ := set $limits $name .Values.arena.size -}}
{{- end -}}
{{- if and (eq .Values.arena.backing "devdax") .Values.arena.devdax.resourceName -}}
{{- $_ := set $requests .Values.arena.devdax.resourceName "1" -}}
{{- $_ := set $limits .Values.arena.devdax.resourceName "1" -}}
{{- end -}}
{{- $_ := set $resources "requests" $requests -}}
{{- $_ := set $resources "limits" $limits -}}
{{- toYaml $resources -}}
{{- end -}}

{{/* Config file syntax */}}

{{/* A value as one double-quoted config argument (Redis's quoting rules). */}}
{{- define "cxlredis.quote" -}}
"{{ toString . | replace "\\" "\\\\" | replace "\"" "\\\"" | replace "\n" "\\n" | replace "\r" "\\r" | replace "\t" "\\t" }}"
{{- end -}}

{{/* A `config` value: booleans as yes/no, whole numbers without an exponent. */}}
{{- define "cxlredis.configValue" -}}
{{- if kindIs "bool" . -}}
{{ ternary "yes" "no" . }}
{{- else if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- if ne (float64 .) (float64 (int64 .)) -}}
{{- fail (printf "config value %v is not a whole number" .) -}}
{{- end -}}
{{ int64 . }}
{{- else -}}
{{ include "cxlredis.quote" . }}
{{- end -}}
{{- end -}}

{{/* Options of cxlredis.conf that other values own, and which value that is. */}}
{{- define "cxlredis.reservedOptions" -}}
bind: bind
port: port
unixsocket: colocated.mountPath (the probes use the socket)
unixsocketperm: colocated.socketPerm
tenant-arena-dir: colocated.hostPath
dir: persistence
daemonize: (always no)
logfile: (the log goes to the container's output)
pidfile: (not used in a container)
include: auth.existingSecret
user: auth.users
tenant: tenants
requirepass: auth.password
aclfile: auth.users or auth.existingSecret
arena-path: arena.backing
arena-size: arena.size
arena-hugepages: arena.transparentHugepages
arena-prefault: arena.prefault
arena-numa-node: arena.numaNode
arena-reset: arena.reset
disk-tier-dir: diskTier.enabled
disk-tier-size: diskTier.size
disk-tier-promote: diskTier.promote
disk-tier-write-buffer: diskTier.writeBuffer
tls-port: tls.port
tls-cert-file: tls.existingSecret
tls-key-file: tls.existingSecret
tls-ca-cert-file: tls.existingSecret
tls-ca-cert-dir: tls.existingSecret
tls-auth-clients: tls.authClients
metrics-port: metrics.port
metrics-bind: metrics.enabled
audit-log-file: auditLog.enabled
audit-log-max-size: auditLog.maxSize
audit-log-max-files: auditLog.maxFiles
cluster-enabled: cluster.enabled
cluster-config-file: (beside the arena)
cluster-port: cluster.busPort
cluster-node-timeout: cluster.nodeTimeout
cluster-require-full-coverage: cluster.requireFullCoverage
cluster-allow-reads-when-down: cluster.allowReadsWhenDown
cluster-preferred-endpoint-type: cluster.announce.preferredEndpointType
cluster-announce-ip: (each pod's IP)
cluster-announce-hostname: (each pod's DNS name)
{{- end -}}

{{/* Checks that span several values (the schema checks each value alone). */}}
{{- define "cxlredis.validate" -}}
{{- $reserved := include "cxlredis.reservedOptions" . | fromYaml -}}
{{- range $name, $value := .Values.config -}}
{{- if hasKey $reserved (lower $name) -}}
{{- fail (printf "config.%s is set by the chart; use %s" $name (get $reserved (lower $name))) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.auth.existingSecret (or .Values.auth.password .Values.auth.users .Values.tenants) -}}
{{- fail "auth.existingSecret holds the whole users.conf: leave auth.password, auth.users and tenants empty" -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.existingSecret) -}}
{{- fail "tls.enabled needs tls.existingSecret (a Secret with the certificate, key and CA)" -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.caKey) -}}
{{- fail "tls.enabled needs tls.caKey: the CA that the helm test verifies the server with" -}}
{{- end -}}
{{- if and .Values.tls.disablePlainPort (not .Values.tls.enabled) -}}
{{- fail "tls.disablePlainPort leaves no port without tls.enabled" -}}
{{- end -}}
{{- if eq .Values.arena.backing "devdax" -}}
{{- if eq (not .Values.arena.devdax.resourceName) (not .Values.arena.devdax.hostPath) -}}
{{- fail "the devdax backing needs exactly one of arena.devdax.resourceName and arena.devdax.hostPath" -}}
{{- end -}}
{{- end -}}
{{- $onNode := "" -}}
{{- if or (and (eq .Values.arena.backing "devdax") .Values.arena.devdax.hostPath) (and (eq .Values.arena.backing "file") .Values.arena.file.hostPath) -}}
{{- $onNode = "a hostPath arena" -}}
{{- else if .Values.colocated.enabled -}}
{{- $onNode = "colocated.hostPath (the node's unix socket and tenant arenas)" -}}
{{- end -}}
{{- if and $onNode (gt (include "cxlredis.replicas" . | int) 1) (ne .Values.podAntiAffinity "hard") (not .Values.affinity) -}}
{{- fail (printf "%s is one per node: with %s > 1 set podAntiAffinity: hard" $onNode (ternary "cluster.shards" "replicaCount" .Values.cluster.enabled)) -}}
{{- end -}}
{{- if .Values.cluster.enabled -}}
{{- if .Values.tls.disablePlainPort -}}
{{- fail "cluster.enabled needs the plain port: the cluster hook's redis-cli connects to it (leave tls.disablePlainPort false)" -}}
{{- end -}}
{{- if .Values.colocated.enabled -}}
{{- fail "cluster.enabled and colocated.enabled: a co-located client maps one node's arena and follows no -MOVED redirect" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.cluster.hook.existingSecretPasswordKey (not .Values.auth.existingSecret) -}}
{{- fail "cluster.hook.existingSecretPasswordKey is a key of auth.existingSecret, which is not set" -}}
{{- end -}}
{{- $names := list -}}
{{- range .Values.auth.users -}}
{{- if has .name $names -}}
{{- fail (printf "auth.users: user %q is declared twice" .name) -}}
{{- end -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- $own := list -}}
{{- range include "cxlredis.ownArenaTenants" . | fromJsonArray -}}
{{- $own = append $own .name -}}
{{- end -}}
{{- range .Values.tenants -}}
{{- range .users -}}
{{- if not (has . $names) -}}
{{- fail (printf "tenants: user %q is not in auth.users" .) -}}
{{- end -}}
{{- end -}}
{{- /* What the server refuses at startup, refused here first with its words. */ -}}
{{- if has .name $own -}}
{{- if not $.Values.colocated.enabled -}}
{{- fail (printf "tenants: tenant %q has arena own, which needs colocated.enabled: its arena file goes in colocated.hostPath, where its pods map it" .name) -}}
{{- end -}}
{{- if eq (include "cxlredis.memoryBytes" (.quota | default "0")) "0" -}}
{{- fail (printf "tenants: tenant %q needs a quota to have arena own: it sizes the tenant's arena file" .name) -}}
{{- end -}}
{{- if or .sharedRead .sharedWrite -}}
{{- fail (printf "tenants: tenant %q has arena own: shared namespaces are in the server's arena, so it can be granted none" .name) -}}
{{- end -}}
{{- if and .arenaWrite (eq (include "cxlredis.arenaGroup" (.arenaGroup | default "")) "") -}}
{{- fail (printf "tenants: tenant %q: arenaWrite needs arenaGroup (without a group only the server's own user may open the file)" .name) -}}
{{- end -}}
{{- else if ne (include "cxlredis.arenaGroup" (.arenaGroup | default "")) "" -}}
{{- fail (printf "tenants: tenant %q has arena shared: arenaGroup is for a tenant with arena own" .name) -}}
{{- else if .arenaWrite -}}
{{- fail (printf "tenants: tenant %q has arena shared: arenaWrite is for a tenant with arena own" .name) -}}
{{- end -}}
{{- $tenant := .name -}}
{{- range concat (.sharedRead | default list) (.sharedWrite | default list) -}}
{{- if has . $own -}}
{{- fail (printf "tenants: tenant %q has arena own: its namespace cannot be shared with tenant %q" . $tenant) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
