package controlplane

// WithFirstPorts returns o with ports the first start of etcd and
// kube-apiserver is given in place of picked ones (0: picked as usual), so
// that a test holding them sees Start pick again.
func WithFirstPorts(o Options, etcd, apiServer int) Options {
	o.firstPorts.etcd, o.firstPorts.apiServer = etcd, apiServer
	return o
}
