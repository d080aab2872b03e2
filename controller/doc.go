// Package controller is the in-cluster side of confighash: a controller-runtime
// controller that rolls a Deployment, StatefulSet, DaemonSet, CronJob or Argo
// Rollout when a ConfigMap or Secret it consumes is edited out of band, and
// never when a GitOps tool re-applies an unchanged render.
//
// It caches ConfigMaps and Secrets as per-key digests (Transform), indexes
// workloads by the configs they consume (an index the workload event
// handlers keep), recomputes the render-time hash with package hashing, and
// decides with the pure function Decide; Reconciler does the I/O.
// docs/controller.md explains the decision, the annotations, the flags and
// the metrics.
package controller
