// Package fn is the confighash KRM function: it reads a ResourceList, loads
// the functionConfig (none, a kpt-style ConfigMap, or a ConfigHash object),
// runs the shared inject filter, and reports what it found as KRM results.
// It is an adapter only; the work is in internal/inject.
package fn
