package examples_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// Charts that projects ship in their Go modules, pinned to a version the
// module proxy serves. The repositories without a go.mod are served under
// pseudo-versions of one commit.
const (
	promCharts         = "github.com/prometheus-community/helm-charts@v0.0.0-20260828105119-ed5d7d9b5933"
	grafanaCharts      = "github.com/grafana-community/helm-charts@v0.0.0-20260829030558-dbf9f4fb5fa1"
	ingressNginx       = "k8s.io/ingress-nginx@v0.0.0-20240708192948-52c50467d67d"
	argoHelm           = "github.com/argoproj/argo-helm@v0.0.0-20260904222229-3bbb4305eea9"
	dandyCharts        = "github.com/DandyDeveloper/charts@v0.0.0-20260615041936-2e2539a8960e"
	kyverno            = "github.com/kyverno/kyverno@v1.13.4"
	descheduler        = "sigs.k8s.io/descheduler@v0.36.0"
	certManager        = "github.com/cert-manager/cert-manager@v1.21.2"
	gatekeeper         = "github.com/open-policy-agent/gatekeeper/v3@v3.23.1"
	metricsServerChart = "sigs.k8s.io/metrics-server@v0.9.0"
	externalDNS        = "sigs.k8s.io/external-dns@v0.22.0"
	vaultHelm          = "github.com/hashicorp/vault-helm@v0.34.1"
	traefikChart       = "github.com/traefik/traefik-helm-chart@v41.6.0+incompatible"
	kedaCharts         = "github.com/kedacore/charts@v2.20.3-0.20260903105638-fe065f4d8938+incompatible"

	// realNamespace is the release namespace of every render.
	realNamespace = "shop"
	// realKubeVersion is what helm template renders for: bin/helm3, built with
	// go install, assumes Kubernetes 1.20, which these charts refuse.
	realKubeVersion = "1.31.0"
)

// chartIn is a chart folder inside a module version.
type chartIn struct{ module, path string }

// chartChange is a value change and the workloads whose hash it moves.
type chartChange struct {
	args  []string
	moved []string
}

// realChart is one row: a chart, the flags of every render, a values file
// that turns on the optional parts that consume configs, and what is hashed.
type realChart struct {
	name  string
	chart chartIn
	// deps are subcharts from other modules, copied into the chart's
	// charts/ folder as helm dependency build would.
	deps []chartIn
	// args go to every render: values a chart would otherwise draw at
	// random on each render (a generated password), so that two renders
	// are comparable.
	args []string
	// values is the values file of the second render.
	values string
	// hashed and hashedOn are the workloads (Kind/namespace/name) that get
	// a hash with the defaults and with values; no other does.
	hashed, hashedOn []string
	// hooksDefault and hooksHashed are hook workloads hashed with the
	// defaults and with values, by Helm 4 only: Helm 3 sends its
	// post-renderer no hooks.
	hooksDefault, hooksHashed []string
	// helmsDiffer are the workloads whose hash differs between Helm 3 and
	// Helm 4 because the two store a config differently: Helm 4 writes
	// a block scalar that ends its template without a line feed as "|-",
	// Helm 3 keeps the line feed its output adds (docs/helm.md).
	helmsDiffer []string
	// changes are made on top of values; moved names hooks too, which
	// only Helm 4 hashes.
	changes []chartChange
}

// kyvernoValues turn on kyverno's config-consuming parts: a ConfigMap key
// every controller reads, and an image pull Secret every pod reads.
const kyvernoValues = `global:
  extraEnvVars:
    - name: METRICS_NAMESPACES
      valueFrom:
        configMapKeyRef:
          name: web-kyverno-metrics
          key: namespaces
  imagePullSecrets:
    - name: regcred
imagePullSecrets:
  regcred:
    registry: registry.example.com
    username: user
    password: first
`

// ingressValues run ingress-nginx's controller as a DaemonSet that reads
// one key of the controller ConfigMap.
const ingressValues = `controller:
  kind: DaemonSet
  config:
    use-gzip: "true"
  extraEnvs:
    - name: USE_GZIP
      valueFrom:
        configMapKeyRef:
          name: web-ingress-nginx-controller
          key: use-gzip
`

var realCharts = []realChart{
	{
		// A CronJob (a Deployment with kind: Deployment) that mounts its
		// policy ConfigMap and carries checksum/config already.
		name:   "descheduler",
		chart:  chartIn{descheduler, "charts/descheduler"},
		values: "kind: Deployment\n",
		hashed: []string{"CronJob/shop/web-descheduler"}, hashedOn: []string{"Deployment/shop/web-descheduler"},
		changes: []chartChange{
			{[]string{"--set", "deschedulerPolicy.maxNoOfPodsToEvictPerNode=5"}, []string{"Deployment/shop/web-descheduler"}},
			{[]string{"--set", "podAnnotations.team=sched"}, nil},
		},
	},
	{
		// A StatefulSet with checksum/config, a test hook Pod, and a
		// config reloader sidecar and a Secret mount when turned on.
		name:   "alertmanager",
		chart:  chartIn{promCharts, "charts/alertmanager"},
		values: "configmapReload:\n  enabled: true\nextraSecretMounts:\n  - name: certs\n    mountPath: /etc/certs\n    secretName: web-alertmanager-certs\n",
		hashed: []string{"StatefulSet/shop/web-alertmanager"}, hashedOn: []string{"StatefulSet/shop/web-alertmanager"},
		changes: []chartChange{
			{[]string{"--set", "config.global.resolve_timeout=10m"}, []string{"StatefulSet/shop/web-alertmanager"}},
		},
	},
	{
		// A Deployment reading a ConfigMap and two keys of a Secret, with
		// checksum/config and checksum/secret, and test hooks; turned on:
		// env from a rendered Secret, datasources, the dashboards sidecar,
		// env from a ConfigMap of extraObjects. (Not the image renderer:
		// its token is random on every render without a cluster.)
		name:  "grafana",
		chart: chartIn{grafanaCharts, "charts/grafana"},
		args:  []string{"--set", "adminPassword=not-random"},
		values: `envRenderSecret:
  GF_SECURITY_SECRET_KEY: first
datasources:
  datasources.yaml:
    apiVersion: 1
    datasources:
      - name: Prometheus
        type: prometheus
        url: http://prometheus
sidecar:
  dashboards:
    enabled: true
extraObjects:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-grafana-env
    data:
      GF_LOG_LEVEL: debug
envFromConfigMaps:
  - name: web-grafana-env
`,
		hashed: []string{"Deployment/shop/web-grafana"}, hashedOn: []string{"Deployment/shop/web-grafana"},
		changes: []chartChange{
			{[]string{"--set", "envRenderSecret.GF_SECURITY_SECRET_KEY=second"}, []string{"Deployment/shop/web-grafana"}},
			{[]string{"--set", "adminUser=root"}, []string{"Deployment/shop/web-grafana"}},
		},
	},
	{
		// Subcharts from two modules, CRDs in a subchart, pre-install and
		// post-install hook Jobs, a DaemonSet that mounts a ConfigMap of
		// the chart's extraManifests when turned on.
		name:  "kube-prometheus-stack",
		chart: chartIn{promCharts, "charts/kube-prometheus-stack"},
		deps: []chartIn{
			{promCharts, "charts/kube-state-metrics"},
			{promCharts, "charts/prometheus-node-exporter"},
			{promCharts, "charts/prometheus-windows-exporter"},
			{grafanaCharts, "charts/grafana"},
		},
		args: []string{"--set", "grafana.adminPassword=not-random"},
		values: `extraManifests:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-textfiles
    data:
      team.prom: 'team{name="obs"} 1'
prometheus-node-exporter:
  configmaps:
    - name: web-textfiles
      mountPath: /textfiles
`,
		hashed:   []string{"Deployment/shop/web-grafana"},
		hashedOn: []string{"Deployment/shop/web-grafana", "DaemonSet/shop/web-prometheus-node-exporter"},
		changes: []chartChange{
			{[]string{"--set", "grafana.adminUser=root"}, []string{"Deployment/shop/web-grafana"}},
		},
	},
	{
		// Pre-install and post-install hook Jobs, a controller whose pod
		// template has metadata without annotations and that reads a
		// Secret the release does not hold; turned on: a DaemonSet that
		// reads one key of the controller ConfigMap.
		name:     "ingress-nginx",
		chart:    chartIn{ingressNginx, "charts/ingress-nginx"},
		values:   ingressValues,
		hashedOn: []string{"DaemonSet/shop/web-ingress-nginx-controller"},
		changes: []chartChange{
			{[]string{"--set-string", "controller.config.use-gzip=false"}, []string{"DaemonSet/shop/web-ingress-nginx-controller"}},
			{[]string{"--set-string", "controller.config.proxy-body-size=8m"}, nil},
		},
	},
	{
		// 1.9 MB with three CRDs, seven workloads that read keys of
		// argocd-cmd-params-cm and Secrets the release does not hold, a
		// pre-install hook Job; turned on: the redis-ha subchart (another
		// project's module), whose StatefulSet renders its empty
		// annotations as "annotations:" and "{}" on the next line.
		name:   "argo-cd",
		chart:  chartIn{argoHelm, "charts/argo-cd"},
		deps:   []chartIn{{dandyCharts, "charts/redis-ha"}},
		values: "redis-ha:\n  enabled: true\n",
		hashed: []string{
			"Deployment/shop/web-argocd-applicationset-controller", "Deployment/shop/web-argocd-notifications-controller",
			"Deployment/shop/web-argocd-repo-server", "Deployment/shop/web-argocd-server", "Deployment/shop/web-argocd-dex-server",
			"Deployment/shop/web-argocd-redis", "StatefulSet/shop/web-argocd-application-controller",
		},
		hashedOn: []string{
			"Deployment/shop/web-argocd-applicationset-controller", "Deployment/shop/web-argocd-notifications-controller",
			"Deployment/shop/web-argocd-repo-server", "Deployment/shop/web-argocd-server", "Deployment/shop/web-argocd-dex-server",
			"Deployment/shop/web-redis-ha-haproxy", "StatefulSet/shop/web-redis-ha-server", "StatefulSet/shop/web-argocd-application-controller",
		},
		changes: []chartChange{
			{[]string{"--set-string", `configs.params.server\.insecure=true`}, []string{"Deployment/shop/web-argocd-server"}},
		},
	},
	{
		// 3.4 MB, mostly CRDs from a subchart; post-upgrade, pre-delete
		// and post-delete hook Jobs whose pod templates have an empty
		// metadata (metadata: with nothing under it); turned on: every
		// controller reads one key of a ConfigMap of the release, and
		// every pod, hooks included, pulls with a Secret of the release.
		name:        "kyverno",
		chart:       chartIn{kyverno, "charts/kyverno"},
		values:      kyvernoValues,
		hashedOn:    kyvernoControllers,
		hooksHashed: kyvernoHooks,
		changes: []chartChange{
			{[]string{"--set", "metricsConfig.namespaces.exclude={kube-system}"}, kyvernoControllers},
			{[]string{"--set", "imagePullSecrets.regcred.password=second"}, append(slices.Clone(kyvernoControllers), kyvernoHooks...)},
		},
	},
	{
		// A post-install hook Job; turned on: three components, each
		// mounting a ConfigMap of its own that the chart builds by
		// set-ting apiVersion and kind into the values and writing them
		// with toYaml, a block that ends its template without a line
		// feed (so Helm 3's and Helm 4's hashes differ), and a pull
		// Secret that extraObjects renders through tpl, which the chart
		// puts on its ServiceAccounts (the pod specs name it only when
		// the chart creates no ServiceAccount). A common label lands on
		// every object, configs included, and moves no hash.
		name:        "cert-manager",
		chart:       chartIn{certManager, "deploy/charts/cert-manager"},
		values:      certManagerValues,
		hashedOn:    certManagerDeployments,
		hooksHashed: []string{"Job/shop/web-cert-manager-startupapicheck"},
		helmsDiffer: certManagerDeployments,
		changes: []chartChange{
			{[]string{"--set", "config.logging.verbosity=3"}, []string{"Deployment/shop/web-cert-manager"}},
			{[]string{"--set", "cainjector.config.logging.verbosity=3"}, []string{"Deployment/shop/web-cert-manager-cainjector"}},
			{[]string{"--set", "global.commonLabels.team=pki"}, nil},
		},
	},
	{
		// A Secret with metadata only (its annotations "{}" on the next
		// line), which gatekeeper's certificate rotator fills in, mounted
		// by both Deployments and by a post-install hook Job the
		// defaults render, whose pod template's annotations are "{}" on
		// the next line; turned on: a pull Secret the release does not
		// hold, read by the Deployments and a pre-install hook Job.
		name:         "gatekeeper",
		chart:        chartIn{gatekeeper, "charts/gatekeeper"},
		values:       "image:\n  pullSecrets:\n    - name: regcred\n",
		hashed:       gatekeeperDeployments,
		hashedOn:     gatekeeperDeployments,
		hooksDefault: []string{"Job/shop/gatekeeper-update-namespace-label"},
		hooksHashed:  []string{"Job/shop/gatekeeper-update-namespace-label"},
		changes: []chartChange{
			{[]string{"--set", "secretAnnotations.team=policy"}, nil},
		},
	},
	{
		// Turned on: an addon-resizer sidecar that mounts its nanny
		// ConfigMap, and a serving Secret that a cert-manager Certificate
		// of the release writes (external: the render holds no Secret).
		name:     "metrics-server",
		chart:    chartIn{metricsServerChart, "charts/metrics-server"},
		values:   "addonResizer:\n  enabled: true\ntls:\n  type: cert-manager\n",
		hashedOn: []string{"Deployment/shop/web-metrics-server"},
		changes: []chartChange{
			{[]string{"--set", "addonResizer.nanny.cpu=50m"}, []string{"Deployment/shop/web-metrics-server"}},
			{[]string{"--set", "tls.certManager.duration=720h"}, nil},
		},
	},
	{
		// Turned on: a Secret whose values go through tpl, with the
		// chart's own checksum/secret, mounted whole with a subPath that
		// reads one key: another key moves the hash all the same, as
		// the volume has no items.
		name:     "external-dns",
		chart:    chartIn{externalDNS, "charts/external-dns"},
		args:     []string{"--set", "policy=sync"},
		values:   externalDNSValues,
		hashedOn: []string{"Deployment/shop/web-external-dns"},
		changes: []chartChange{
			{[]string{"--set", "secretConfiguration.data.region=eu-west-1"}, []string{"Deployment/shop/web-external-dns"}},
			{[]string{"--set", "txtOwnerId=dns"}, nil},
		},
	},
	{
		// A StatefulSet mounting a config that the chart runs through
		// tpl, and a test hook Pod; turned on: a checksum annotation of
		// the chart's own on that ConfigMap, a CSI provider DaemonSet
		// mounting an agent ConfigMap, and, on OpenShift, the CA bundle
		// ConfigMap the service-ca operator fills in and a service
		// account token Secret, both rendered empty and read by the
		// StatefulSet: external, as the cluster writes their content.
		name:     "vault",
		chart:    chartIn{vaultHelm, "."},
		values:   vaultValues,
		hashed:   []string{"StatefulSet/shop/web-vault"},
		hashedOn: []string{"StatefulSet/shop/web-vault", "DaemonSet/shop/web-vault-csi-provider"},
		changes: []chartChange{
			{[]string{"--set", "server.service.targetPort=8300"}, []string{"StatefulSet/shop/web-vault"}},
			{[]string{"--set", "server.service.port=8300"}, []string{"DaemonSet/shop/web-vault-csi-provider"}},
			{[]string{"--set", "server.includeConfigAnnotation=false"}, nil},
		},
	},
	{
		// Turned on: a projected volume whose sources name three keys of
		// one Secret, each with items, a configMapKeyRef and a ConfigMap
		// volume with items, the configs written by extraManifests
		// through tpl: a key no source lists moves nothing. The chart
		// names no namespace.
		name:     "redis-exporter",
		chart:    chartIn{promCharts, "charts/prometheus-redis-exporter"},
		values:   redisExporterValues,
		hashedOn: []string{"Deployment//web-prometheus-redis-exporter"},
		changes: []chartChange{
			{[]string{"--set", "files.ca=second-ca"}, []string{"Deployment//web-prometheus-redis-exporter"}},
			{[]string{"--set", "files.address=redis://other:6379"}, []string{"Deployment//web-prometheus-redis-exporter"}},
			{[]string{"--set", "files.spare=second-spare"}, nil},
		},
	},
	{
		// Turned on: the file provider's ConfigMap and an inline local
		// plugin's ConfigMap, both mounted; a Secret volume whose name
		// goes through tpl; env from one key of a Secret and envFrom a
		// ConfigMap, all four configs from extraObjects through tpl; and
		// the default TLSStore's certificate Secret, which Traefik reads
		// through the API and no pod spec names: a change of it moves
		// nothing, nor does a common label on every object.
		name:     "traefik",
		chart:    chartIn{traefikChart, "traefik"},
		values:   traefikValues,
		hashedOn: []string{"Deployment/shop/web-traefik"},
		changes: []chartChange{
			{[]string{"--set", "global.shop.cert=second-cert"}, []string{"Deployment/shop/web-traefik"}},
			{[]string{"--set", "global.shop.token=second"}, []string{"Deployment/shop/web-traefik"}},
			{[]string{"--set", "providers.file.content.http.middlewares.headers.headers.customResponseHeaders.X-Team=ops"}, []string{"Deployment/shop/web-traefik"}},
			{[]string{"--set", "global.shop.defaultCert=second-default"}, nil},
			{[]string{"--set", "commonLabels.team=edge"}, nil},
		},
	},
	{
		// 780 kB, mostly CRDs in templates/; with the defaults every
		// Deployment mounts the certificate Secret the operator writes
		// (external, optional for the operator alone). Turned on: that
		// Secret given by extraObjects (certificates.autoGenerated off),
		// read by all three; one key each of a ConfigMap through the
		// operator's and the metrics server's env (tpl'd names); a
		// ConfigMap volume with items on the webhooks; a gRPC Secret the
		// release does not hold. A key no items list moves nothing.
		name:     "keda",
		chart:    chartIn{kedaCharts, "keda"},
		values:   kedaValues,
		hashedOn: kedaDeployments,
		changes: []chartChange{
			{[]string{"--set", "files.operator=debug"}, []string{"Deployment/shop/keda-operator"}},
			{[]string{"--set", "files.metrics=debug"}, []string{"Deployment/shop/keda-operator-metrics-apiserver"}},
			{[]string{"--set", "files.ca=second-ca"}, kedaDeployments},
			{[]string{"--set", "files.notes=second"}, nil},
			{[]string{"--set", "additionalLabels.team=autoscale"}, nil},
		},
	},
	{
		// KEDA's HTTP add-on, with the keda chart of the same module
		// copied into its charts/ (the add-on does not list it: Helm
		// renders every chart there), as one release installing both
		// would; nothing is hashed with the defaults. Turned on: the
		// interceptor's TLS Secret and a ConfigMap volume, both written
		// by the keda subchart's extraObjects, and a pull Secret the
		// release does not hold.
		name:     "http-add-on",
		chart:    chartIn{kedaCharts, "http-add-on"},
		deps:     []chartIn{{kedaCharts, "keda"}},
		values:   httpAddOnValues,
		hashedOn: []string{"Deployment/shop/keda-add-ons-http-interceptor"},
		changes: []chartChange{
			{[]string{"--set", "keda.files.crt=second-cert"}, []string{"Deployment/shop/keda-add-ons-http-interceptor"}},
			{[]string{"--set", "interceptor.podAnnotations.team=edge"}, nil},
		},
	},
}

// redisExporterValues read the Redis address and a script from one
// ConfigMap and three keys of a TLS Secret, whose content the files values
// give.
const redisExporterValues = `files:
  ca: first-ca
  spare: first-spare
  address: redis://redis:6379
redisAddressConfig:
  enabled: true
  source:
    name: web-redis-exporter-env
    key: address
script:
  configmap: web-redis-exporter-env
  keyname: metrics.lua
redisTlsConfig:
  enabled: true
  caCertFile:
    secret:
      name: web-redis-tls
      key: ca.crt
  clientCertFile:
    secret:
      name: web-redis-tls
      key: tls.crt
  clientKeyFile:
    secret:
      name: web-redis-tls
      key: tls.key
extraManifests:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-redis-exporter-env
    data:
      address: '{{ .Values.files.address }}'
      metrics.lua: return {}
  - apiVersion: v1
    kind: Secret
    metadata:
      name: web-redis-tls
    stringData:
      ca.crt: '{{ .Values.files.ca }}'
      tls.crt: client-cert
      tls.key: client-key
      spare.pem: '{{ .Values.files.spare }}'
`

// vaultValues template the server's listener port into its config and turn
// on the CSI provider and OpenShift's service-ca bundle, mounted with the
// token Secret of the server's service account.
const vaultValues = `global:
  openshift: true
server:
  includeConfigAnnotation: true
  standalone:
    config: |-
      ui = true
      listener "tcp" {
        tls_disable = 1
        address = "[::]:{{ .Values.server.service.targetPort }}"
      }
      storage "file" {
        path = "/vault/data"
      }
  serviceCA:
    enabled: true
  volumes:
    - name: service-ca-bundle
      configMap:
        name: service-ca-bundle
  volumeMounts:
    - name: service-ca-bundle
      mountPath: /vault/ca
      readOnly: true
  serviceAccount:
    createSecret: true
  extraSecretEnvironmentVars:
    - envName: VAULT_SA_TOKEN
      secretName: web-vault-token
      secretKey: token
csi:
  enabled: true
`

// certManagerValues give each component a config file and the
// ServiceAccounts a pull Secret of the release, written by a template string
// of extraObjects.
const certManagerValues = `config:
  logging:
    verbosity: 2
webhook:
  config:
    securePort: 10250
cainjector:
  config:
    logging:
      verbosity: 2
global:
  imagePullSecrets:
    - name: web-regcred
extraObjects:
  - |
    apiVersion: v1
    kind: Secret
    metadata:
      name: {{ .Release.Name }}-regcred
    type: kubernetes.io/dockerconfigjson
    stringData:
      .dockerconfigjson: '{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}'
`

// externalDNSValues turn on external-dns's Secret, its path and its value
// templated with the release name.
const externalDNSValues = `secretConfiguration:
  enabled: true
  mountPath: /etc/{{ .Release.Name }}/credentials
  subPath: credentials
  data:
    credentials: |
      [default]
      aws_access_key_id = {{ .Release.Name }}-key
`

// traefikValues turn on traefik's config-consuming parts; the values of
// the configs of extraObjects sit under global, the one place the chart's
// schema lets a value of one's own.
const traefikValues = `global:
  shop:
    cert: first-cert
    token: first
    defaultCert: first-default
providers:
  file:
    enabled: true
    content:
      http:
        middlewares:
          headers:
            headers:
              customResponseHeaders:
                X-Team: edge
experimental:
  localPlugins:
    hello:
      moduleName: github.com/example/hello
      mountPath: /plugins-local/src/github.com/example/hello
      type: inlinePlugin
      source:
        go.mod: |
          module github.com/example/hello
        .traefik.yml: |
          displayName: Hello
          type: middleware
volumes:
  - name: '{{ .Release.Name }}-traefik-certs'
    mountPath: /certs
    type: secret
env:
  - name: HUB_TOKEN
    valueFrom:
      secretKeyRef:
        name: web-traefik-env
        key: token
envFrom:
  - configMapRef:
      name: web-traefik-env
tlsStore:
  default:
    defaultCertificate:
      secretName: web-default-cert
extraObjects:
  - apiVersion: v1
    kind: Secret
    metadata:
      name: '{{ .Release.Name }}-traefik-certs'
    stringData:
      tls.crt: '{{ .Values.global.shop.cert }}'
      tls.key: first-key
  - apiVersion: v1
    kind: Secret
    metadata:
      name: web-traefik-env
    stringData:
      token: '{{ .Values.global.shop.token }}'
      spare: not read
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-traefik-env
    data:
      TRAEFIK_LOG_LEVEL: DEBUG
  - apiVersion: v1
    kind: Secret
    metadata:
      name: web-default-cert
    type: kubernetes.io/tls
    stringData:
      tls.crt: '{{ .Values.global.shop.defaultCert }}'
      tls.key: default-key
`

// kedaValues give KEDA's certificate Secret in the release and have each
// component read a config of extraObjects, whose values come from files.
const kedaValues = `files:
  ca: first-ca
  operator: info
  metrics: info
  notes: first
certificates:
  autoGenerated: false
grpcTLSCertsSecret: web-keda-grpc-certs
operator:
  env:
    - name: KEDA_OPERATOR_LEVEL
      valueFrom:
        configMapKeyRef:
          name: '{{ .Release.Name }}-keda-env'
          key: operator
metricsServer:
  env:
    - name: KEDA_METRICS_LEVEL
      valueFrom:
        configMapKeyRef:
          name: '{{ .Release.Name }}-keda-env'
          key: metrics
volumes:
  webhooks:
    extraVolumes:
      - name: policy
        configMap:
          name: web-keda-webhooks
          items:
            - key: policy.yaml
              path: policy.yaml
    extraVolumeMounts:
      - name: policy
        mountPath: /policy
extraObjects:
  - apiVersion: v1
    kind: Secret
    metadata:
      name: kedaorg-certs
    type: kubernetes.io/tls
    stringData:
      ca.crt: '{{ .Values.files.ca }}'
      tls.crt: first-cert
      tls.key: first-key
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: '{{ .Release.Name }}-keda-env'
    data:
      operator: '{{ .Values.files.operator }}'
      metrics: '{{ .Values.files.metrics }}'
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-keda-webhooks
    data:
      policy.yaml: 'allow: true'
      notes.txt: '{{ .Values.files.notes }}'
`

// httpAddOnValues turn on the interceptor's TLS server and a ConfigMap
// volume, both configs written by the keda subchart.
const httpAddOnValues = `interceptor:
  tls:
    enabled: true
    certSecret: web-interceptor-tls
  extraVolumes:
    - name: routes
      configMap:
        name: web-interceptor-routes
  extraVolumeMounts:
    - name: routes
      mountPath: /routes
  imagePullSecrets:
    - name: regcred
keda:
  files:
    crt: first-cert
  extraObjects:
    - apiVersion: v1
      kind: Secret
      metadata:
        name: '{{ .Release.Name }}-interceptor-tls'
      type: kubernetes.io/tls
      stringData:
        tls.crt: '{{ .Values.files.crt }}'
        tls.key: first-key
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: web-interceptor-routes
      data:
        routes.yaml: 'hosts: [shop.example.com]'
`

var (
	kedaDeployments = []string{
		"Deployment/shop/keda-operator", "Deployment/shop/keda-operator-metrics-apiserver", "Deployment/shop/keda-admission-webhooks",
	}
	certManagerDeployments = []string{
		"Deployment/shop/web-cert-manager", "Deployment/shop/web-cert-manager-cainjector", "Deployment/shop/web-cert-manager-webhook",
	}
	gatekeeperDeployments = []string{"Deployment/shop/gatekeeper-audit", "Deployment/shop/gatekeeper-controller-manager"}
	kyvernoControllers    = []string{
		"Deployment/shop/kyverno-admission-controller", "Deployment/shop/kyverno-background-controller",
		"Deployment/shop/kyverno-cleanup-controller", "Deployment/shop/kyverno-reports-controller",
	}
	kyvernoHooks = []string{
		"Job/shop/web-kyverno-clean-reports", "Job/shop/web-kyverno-migrate-resources",
		"Job/shop/web-kyverno-remove-configmap", "Job/shop/web-kyverno-scale-to-zero",
	}
)

// TestRealCharts renders charts that projects ship, with the real Helm 3
// (bin/confighash as --post-renderer) and Helm 4 (the plugin), with their
// defaults and with values that turn on the parts that consume configs, and
// checks that confighash adds its annotations and nothing else (Helm 3's
// bytes, Helm 4's objects), that verify passes, that each hash is the one
// computed from the objects alone, that Helm 3 and Helm 4 agree, and that a
// changed value moves exactly the hashes of the workloads that read it.
func TestRealCharts(t *testing.T) {
	t.Parallel()
	for _, tc := range realCharts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			chart := realChartCopy(t, tc)
			h3, h4 := realHelm(t, 3), helmWithIdentity(t, 4)
			values := filepath.Join(t.TempDir(), "values.yaml")
			require.NoError(t, os.WriteFile(values, []byte(tc.values), 0o644))
			t.Run("defaults", func(t *testing.T) {
				checkRealRender(t, h3, h4, chart, tc.hashed, tc.hooksDefault, tc.helmsDiffer, tc.args)
			})
			on := append(slices.Clone(tc.args), "--values", values)
			base3, base4, _, _ := checkRealRender(t, h3, h4, chart, tc.hashedOn, tc.hooksHashed, tc.helmsDiffer, on)
			for _, c := range tc.changes {
				t.Run("change "+strings.Join(c.args[1:], " "), func(t *testing.T) {
					args := append(slices.Clone(on), c.args...)
					assertMoved(t, "helm3", base3, testtools.PodHashes(t, configsAndWorkloads(realTemplate(t, h3, chart, true, args...))), c.moved)
					assertMoved(t, "helm4", base4, testtools.PodHashes(t, configsAndWorkloads(realTemplate(t, h4, chart, true, args...))), c.moved)
				})
			}
		})
	}
}

// realChartCopy copies the row's chart out of the read-only module cache,
// and its subcharts into its charts/ folder.
func realChartCopy(t *testing.T, tc realChart) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(tc.chart.path))
	require.NoError(t, testtools.CopyTree(filepath.Join(testtools.ModuleDir(t, tc.chart.module), tc.chart.path), dst, nil))
	for _, d := range tc.deps {
		to := filepath.Join(dst, "charts", filepath.Base(d.path))
		require.NoError(t, testtools.CopyTree(filepath.Join(testtools.ModuleDir(t, d.module), d.path), to, nil))
	}
	return dst
}

// realHelm is bin/helm3, or bin/helm4 with postrenderer/plugin installed,
// running bin/confighash.
func realHelm(t *testing.T, version int) testtools.Helm {
	t.Helper()
	h := testtools.NewHelm(t, version)
	h.Env = append(h.Env, "CONFIGHASH_BIN="+testtools.Tool(t, "confighash"))
	if version == 4 {
		h.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
	}
	return h
}

// realTemplate runs helm template on chart, with confighash as the
// post-renderer when post is set, as docs/helm.md says.
func realTemplate(t *testing.T, h testtools.Helm, chart string, post bool, args ...string) string {
	t.Helper()
	return h.MustRun(t, realTemplateArgs(t, h, chart, post, args...)...)
}

// realTemplateArgs are realTemplate's arguments to h. --post-renderer
// names the binary for Helm 3 and the plugin for Helm 4.
func realTemplateArgs(t *testing.T, h testtools.Helm, chart string, post bool, args ...string) []string {
	t.Helper()
	all := append([]string{"template", "web", chart, "--namespace", realNamespace, "--kube-version", realKubeVersion}, args...)
	if post {
		pr := "confighash"
		if h.Version == 3 {
			pr = testtools.Tool(t, "confighash")
		}
		all = append(all, "--post-renderer", pr, "--post-renderer-args=--namespace="+realNamespace)
	}
	return all
}

// checkRealRender renders chart with args four ways (each Helm, with and
// without confighash; Helm 4 without it through the identity plugin, as
// Helm 4 writes every document anew around any post-renderer), checks the
// renders against each other and against an independent computation, and
// returns each Helm's hashes and its render with confighash. hashed are the
// workloads hashed by both Helms, hooks those hashed by Helm 4 only.
func checkRealRender(t *testing.T, h3, h4 testtools.Helm, chart string, hashed, hooks, differ, args []string) (hashes3, hashes4 map[string]string, post3, post4 string) {
	t.Helper()
	hashes3, hashes4, post3, post4 = checkRenders(t, h3, h4, chart, differ, args)
	assert.Equal(t, slices.Sorted(slices.Values(hashed)), slices.Sorted(maps.Keys(hashes3)), "helm3: hashed workloads")
	assert.Equal(t, slices.Sorted(slices.Values(append(slices.Clone(hashed), hooks...))), slices.Sorted(maps.Keys(hashes4)), "helm4: hashed workloads")
	return hashes3, hashes4, post3, post4
}

// checkRenders is checkRealRender without the lists of hashed workloads:
// which workloads get a hash is held to the independent computation only.
func checkRenders(t *testing.T, h3, h4 testtools.Helm, chart string, differ, args []string) (hashes3, hashes4 map[string]string, post3, post4 string) {
	t.Helper()
	plain3 := realTemplate(t, h3, chart, false, args...)
	post3 = realTemplate(t, h3, chart, true, args...)
	plain4 := realTemplate(t, h4, chart, false, append(slices.Clone(args), "--post-renderer", "identity")...)
	post4 = realTemplate(t, h4, chart, true, args...)

	// Helm 3 prints the post-renderer's bytes: only confighash's lines
	// are new. Helm 4 writes every document anew: the same objects.
	if d := onlyInsertedLines(plain3, post3); d != "" {
		t.Errorf("helm3: the render differs from the one without confighash in more than its annotations: %s", d)
	}
	assert.Equal(t, realObjects(t, plain4), realObjects(t, post4), "helm4: the objects differ from the render without confighash in more than its annotations")

	// Verify what each Helm sent: Helm 3 installs its hooks as rendered,
	// and a hook config Helm 4 does not create on install and on upgrade
	// is one the post-renderer left external (docs/helm.md).
	for _, out := range []struct{ name, stream string }{{"helm3", helmSends(t, post3, 3, true)}, {"helm4", helmSends(t, post4, 4, true)}} {
		if out.stream == "" {
			continue // only hooks, which Helm 3 does not send: verify refuses an empty stream
		}
		res := testtools.Run(t, "", nil, []byte(out.stream), testtools.Tool(t, "confighash"), "verify", "--namespace", realNamespace)
		assert.Zero(t, res.ExitCode, "%s: confighash verify: %s", out.name, res.Stderr)
	}

	// Helm 3 sends no hooks; Helm 4 sends them all, and hashes a hook
	// config only when Helm creates it on install and on upgrade.
	assertIndependent(t, "helm3", helmSends(t, post3, 3, false))
	assertIndependent(t, "helm4", helmSends(t, post4, 4, false))
	hashes3, hashes4 = testtools.PodHashes(t, configsAndWorkloads(post3)), testtools.PodHashes(t, configsAndWorkloads(post4))
	confighash := testtools.Tool(t, "confighash")
	krm3 := testtools.RunKRM(t, confighash, helmSends(t, plain3, 3, false), realNamespace)
	krm4 := testtools.RunKRM(t, confighash, helmSends(t, plain4, 4, false), realNamespace)
	assert.Equal(t, testtools.PodHashes(t, krm3), namespaced(hashes3), "helm3: the KRM function's hashes")
	assert.Equal(t, testtools.PodHashes(t, krm4), namespaced(hashes4), "helm4: the KRM function's hashes")
	for id, h := range hashes3 {
		if slices.Contains(differ, id) {
			assert.NotEqual(t, h, hashes4[id], "%s: Helm 3 and Helm 4 hashes of configs the two store differently", id)
		} else {
			assert.Equal(t, h, hashes4[id], "%s: Helm 3 and Helm 4 hashes", id)
		}
	}
	// Helm 3 sends no hooks, so only the other workloads' lists compare.
	assert.Equal(t, externals(t, helmSends(t, post3, 3, false)), externals(t, helmSends(t, post4, 3, false)), "Helm 3 and Helm 4 external lists")
	return hashes3, hashes4, post3, post4
}

// realInserted are the lines confighash adds to a document: its
// annotations, and the keys that hold them where a template had none.
var realInserted = regexp.MustCompile(`^\s*(confighash\.dev/(hash|external): \S+|annotations:|metadata:)$`)

// onlyInsertedLines returns "" when post is plain with lines matching
// realInserted added, and empty maps that now hold them filled ("key: {}"
// written "key:", a "{}" line replaced), else where they part.
func onlyInsertedLines(plain, post string) string {
	a, b := strings.Split(plain, "\n"), strings.Split(post, "\n")
	i := 0
	for j, line := range b {
		switch {
		case i < len(a) && a[i] == line:
			i++
		case i < len(a) && realInserted.MatchString(line) &&
			(strings.TrimSpace(a[i]) == "{}" || strings.TrimSuffix(strings.TrimRight(a[i], " "), " {}") == line):
			i++
		case realInserted.MatchString(line):
		default:
			return fmt.Sprintf("at output line %d: %q", j+1, line)
		}
	}
	if i < len(a) {
		return fmt.Sprintf("input line %d missing: %q", i+1, a[i])
	}
	return ""
}

// realObjects returns each object of a stream as JSON, without confighash's
// annotations and with an empty pod template metadata left out.
func realObjects(t *testing.T, stream string) []string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		stripConfighash(t, n)
		for _, path := range [][]string{{"spec", "template"}, {"spec", "jobTemplate", "spec", "template"}} {
			tpl, err := n.Pipe(kyaml.Lookup(path...))
			require.NoError(t, err)
			if tpl == nil || tpl.YNode().Kind != kyaml.MappingNode {
				continue
			}
			stripConfighash(t, tpl)
			if md := tpl.Field("metadata"); md != nil && (kyaml.IsMissingOrNull(md.Value) || len(md.Value.YNode().Content) == 0) {
				require.NoError(t, tpl.PipeE(kyaml.Clear("metadata")))
			}
		}
		out = append(out, string(nodeJSON(t, n)))
	}
	return out
}

// stripConfighash removes confighash's annotations from n's metadata, and
// the annotations that only held them.
func stripConfighash(t *testing.T, n *kyaml.RNode) {
	t.Helper()
	for k := range n.GetAnnotations() {
		if strings.HasPrefix(k, "confighash.dev/") {
			require.NoError(t, n.PipeE(kyaml.ClearAnnotation(k)))
		}
	}
	require.NoError(t, kyaml.ClearEmptyAnnotations(n))
}

// helmSends returns the objects of a render that Helm hands its
// post-renderer, in the release namespace where they name none: Helm 3
// leaves the hooks out; Helm 4 sends them, and confighash hashes a hook
// config only when Helm creates it on install and on upgrade. Unless all is
// set, it returns only the ConfigMaps, Secrets and workloads: the hashes
// depend on them alone, and the CRDs of these charts would only slow the
// checks. Each document keeps its text (writing it anew through kyaml adds
// blank lines to a folded block with a tab-led line, and changes its value):
// a missing namespace is a line added under metadata.
func helmSends(t *testing.T, stream string, version int, all bool) string {
	t.Helper()
	if !all {
		stream = configsAndWorkloads(stream)
	}
	var b strings.Builder
	for _, d := range strings.Split("\n"+stream, "\n---\n") {
		nodes, err := kio.FromBytes([]byte(d))
		require.NoError(t, err)
		if len(nodes) != 1 {
			require.Empty(t, nodes, "more than one object in a document: %s", d)
			continue // comments only
		}
		n := nodes[0]
		hook, isHook := n.GetAnnotations()["helm.sh/hook"]
		isConfig := n.GetKind() == "ConfigMap" || n.GetKind() == "Secret"
		if isHook && (version == 3 || isConfig && !installAndUpgrade(hook)) {
			continue
		}
		if n.GetNamespace() == "" {
			d = withNamespace(t, n, d)
		}
		b.WriteString("---\n" + strings.TrimPrefix(d, "\n"))
		if !strings.HasSuffix(d, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// metadataLine finds a block-style metadata key at the top of a document and
// the line after it.
var metadataLine = regexp.MustCompile(`(?m)^metadata:[ \t]*\r?\n([ ]+)\S`)

// withNamespace returns doc, the text of n, with the release namespace added
// under its metadata: a line at the indentation of the next one, or, for a
// metadata that is not written so (flow style), n written anew.
func withNamespace(t *testing.T, n *kyaml.RNode, doc string) string {
	t.Helper()
	if m := metadataLine.FindAllStringSubmatchIndex(doc, -1); len(m) == 1 {
		at := m[0][2] // the start of the next line
		return doc[:at] + doc[m[0][2]:m[0][3]] + "namespace: " + realNamespace + "\n" + doc[at:]
	}
	require.NoError(t, n.SetNamespace(realNamespace))
	s, err := n.String()
	require.NoError(t, err)
	return s
}

// hashInputs are the kinds a hash depends on in these charts: the configs
// and the kinds with a pod template.
var hashInputs = map[string]bool{
	"ConfigMap": true, "Secret": true,
	"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Job": true, "CronJob": true,
}

// topKind finds the kind of a block-style document.
var topKind = regexp.MustCompile(`(?m)^kind:[ \t]*["']?(\w+)["']?[ \t]*$`)

// configsAndWorkloads leaves out of a stream, before anything parses it,
// the documents whose kind is none of hashInputs: 3 MB of CRDs would only
// slow the checks.
func configsAndWorkloads(stream string) string {
	var b strings.Builder
	for _, d := range testtools.Documents(stream) {
		if m := topKind.FindStringSubmatch(d); m == nil || hashInputs[m[1]] {
			b.WriteString("---\n" + d + "\n")
		}
	}
	return b.String()
}

// installAndUpgrade tells whether a hook annotation names an install and an
// upgrade event.
func installAndUpgrade(hook string) bool {
	events := strings.Split(strings.ReplaceAll(hook, " ", ""), ",")
	return (slices.Contains(events, "pre-install") || slices.Contains(events, "post-install")) &&
		(slices.Contains(events, "pre-upgrade") || slices.Contains(events, "post-upgrade"))
}

// assertIndependent checks the hash and external list of each workload in
// what Helm sent against independentHashes (typed reads and the hashing
// package, not confighash's filter).
func assertIndependent(t *testing.T, name, sent string) {
	t.Helper()
	for id, r := range independentHashes(t, sent) {
		assert.Equal(t, r.want, r.hash, "%s: %s hash", name, id)
		assert.Equal(t, r.wantExternal, r.external, "%s: %s external", name, id)
	}
}

// namespaced keys hashes as PodHashes does a stream whose objects all name
// their namespace.
func namespaced(hashes map[string]string) map[string]string {
	out := map[string]string{}
	for id, h := range hashes {
		kind, rest, _ := strings.Cut(id, "/")
		if ns, name, _ := strings.Cut(rest, "/"); ns == "" {
			id = kind + "/" + realNamespace + "/" + name
		}
		out[id] = h
	}
	return out
}

// externals returns the confighash.dev/external annotation of each object.
func externals(t *testing.T, stream string) map[string]string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	out := map[string]string{}
	for _, n := range nodes {
		if e := n.GetAnnotations()["confighash.dev/external"]; e != "" {
			out[n.GetKind()+"/"+n.GetNamespace()+"/"+n.GetName()] = e
		}
	}
	return out
}

// assertMoved checks that exactly the moved workloads' hashes changed, of
// those hashed.
func assertMoved(t *testing.T, name string, before, after map[string]string, moved []string) {
	t.Helper()
	require.Equal(t, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)), "%s: hashed workloads", name)
	moved = slices.DeleteFunc(slices.Clone(moved), func(id string) bool { return before[id] == "" })
	var got []string
	for id, h := range before {
		if after[id] != h {
			got = append(got, id)
		}
	}
	assert.Equal(t, slices.Sorted(slices.Values(moved)), slices.Sorted(slices.Values(got)), "%s: workloads whose hash moved", name)
}
