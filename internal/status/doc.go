// Package status reports, from a live cluster, whether each workload the
// confighash controller manages runs the configuration it should: what it
// consumes, the render-time and controller hashes, whether its pod template
// is current for the live ConfigMaps and Secrets (decided with the
// controller's own controller.Decide over the same inputs), whether its
// rollout finished, how many pods still run an older template, and the last
// ConfigChanged Event. It backs `kubectl confighash status` (and
// `confighash status`, which runs that plugin so that bin/confighash links
// no Kubernetes client).
package status
