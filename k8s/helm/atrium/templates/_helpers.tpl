{{/* Names. */}}
{{- define "atrium.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "atrium.fullname" -}}
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

{{/* Node and router object names (the node name is also the pod name prefix and node id). */}}
{{- define "atrium.node.fullname" -}}
{{- printf "%s-node" (include "atrium.fullname" .) | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- define "atrium.node.headless" -}}
{{- printf "%s-nodes" (include "atrium.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "atrium.router.fullname" -}}
{{- printf "%s-router" (include "atrium.fullname" .) | trunc 56 | trimSuffix "-" -}}
{{- end -}}
{{- define "atrium.secret" -}}
{{- printf "%s-urls" (include "atrium.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "atrium.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "atrium.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "atrium.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Labels. */}}
{{- define "atrium.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "atrium.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: atrium
{{- end -}}

{{- define "atrium.selector" -}}
app.kubernetes.io/name: {{ include "atrium.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
The node settings: value key -> ATRIUM_* variable. Every setting of docs/operations.md is here
except those the chart derives (bind addresses, data folder, node id, advertised address,
trusted proxies, database and coordinator URLs).
*/}}
{{- define "atrium.node.settingNames" -}}
databasePool: ATRIUM_DATABASE_POOL
leaseMs: ATRIUM_LEASE_MS
rebalancePerSecond: ATRIUM_REBALANCE_PER_SECOND
admins: ATRIUM_ADMINS
log: ATRIUM_LOG
helloTimeoutMs: ATRIUM_HELLO_TIMEOUT_MS
joinsInFlight: ATRIUM_JOINS_IN_FLIGHT
joinWaitMs: ATRIUM_JOIN_WAIT_MS
roomOps: ATRIUM_ROOM_OPS
roomOpsBytes: ATRIUM_ROOM_OPS_BYTES
roomIdleMs: ATRIUM_ROOM_IDLE_MS
presenceHz: ATRIUM_PRESENCE_HZ
busyRoom: ATRIUM_BUSY_ROOM
busyPresenceHz: ATRIUM_BUSY_PRESENCE_HZ
roomEditors: ATRIUM_ROOM_EDITORS
roomPeople: ATRIUM_ROOM_PEOPLE
wsPerSecond: ATRIUM_WS_PER_SECOND
wsBytesPerSecond: ATRIUM_WS_BYTES_PER_SECOND
wsBytesPerIpPerSecond: ATRIUM_WS_BYTES_PER_IP_PER_SECOND
wsBurstBytesPerIp: ATRIUM_WS_BURST_BYTES_PER_IP
wsBacklogBytes: ATRIUM_WS_BACKLOG_BYTES
helloMaxBytes: ATRIUM_HELLO_MAX_BYTES
wsInflateRatio: ATRIUM_WS_INFLATE_RATIO
allowedOrigins: ATRIUM_ALLOWED_ORIGINS
memoryBudget: ATRIUM_MEMORY_BUDGET
roomMemoryShare: ATRIUM_ROOM_MEMORY_SHARE
presencePerSecond: ATRIUM_PRESENCE_PER_SECOND
wsPerAccount: ATRIUM_WS_PER_ACCOUNT
wsPerIp: ATRIUM_WS_PER_IP
wsUpgradesPerIpPerSecond: ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND
wsUpgradeBurst: ATRIUM_WS_UPGRADE_BURST
requestsPerIpPerSecond: ATRIUM_REQUESTS_PER_IP_PER_SECOND
requestBurstPerIp: ATRIUM_REQUEST_BURST_PER_IP
authPerIpPerMinute: ATRIUM_AUTH_PER_IP_PER_MINUTE
authPerEmailPerMinute: ATRIUM_AUTH_PER_EMAIL_PER_MINUTE
filesPerAccount: ATRIUM_FILES_PER_ACCOUNT
storagePerAccount: ATRIUM_STORAGE_PER_ACCOUNT
fileCreatesPerMinute: ATRIUM_FILE_CREATES_PER_MINUTE
versionsNamedPerMinute: ATRIUM_VERSIONS_NAMED_PER_MINUTE
restoresPerMinute: ATRIUM_RESTORES_PER_MINUTE
fileChangesPerMinute: ATRIUM_FILE_CHANGES_PER_MINUTE
documentBytesPerIpPerSecond: ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND
documentBurstBytesPerIp: ATRIUM_DOCUMENT_BURST_BYTES_PER_IP
sessionTtlMs: ATRIUM_SESSION_TTL_MS
sessionsPerAccount: ATRIUM_SESSIONS_PER_ACCOUNT
bodyTimeoutMs: ATRIUM_BODY_TIMEOUT_MS
maxConnections: ATRIUM_MAX_CONNECTIONS
connectionsPerIp: ATRIUM_CONNECTIONS_PER_IP
writeTimeoutMs: ATRIUM_WRITE_TIMEOUT_MS
sendBufferBytes: ATRIUM_SEND_BUFFER_BYTES
kernelUnsentBytes: ATRIUM_KERNEL_UNSENT_BYTES
pingMs: ATRIUM_PING_MS
pingTimeoutMs: ATRIUM_PING_TIMEOUT_MS
healthStats: ATRIUM_HEALTH_STATS
maxMessageBytes: ATRIUM_MAX_MESSAGE_BYTES
maxPatchOps: ATRIUM_MAX_PATCH_OPS
maxDocBytes: ATRIUM_MAX_DOC_BYTES
snapshotMs: ATRIUM_SNAPSHOT_MS
snapshotBytes: ATRIUM_SNAPSHOT_BYTES
sendQueue: ATRIUM_SEND_QUEUE
sendQueueBytes: ATRIUM_SEND_QUEUE_BYTES
welcomeBudgetBytes: ATRIUM_WELCOME_BUDGET_BYTES
shutdownMs: ATRIUM_SHUTDOWN_MS
passwordAccounts: ATRIUM_PASSWORD_ACCOUNTS
hashConcurrency: ATRIUM_HASH_CONCURRENCY
argon2MemoryKib: ATRIUM_ARGON2_MEMORY_KIB
argon2Iterations: ATRIUM_ARGON2_ITERATIONS
checkpointMs: ATRIUM_CHECKPOINT_MS
historyBaseEvery: ATRIUM_HISTORY_BASE_EVERY
historyAllMs: ATRIUM_HISTORY_ALL_MS
historyHourlyMs: ATRIUM_HISTORY_HOURLY_MS
historyDailyMs: ATRIUM_HISTORY_DAILY_MS
restoresWaiting: ATRIUM_RESTORES_WAITING
appTokenIssuer: ATRIUM_APP_TOKEN_ISSUER
appTokenAudience: ATRIUM_APP_TOKEN_AUDIENCE
appTokenHs256Secret: ATRIUM_APP_TOKEN_HS256_SECRET
appTokenPublicKeys: ATRIUM_APP_TOKEN_PUBLIC_KEYS
appTokenJwksUrl: ATRIUM_APP_TOKEN_JWKS_URL
appTokenJwksRefreshMs: ATRIUM_APP_TOKEN_JWKS_REFRESH_MS
appTokenJwksMinRefetchMs: ATRIUM_APP_TOKEN_JWKS_MIN_REFETCH_MS
appTokenJwksKeepMs: ATRIUM_APP_TOKEN_JWKS_KEEP_MS
appTokenSkewS: ATRIUM_APP_TOKEN_SKEW_S
appTokenNoticeMs: ATRIUM_APP_TOKEN_NOTICE_MS
appTokenRevocationTtlMs: ATRIUM_APP_TOKEN_REVOCATION_TTL_MS
serverApiPerSecond: ATRIUM_SERVER_API_PER_SECOND
serverOpsKept: ATRIUM_SERVER_OPS_KEPT
serverOpTtlMs: ATRIUM_SERVER_OP_TTL_MS
eventMaxBytes: ATRIUM_EVENT_MAX_BYTES
eventsPerSecond: ATRIUM_EVENTS_PER_SECOND
roomEventBytesPerSecond: ATRIUM_ROOM_EVENT_BYTES_PER_SECOND
prefixDeleteMax: ATRIUM_PREFIX_DELETE_MAX
roomReportMs: ATRIUM_ROOM_REPORT_MS
webhookDebounceMs: ATRIUM_WEBHOOK_DEBOUNCE_MS
webhookRetryBaseMs: ATRIUM_WEBHOOK_RETRY_BASE_MS
webhookRetryMaxMs: ATRIUM_WEBHOOK_RETRY_MAX_MS
webhookRetryForMs: ATRIUM_WEBHOOK_RETRY_FOR_MS
webhookTimeoutMs: ATRIUM_WEBHOOK_TIMEOUT_MS
webhookConcurrency: ATRIUM_WEBHOOK_CONCURRENCY
webhookPerEndpoint: ATRIUM_WEBHOOK_PER_ENDPOINT
webhookMaxQueued: ATRIUM_WEBHOOK_MAX_QUEUED
webhookPersonEventsPerMinute: ATRIUM_WEBHOOK_PERSON_EVENTS_PER_MINUTE
webhookMaxEndpoints: ATRIUM_WEBHOOK_MAX_ENDPOINTS
webhookBlockPrivate: ATRIUM_WEBHOOK_BLOCK_PRIVATE
webhookUrl: ATRIUM_WEBHOOK_URL
webhookSecret: ATRIUM_WEBHOOK_SECRET
webhookEvents: ATRIUM_WEBHOOK_EVENTS
{{- end -}}

{{/* The router settings: value key -> ATRIUM_* variable (router/src/config.rs). */}}
{{- define "atrium.router.settingNames" -}}
connectTimeoutMs: ATRIUM_ROUTER_CONNECT_TIMEOUT_MS
readTimeoutMs: ATRIUM_ROUTER_READ_TIMEOUT_MS
socketWriteTimeoutMs: ATRIUM_ROUTER_SOCKET_WRITE_TIMEOUT_MS
holders: ATRIUM_ROUTER_HOLDERS
evictRefused: ATRIUM_ROUTER_EVICT_REFUSED
drainMs: ATRIUM_ROUTER_DRAIN_MS
shutdownMs: ATRIUM_ROUTER_SHUTDOWN_MS
threads: ATRIUM_ROUTER_THREADS
maxConnections: ATRIUM_ROUTER_MAX_CONNECTIONS
connectionsPerIp: ATRIUM_ROUTER_CONNECTIONS_PER_IP
log: ATRIUM_LOG
{{- end -}}

{{/* Cluster mode: a database and a coordinator are configured. */}}
{{- define "atrium.hasDatabase" -}}
{{- if or .Values.database.url .Values.database.existingSecret }}true{{ end -}}
{{- end -}}
{{- define "atrium.hasCoordinator" -}}
{{- if or .Values.coordinator.url .Values.coordinator.existingSecret }}true{{ end -}}
{{- end -}}

{{/* An env var read from the chart's Secret or an existing one. */}}
{{- define "atrium.urlEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ default (include "atrium.secret" .root) .cfg.existingSecret }}
      key: {{ if .cfg.existingSecret }}{{ .cfg.existingSecretKey }}{{ else }}{{ .key }}{{ end }}
{{- end -}}

{{/* Seconds: what a node may need between "terminating" and exit. */}}
{{- define "atrium.node.minGrace" -}}
{{- $shutdown := div (add (int .Values.node.settings.shutdownMs) 999) 1000 -}}
{{- $router := ternary (div (add (int .Values.router.settings.drainMs) 999) 1000) 0 .Values.router.enabled -}}
{{- add (int .Values.node.preStopSeconds) $shutdown $router (int .Values.node.terminationExtraSeconds) -}}
{{- end -}}

{{/* Refuse value combinations that cannot work. */}}
{{- define "atrium.checks" -}}
{{- if and (gt (int .Values.node.replicas) 1) (not (include "atrium.hasDatabase" .)) -}}
{{- fail "node.replicas > 1 needs a shared Postgres: set database.url or database.existingSecret" -}}
{{- end -}}
{{- if and (gt (int .Values.node.replicas) 1) (not (include "atrium.hasCoordinator" .)) -}}
{{- fail "node.replicas > 1 needs a coordinator: set coordinator.url (nats:// or redis://) or coordinator.existingSecret" -}}
{{- end -}}
{{- if and .Values.router.enabled (not (include "atrium.hasCoordinator" .)) -}}
{{- fail "router.enabled needs a coordinator (the routers learn the nodes from it): set coordinator.url or coordinator.existingSecret" -}}
{{- end -}}
{{- if and (not (include "atrium.hasDatabase" .)) (not .Values.node.persistence.enabled) -}}
{{- fail "without database.url the node keeps everything in its embedded store: set node.persistence.enabled=true" -}}
{{- end -}}
{{- if lt (int .Values.router.settings.shutdownMs) (int .Values.router.settings.drainMs) -}}
{{- fail "router.settings.shutdownMs must be at least router.settings.drainMs" -}}
{{- end -}}
{{- with .Values.node.terminationGracePeriodSeconds -}}
{{- if lt (int .) (int (include "atrium.node.minGrace" $)) -}}
{{- fail (printf "node.terminationGracePeriodSeconds %d is shorter than preStop + ATRIUM_SHUTDOWN_MS + ATRIUM_ROUTER_DRAIN_MS + extra = %s" (int .) (include "atrium.node.minGrace" $)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A setting as text: whole numbers without exponent (YAML numbers arrive as floats). */}}
{{- define "atrium.settingValue" -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- if eq (float64 .) (float64 (int64 .)) -}}
{{- printf "%d" (int64 .) -}}
{{- else -}}
{{- printf "%v" . -}}
{{- end -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}
