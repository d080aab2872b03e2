package postrenderer

import (
	"bytes"
	"fmt"
	"io"

	"github.com/confighash/confighash/internal/inject"
)

// Options configure a PostRenderer. The zero value hashes with the defaults.
type Options struct {
	// Namespace is the release namespace: the namespace of the objects that
	// name none. Helm does not tell a post-renderer the namespace of -n, and
	// the hash covers it, so pass it.
	Namespace string
	// AnnotationPrefix replaces confighash.dev in the annotation keys.
	AnnotationPrefix string
	// HMACKey switches the hash to HMAC-SHA256 under this key (keyed mode,
	// hashing/HASHING.md section 5); nil or empty means the plain hash.
	HMACKey []byte
	// Workloads adds pod template locations for kinds confighash does not
	// know (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
	// Argo Rollout, OpenShift DeploymentConfig and ReplicationController are
	// built in).
	Workloads []Workload
	// Warnings, when set, receives one line per warning (a workload that
	// consumes a config the release does not contain, say); nil drops them.
	Warnings io.Writer
}

// Workload names where the pod template of another kind lives.
type Workload struct {
	// Group is the API group ("" for the core group), Kind the kind.
	Group, Kind string
	// Path is the slash-separated field path to the pod template, like
	// spec/template.
	Path string
}

// PostRenderer hashes the ConfigMaps and Secrets each workload of a rendered
// release consumes into its pod template. Its Run method has the signature of
// the Helm SDK's post-renderer interface (Helm 3 pkg/postrender.PostRenderer,
// Helm 4 pkg/postrenderer.PostRenderer), so a *PostRenderer can be set as
// action.Install's or action.Upgrade's PostRenderer.
type PostRenderer struct {
	opts     inject.Options
	warnings io.Writer
}

// New returns a PostRenderer, or an error naming the option that is invalid.
func New(o Options) (*PostRenderer, error) {
	opts := inject.Options{Prefix: o.AnnotationPrefix, Key: o.HMACKey, DefaultNamespace: o.Namespace}
	for _, w := range o.Workloads {
		opts.Workloads = append(opts.Workloads, inject.WorkloadKind{Group: w.Group, Kind: w.Kind, Path: w.Path})
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &PostRenderer{opts: opts, warnings: o.Warnings}, nil
}

// Run hashes the rendered manifests and returns them with only confighash's
// annotation lines added or changed. On error it returns no manifests; the
// error names the document.
func (p *PostRenderer) Run(renderedManifests *bytes.Buffer) (*bytes.Buffer, error) {
	out, err := p.process(renderedManifests.Bytes())
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out.bytes()), nil
}

// Render hashes input as Run does and writes the result to w. Nothing is
// written unless the whole stream succeeds. It writes the unedited runs of
// input as they are, without joining the output into one new slice first,
// so input must not change until it returns.
func (p *PostRenderer) Render(input []byte, w io.Writer) error {
	out, err := p.process(input)
	if err != nil {
		return err
	}
	return out.writeTo(w)
}

// process hashes input and writes the findings worth a warning.
func (p *PostRenderer) process(input []byte) (output, error) {
	out, report, err := process(input, p.opts)
	if err != nil {
		return output{}, err
	}
	if p.warnings != nil {
		for _, f := range report.Findings {
			if f.Severity != inject.SeverityInfo {
				if _, err := fmt.Fprintf(p.warnings, "confighash: %s\n", f); err != nil {
					return output{}, err
				}
			}
		}
	}
	return out, nil
}
