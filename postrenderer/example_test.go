package postrenderer_test

import (
	"bytes"
	"fmt"
	"os"

	"github.com/confighash/confighash/postrenderer"
)

// A post-renderer for the Helm SDK: set it as action.Install's or
// action.Upgrade's PostRenderer (examples/helm-sdk does), or call Run on any
// rendered stream.
func ExamplePostRenderer_Run() {
	pr, err := postrenderer.New(postrenderer.Options{Namespace: "shop", Warnings: os.Stdout})
	if err != nil {
		panic(err)
	}
	rendered := bytes.NewBufferString(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  LOG_LEVEL: info
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0
        envFrom:
        - configMapRef: {name: app}
`)
	out, err := pr.Run(rendered)
	if err != nil {
		panic(err)
	}
	fmt.Print(out.String()[bytes.Index(out.Bytes(), []byte("kind: Deployment")):])
	// Output:
	// kind: Deployment
	// metadata:
	//   name: web
	// spec:
	//   selector:
	//     matchLabels: {app: web}
	//   template:
	//     metadata:
	//       annotations:
	//         confighash.dev/hash: v1-sha256:f05372063aa22a99ea59cbbabdc4655f2553f9e9a6f6ef107104dcf73a0ec802
	//       labels: {app: web}
	//     spec:
	//       containers:
	//       - name: web
	//         image: registry.example/web:1.0
	//         envFrom:
	//         - configMapRef: {name: app}
}
