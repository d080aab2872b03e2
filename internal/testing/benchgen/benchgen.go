// Package benchgen generates the benchmark stream: many Deployments, each
// consuming a ConfigMap (whole, or some keys) and sometimes a Secret, with
// realistic, deterministic payloads.
package benchgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Spec sizes a generated stream.
type Spec struct {
	Deployments, ConfigMaps, Secrets int
	// ConfigMapBytes is the approximate payload of each ConfigMap.
	ConfigMapBytes int
}

// Default is the stream: 2,000 Deployments, 2,000 ConfigMaps and
// 500 Secrets, about 15 MB.
var Default = Spec{Deployments: 2000, ConfigMaps: 2000, Secrets: 500, ConfigMapBytes: 6000}

// Scale returns the spec with every count multiplied by n.
func (s Spec) Scale(n int) Spec {
	return Spec{Deployments: s.Deployments * n, ConfigMaps: s.ConfigMaps * n, Secrets: s.Secrets * n, ConfigMapBytes: s.ConfigMapBytes}
}

// Stream returns the spec as a plain multi-document YAML stream.
func Stream(s Spec) []byte {
	var b strings.Builder
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < s.ConfigMaps; i++ {
		writeConfigMap(&b, r, i, s.ConfigMapBytes)
	}
	for i := 0; i < s.Secrets; i++ {
		writeSecret(&b, r, i)
	}
	for i := 0; i < s.Deployments; i++ {
		writeDeployment(&b, i, s)
	}
	return []byte(b.String())
}

// ResourceList returns the same objects wrapped in a KRM ResourceList.
func ResourceList(s Spec) []byte {
	docs := strings.Split(strings.TrimPrefix(string(Stream(s)), "---\n"), "---\n")
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for _, d := range docs {
		lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
		for j, l := range lines {
			if j == 0 {
				b.WriteString("- " + l + "\n")
			} else {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	return []byte(b.String())
}

const words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa"

func writeConfigMap(b *strings.Builder, r *rand.Rand, i, size int) {
	fmt.Fprintf(b, "---\n# generated config %d\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-%d\n  namespace: ns-%d\n  labels:\n    app: app-%d\n    app.kubernetes.io/part-of: bench\ndata:\n", i, i, i%20, i)
	fmt.Fprintf(b, "  LOG_LEVEL: info\n  FEATURE_%d: \"true\"\n  app.yaml: |\n", i)
	w := strings.Fields(words)
	for written := 0; written < size; {
		line := fmt.Sprintf("    %s_%d: %s %d\n", w[r.IntN(len(w))], written, w[r.IntN(len(w))], r.IntN(100000))
		b.WriteString(line)
		written += len(line)
	}
}

func writeSecret(b *strings.Builder, r *rand.Rand, i int) {
	fmt.Fprintf(b, "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-%d\n  namespace: ns-%d\ntype: Opaque\ndata:\n", i, i%20)
	for k := 0; k < 8; k++ {
		fmt.Fprintf(b, "  key-%d: %s\n", k, base64Of(r, 48))
	}
	fmt.Fprintf(b, "stringData:\n  password: pw-%d\n", r.IntN(1_000_000))
}

func base64Of(r *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[r.IntN(64)]
	}
	return string(out)
}

func writeDeployment(b *strings.Builder, i int, s Spec) {
	cm := i % max(s.ConfigMaps, 1)
	fmt.Fprintf(b, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%d
  namespace: ns-%d
  labels:
    app: app-%d
spec:
  replicas: 2
  selector:
    matchLabels:
      app: app-%d
  template:
    metadata:
      labels:
        app: app-%d
    spec:
      containers:
      - name: app
        image: registry.example.com/app:%d
        args: ["--config", "/etc/app/app.yaml"]
        ports:
        - containerPort: 8080
        resources:
          requests: {cpu: 100m, memory: 128Mi}
        env:
        - name: LOG_LEVEL
          valueFrom:
            configMapKeyRef:
              name: config-%d
              key: LOG_LEVEL
        volumeMounts:
        - name: config
          mountPath: /etc/app
`, i, cm%20, i, i, i, i, cm)
	if s.Secrets > 0 && i%4 == 0 {
		fmt.Fprintf(b, "        envFrom:\n        - secretRef:\n            name: secret-%d\n", i%s.Secrets)
	}
	fmt.Fprintf(b, "      volumes:\n      - name: config\n        configMap:\n          name: config-%d\n", cm)
}
