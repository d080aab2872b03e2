{{/* The chart's name. */}}
{{- define "confighash.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects. */}}
{{- define "confighash.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "confighash.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "confighash.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: confighash
{{- end }}

{{/* Labels selecting the controller pods. */}}
{{- define "confighash.selectorLabels" -}}
app.kubernetes.io/name: {{ include "confighash.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
"true" or "false" for an on/off value, called with (list "key" value): a
bool, or the string "true" or "false" (a quoted value, --set-string, a Flux
valuesFrom targetPath, quoted), which an `if` alone would take as true whatever it
says. Unset is false; anything else fails naming the key.
*/}}
{{- define "confighash.true" -}}
{{- $key := index . 0 }}
{{- $v := index . 1 }}
{{- $s := lower (trim (toString $v)) }}
{{- if kindIs "bool" $v }}
{{- $v }}
{{- else if kindIs "invalid" $v }}
{{- false }}
{{- else if or (eq $s "true") (eq $s "false") }}
{{- $s }}
{{- else if eq $s "" }}
{{- false }}
{{- else }}
{{- fail (printf "%s must be true or false, not %q" $key (toString $v)) }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "confighash.serviceAccountName" -}}
{{- if eq (include "confighash.true" (list "serviceAccount.create" .Values.serviceAccount.create)) "true" }}
{{- default (include "confighash.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The watched namespaces as a JSON list, each once, in the order given:
watchNamespaces is a list (a values file, --set 'watchNamespaces={a,b}') or
a string of names separated by commas (--set watchNamespaces=a, as the
controller's --namespaces=a,b). Empty: every namespace.
*/}}
{{- define "confighash.watchNamespaces" -}}
{{- $given := .Values.watchNamespaces }}
{{- if kindIs "string" $given }}
{{- $given = splitList "," $given }}
{{- end }}
{{- $names := list }}
{{- range $given }}
{{- $n := trim (toString .) }}
{{- if and $n (not (has $n $names)) }}
{{- $names = append $names $n }}
{{- end }}
{{- end }}
{{- toJson $names }}
{{- end }}

{{/*
"true" when leader election is on: explicit, else replicaCount > 1. The
strings "true" and "false" (a quoted value, --set-string, a Flux
valuesFrom targetPath, quoted) mean the bools.
*/}}
{{- define "confighash.leaderElect" -}}
{{- $le := .Values.leaderElection.enabled }}
{{- $s := lower (trim (toString $le)) }}
{{- if kindIs "bool" $le }}
{{- $le }}
{{- else if or (eq $s "true") (eq $s "false") }}
{{- $s }}
{{- else if or (kindIs "invalid" $le) (eq $s "") (eq $s "auto") }}
{{- gt (int .Values.replicaCount) 1 }}
{{- else }}
{{- fail (printf "leaderElection.enabled must be true, false, auto or empty, not %q" (toString $le)) }}
{{- end }}
{{- end }}

{{/* The port of a bind address (":8080" -> 8080), empty when turned off. */}}
{{- define "confighash.port" -}}
{{- if and . (ne (toString .) "0") }}
{{- regexReplaceAll "^.*:" (toString .) "" }}
{{- end }}
{{- end }}

{{/*
The controller's permissions, the rules of config/clusterrole.yaml (a chart
test checks they stay equal): ConfigMaps and Secrets are only listed and
watched (the cache keeps digests, never payloads); the workloads are
patched (one merge patch per rollout or baseline); Events are recorded.
*/}}
{{- define "confighash.rules" -}}
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [list, watch]
- apiGroups: [apps]
  resources: [deployments, statefulsets, daemonsets]
  verbs: [list, watch, patch]
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [list, watch, patch]
- apiGroups: [argoproj.io]
  resources: [rollouts]
  verbs: [list, watch, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- end }}
