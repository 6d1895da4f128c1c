{{/*
Helm's standard labels. `tau cluster install|validate installation` lists the release's
Deployments by app.kubernetes.io/instance=<release> (tau.cluster.readiness.RELEASE_LABEL).
*/}}
{{- define "taugrid.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: taugrid
{{- end }}

{{/*
Labels of one component: the standard labels plus app.kubernetes.io/component.
Call with (dict "root" $ "component" "tau-core").
*/}}
{{- define "taugrid.componentLabels" -}}
{{ include "taugrid.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The selector of one component's pods. Call with (dict "root" $ "component" "tau-core").
*/}}
{{- define "taugrid.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The pod spec of a placeholder controller. Its image is never pulled (imagePullPolicy: Never) and
its container never runs on the e2e control plane: KWOK fake nodes only report the pod Running
and Ready. It tolerates every taint, so it schedules on the fake nodes, and mounts nothing from
the host. Call with (dict "root" $ "component" "tau-core" "serviceAccountName" "tau-core").
*/}}
{{- define "taugrid.placeholderPodSpec" -}}
{{- $root := .root -}}
{{- $placement := $root.Values.placement -}}
{{- if .serviceAccountName }}
serviceAccountName: {{ .serviceAccountName }}
{{- end }}
automountServiceAccountToken: false
enableServiceLinks: false
terminationGracePeriodSeconds: 5
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
{{- with $placement.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $placement.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $placement.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: {{ .component }}
    image: {{ printf "%s/%s:%s" $root.Values.image.registry .component (default $root.Chart.AppVersion $root.Values.image.tag) | quote }}
    imagePullPolicy: Never
    args:
      - --placeholder
      - {{ printf "--component=%s" .component | quote }}
    resources:
      {{- toYaml $root.Values.resources | nindent 6 }}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop:
          - ALL
{{- end }}

{{/*
A placeholder Deployment in the release namespace. Call with
(dict "root" $ "name" "tau-core-controller" "component" "tau-core" "standInFor" "..."
      "replicas" 1 "serviceAccountName" "")
*/}}
{{- define "taugrid.placeholderDeployment" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "taugrid.componentLabels" . | nindent 4 }}
  annotations:
    taugrid.test/placeholder: "true"
    taugrid.test/stand-in-for: {{ .standInFor | quote }}
spec:
  replicas: {{ .replicas }}
  revisionHistoryLimit: 2
  selector:
    matchLabels:
      {{- include "taugrid.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "taugrid.componentLabels" . | nindent 8 }}
      annotations:
        taugrid.test/placeholder: "true"
    spec:
      {{- include "taugrid.placeholderPodSpec" . | trim | nindent 6 }}
{{- end }}
