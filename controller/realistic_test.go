package controller_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// realisticRefs are the configs one realistic workload consumes: key
// LOG_LEVEL (and OTHER through a projection) of ConfigMap Env, all of
// ConfigMap Files as a volume, keys password (env) and user (projection)
// of Secret Creds, Secret Registry as an image pull secret and, optionally
// and absent, all of ConfigMap Cluster through envFrom.
type realisticRefs struct {
	Env, Files, Creds, Registry, Cluster string
}

// realisticPodSpec is a pod spec shaped like a chart's output: an init
// container and two containers (the application and a proxy) with 22 env
// entries (4 from a ConfigMap or Secret key, the rest values, field and
// resource references), probes, resources, ports and mounts; node and pod
// affinity, tolerations, security contexts; six volumes of which two carry
// config (one a projection of a Secret, a ConfigMap, a token and the
// downward API). About 10 KB as the API server returns a Deployment of it,
// managedFields included. i varies the names and values.
func realisticPodSpec(i int, r realisticRefs) corev1.PodSpec {
	env := func(n int, prefix string) []corev1.EnvVar {
		out := make([]corev1.EnvVar, 0, n)
		for k := range n {
			out = append(out, corev1.EnvVar{Name: fmt.Sprintf("%s_SETTING_%02d", prefix, k), Value: fmt.Sprintf("value-%d-%d", i, k)})
		}
		return out
	}
	cmKey := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	secretKey := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	probe := func(path string, port int) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(port), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds:    10,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		}
	}
	secCtx := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	mainEnv := append(env(8, "APP"),
		corev1.EnvVar{Name: "LOG_LEVEL", ValueFrom: cmKey(r.Env, "LOG_LEVEL")},
		corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: secretKey(r.Creds, "password")},
		corev1.EnvVar{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		corev1.EnvVar{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: "app", Resource: "limits.memory"}}},
	)
	sidecarEnv := append(env(4, "PROXY"), corev1.EnvVar{Name: "LOG_LEVEL", ValueFrom: cmKey(r.Env, "LOG_LEVEL")})
	initEnv := append(env(3, "MIGRATE"), corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: secretKey(r.Creds, "password")})
	mounts := []corev1.VolumeMount{
		{Name: "files", MountPath: "/etc/app", ReadOnly: true},
		{Name: "creds", MountPath: "/var/run/creds", ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "cache", MountPath: "/var/cache/app"},
	}
	return corev1.PodSpec{
		ServiceAccountName:            "app",
		TerminationGracePeriodSeconds: ptr.To(int64(45)),
		PriorityClassName:             "",
		NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
		ImagePullSecrets:              []corev1.LocalObjectReference{{Name: r.Registry}},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser: ptr.To(int64(10001)), RunAsGroup: ptr.To(int64(10001)), FSGroup: ptr.To(int64(10001)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: []corev1.Container{{
			Name: "migrate", Image: fmt.Sprintf("registry.invalid/shop/migrate:1.%d.0", i%50),
			Command: []string{"/bin/migrate", "--database", "postgres", "--wait", "60s"},
			Env:     initEnv, Resources: res("50m", "64Mi"),
			VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/var/run/creds", ReadOnly: true}},
		}},
		Containers: []corev1.Container{
			{
				Name: "app", Image: fmt.Sprintf("registry.invalid/shop/app:1.%d.0", i%50),
				Args:  []string{"serve", "--config", "/etc/app/config.yaml", "--listen", ":8080"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env:   mainEnv,
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: r.Cluster}, Optional: ptr.To(true)}}},
				Resources:       res("250m", "512Mi"),
				LivenessProbe:   probe("/healthz", 8080),
				ReadinessProbe:  probe("/readyz", 8080),
				VolumeMounts:    mounts,
				SecurityContext: secCtx,
			},
			{
				Name: "proxy", Image: "registry.invalid/mesh/proxy:2.4.1",
				Ports:           []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}},
				Env:             sidecarEnv,
				Resources:       res("100m", "128Mi"),
				ReadinessProbe:  probe("/ready", 15000),
				SecurityContext: secCtx,
				VolumeMounts:    []corev1.VolumeMount{{Name: "proxy-config", MountPath: "/etc/proxy"}},
			},
		},
		Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge", "m6i.large"}},
				}}},
			}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
					TopologyKey:   "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": fmt.Sprint("shop-", i)}},
				},
			}}},
		},
		Tolerations: []corev1.Toleration{
			{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "shop", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
		},
		Volumes: []corev1.Volume{
			{Name: "files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: r.Files}, DefaultMode: ptr.To(int32(0o444))}}},
			{Name: "creds", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: r.Creds},
					Items: []corev1.KeyToPath{{Key: "user", Path: "user.txt"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: r.Env},
					Items: []corev1.KeyToPath{{Key: "OTHER", Path: "other.txt"}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To(int64(3600)), Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
			}}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("64Mi"))}}},
			{Name: "proxy-config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}}}}},
		},
	}
}

// realisticLabels are a chart's standard labels.
func realisticLabels(name string, i int) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "shop",
		"app.kubernetes.io/instance":   name,
		"app.kubernetes.io/version":    fmt.Sprintf("1.%d.0", i%50),
		"app.kubernetes.io/component":  "server",
		"app.kubernetes.io/part-of":    "shop",
		"app.kubernetes.io/managed-by": "Helm",
		"helm.sh/chart":                fmt.Sprintf("shop-2.%d.0", i%50),
	}
}

// realisticWorkload wraps a realistic pod spec in a workload of kind
// (Deployment, StatefulSet or DaemonSet) named name, with zero replicas
// where the kind has them, chart labels and Helm's release annotations,
// and tmplAnn on its pod template.
func realisticWorkload(kind, name string, i int, spec corev1.PodSpec, meta, tmplAnn map[string]string) client.Object {
	labels := realisticLabels(name, i)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": name}}
	ann := map[string]string{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": "shop"}
	for k, v := range meta {
		ann[k] = v
	}
	om := metav1.ObjectMeta{Name: name, Labels: labels, Annotations: ann}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: tmplAnn}, Spec: spec}
	switch kind {
	case "StatefulSet":
		return &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: kind}, ObjectMeta: om, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(0)), Selector: selector, ServiceName: name, Template: tmpl,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "state"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
			}},
		}}
	case "DaemonSet":
		return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: kind}, ObjectMeta: om, Spec: appsv1.DaemonSetSpec{
			Selector: selector, Template: tmpl,
		}}
	default:
		return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: om, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(0)), Selector: selector, Template: tmpl, RevisionHistoryLimit: ptr.To(int32(3)),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}},
		}}
	}
}
