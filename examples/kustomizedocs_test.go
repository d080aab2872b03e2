package examples_test

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// docsTree is one row of TestKustomizeDocs: a tree under
// testdata/kustomize/docs written after a pattern kustomize's own examples
// teach.
type docsTree struct {
	name, tree, build string
	// verify are the flags verify needs: the functionConfig's workloads.
	verify []string
	// workloads are every workload of the render (Kind/namespace/name)
	// and the external list it carries ("" when it reads nothing from
	// outside the render); every one hashes something of the render.
	workloads map[string]string
	// optedOut are the workloads among them that opt out
	// (confighash.dev/enabled: "false"): they carry none of confighash's
	// annotations and hash nothing.
	optedOut []string
	// changes edit an input of a config (paths relative to the tree).
	changes []treeChange
}

var docsTrees = []docsTree{
	{
		// examples/multibases with the base itself among the variants, as
		// a canary is often written: two candidates once named app, told
		// apart only after the function ran, by the hash suffix step; the
		// plain ConfigMap settings, renamed in the canary only, is what
		// kustomize points both Deployments at.
		name: "a base next to a prefixed variant of itself", tree: "canary", build: ".",
		workloads: map[string]string{"Deployment//web": "", "Deployment//canary-web": ""},
		changes: []treeChange{
			{file: "canary/kustomization.yaml", old: "COLOR=green", new: "COLOR=red",
				moved: []string{"Deployment//canary-web"}},
			{file: "base/kustomization.yaml", old: "COLOR=blue", new: "COLOR=black",
				moved: []string{"Deployment//web"}},
			{file: "base/kustomization.yaml", old: "password=first", new: "password=second",
				moved: []string{"Deployment//web", "Deployment//canary-web"}},
			{file: "canary/kustomization.yaml", old: "timeout=5", new: "timeout=9",
				moved: []string{"Deployment//web", "Deployment//canary-web"}},
		},
	},
	{
		// A build next to a prefixed variant of it (the canary above, one
		// level down), and a reader at the top naming the inner build's
		// generated config by its prefixed name: two configs were once
		// named so, neither with the reader's prefixes (none), and
		// kustomize leaves the reference to a name no object has.
		name: "a reference to a prefixed name two variants once had", tree: "prefixedname", build: ".",
		workloads: map[string]string{"Deployment//team-web": "", "Deployment//canary-team-web": "", "Deployment//reader": "ConfigMap/team-app"},
		changes: []treeChange{
			{file: "base/kustomization.yaml", old: "GREETING=hello", new: "GREETING=hi",
				moved: []string{"Deployment//team-web", "Deployment//canary-team-web"}},
			{file: "reader.yaml", old: "MODE: strict", new: "MODE: lax", moved: []string{"Deployment//reader"}},
		},
	},
	{
		// examples/wordpress: two bases under one prefix, a patch adding an
		// init container, vars in a command; a Secret read by key through
		// a projected volume, an init container's env, and another
		// workload; an image pull Secret from outside the render.
		name: "wordpress: two bases, an init container, projected volumes", tree: "wordpress", build: ".",
		workloads: map[string]string{"Deployment//demo-wordpress": "Secret/regcred", "StatefulSet//demo-mysql": ""},
		changes: []treeChange{
			{file: "mysql/secret.yaml", old: "password: YWRtaW4=", new: "password: b3RoZXI=", moved: []string{"Deployment//demo-wordpress"}},
			{file: "mysql/secret.yaml", old: "root-password: cm9vdA==", new: "root-password: c3VwZXI=", moved: []string{"StatefulSet//demo-mysql"}},
			{file: "wordpress/kustomization.yaml", old: "WORDPRESS_DEBUG=0", new: "WORDPRESS_DEBUG=1", moved: []string{"Deployment//demo-wordpress"}},
		},
	},
	{
		// examples/multibases: three prefixed variants under a left-most
		// prefix, each config once named app or settings.
		name: "multibases: variants under namePrefixes, composed under another", tree: "multibases", build: ".",
		workloads: map[string]string{
			"Deployment//cluster-a-dev-myapp": "", "Deployment//cluster-a-stag-myapp": "", "Deployment//cluster-a-prod-myapp": "",
		},
		changes: []treeChange{
			{file: "production/kustomization.yaml", old: "LOG_LEVEL=warn", new: "LOG_LEVEL=error",
				moved: []string{"Deployment//cluster-a-prod-myapp"}},
			{file: "base/kustomization.yaml", old: "LOG_LEVEL=info", new: "LOG_LEVEL=trace",
				moved: []string{"Deployment//cluster-a-dev-myapp", "Deployment//cluster-a-stag-myapp"}},
			{file: "base/settings.yaml", old: "listen 80", new: "listen 81",
				moved: []string{"Deployment//cluster-a-dev-myapp", "Deployment//cluster-a-stag-myapp", "Deployment//cluster-a-prod-myapp"}},
		},
	},
	{
		// examples/multibases/multi-namespace: the same names in two
		// namespaces.
		name: "multibases: variants in namespaces", tree: "multi-namespace", build: ".",
		workloads: map[string]string{"Deployment/namespace-a/myapp": "", "Deployment/namespace-b/myapp": ""},
		changes: []treeChange{
			{file: "namespace-b/kustomization.yaml", old: "LOG_LEVEL=debug", new: "LOG_LEVEL=error",
				moved: []string{"Deployment/namespace-b/myapp"}},
			{file: "base/kustomization.yaml", old: "LOG_LEVEL=info", new: "LOG_LEVEL=trace",
				moved: []string{"Deployment/namespace-a/myapp"}},
		},
	},
	{
		// examples/configGeneration: a patch over the base's generated
		// ConfigMap, prefix, suffix, commonLabels, commonAnnotations (on
		// the pod template too), origin annotations. Any change of the
		// patched data changes the hash suffix, so the name the pod reads,
		// so the hash: an unread key too.
		name: "configGeneration: a patched generator under prefix and suffix", tree: "configgeneration", build: "staging",
		workloads: map[string]string{"Deployment//staging-hello-v1": ""},
		changes: []treeChange{
			{file: "staging/map.yaml", old: "pineapple", new: "kiwi", moved: []string{"Deployment//staging-hello-v1"}},
			{file: "staging/map.yaml", old: `motd: "unread"`, new: `motd: "renamed"`, moved: []string{"Deployment//staging-hello-v1"}},
		},
	},
	{
		// examples/springboot and examples/ldap staging: a generator merged
		// with a file of the same key, literals and the singular env: field;
		// a generator nobody reads.
		name: "springboot and ldap: a generator merged with files, literals and env", tree: "springboot", build: "staging",
		workloads: map[string]string{"Deployment//staging-sbdemo": ""},
		changes: []treeChange{
			{file: "staging/staging.env", old: "-Xmx256m", new: "-Xmx512m", moved: []string{"Deployment//staging-sbdemo"}},
			{file: "staging/application.properties", old: "Staging Demo", new: "Staging", moved: []string{"Deployment//staging-sbdemo"}},
			// The variant's file replaces the base's under the same key.
			{file: "base/application.properties", old: "app.name=Demo", new: "app.name=Base"},
			{file: "staging/config.env", old: "Example", new: "Other"},
		},
	},
	{
		// examples/generatorOptions: no hash suffix, labels, annotations,
		// immutable, for every generator; confighash's functionConfig
		// inline under transformers:.
		name: "generatorOptions for every generator", tree: "generatoroptions", build: ".",
		workloads: map[string]string{"Deployment//shop-shop": ""},
		changes: []treeChange{
			{file: "kustomization.yaml", old: "foo=bar", new: "foo=baz", moved: []string{"Deployment//shop-shop"}},
			{file: "kustomization.yaml", old: "epoch=1", new: "epoch=2", moved: []string{"Deployment//shop-shop"}},
			{file: "kustomization.yaml", old: "token=abc", new: "token=def", moved: []string{"Deployment//shop-shop"}},
			// Unread, and without suffix no rename either.
			{file: "kustomization.yaml", old: "baz=qux", new: "baz=quux"},
			{file: "kustomization.yaml", old: "kustomize.generated.resource: somevalue", new: "kustomize.generated.resource: other"},
		},
	},
	{
		// examples/secretGeneratorPlugin: a generator function whose
		// output asks for the hash suffix.
		name: "generator plugin: a function's ConfigMap and Secret with needs-hash", tree: "generatorplugin", build: ".",
		workloads: map[string]string{"Deployment//gen-web": ""},
		changes: []treeChange{
			{file: "generator.yaml", old: "GREETING: hello", new: "GREETING: hi", moved: []string{"Deployment//gen-web"}},
			{file: "generator.yaml", old: "password: first", new: "password: second", moved: []string{"Deployment//gen-web"}},
		},
	},
	{
		// patches with allowNameChange renaming a generated and a plain
		// ConfigMap under a prefix.
		name: "patches renaming configs (allowNameChange)", tree: "namechange", build: ".",
		workloads: map[string]string{"Deployment//p-web": ""},
		changes: []treeChange{
			{file: "kustomization.yaml", old: "GREETING=hello", new: "GREETING=hi", moved: []string{"Deployment//p-web"}},
			{file: "settings.yaml", old: "timeout=30", new: "timeout=60", moved: []string{"Deployment//p-web"}},
		},
	},
	{
		// examples/patchMultipleObjects: one patch, the targets a label
		// selector or a name pattern picks.
		name: "patchMultipleObjects: patches by label selector and name pattern", tree: "patchmultipleobjects", build: ".",
		workloads: map[string]string{"Deployment/hello/deploy1": "", "Deployment/hello/deploy2": "", "StatefulSet/hello/store": ""},
		changes: []treeChange{
			{file: "kustomization.yaml", old: "PROXY_PORT=15001", new: "PROXY_PORT=15006",
				moved: []string{"Deployment/hello/deploy1", "Deployment/hello/deploy2"}},
			{file: "kustomization.yaml", old: "token=t1", new: "token=t2",
				moved: []string{"Deployment/hello/deploy1", "Deployment/hello/deploy2", "StatefulSet/hello/store"}},
		},
	},
	{
		// examples/transformerconfigs: nameReference configurations for a
		// CRD's fields, in and out of its pod template.
		name: "transformerconfigs: a CRD workload's references under prefix and suffix", tree: "transformerconfigs", build: ".",
		verify:    []string{"--workload=Worker.example.com=spec/runner/template"},
		workloads: map[string]string{"Worker//batch-crunch-eu": ""},
		changes: []treeChange{
			{file: "kustomization.yaml", old: "amqp://queue", new: "amqp://other", moved: []string{"Worker//batch-crunch-eu"}},
			{file: "kustomization.yaml", old: "user=worker", new: "user=admin", moved: []string{"Worker//batch-crunch-eu"}},
		},
	},
	{
		// replacements: (a generated config's name into the volume that
		// mounts it, a Service's name into a ConfigMap's data) and labels
		// with includeTemplates.
		name: "replacements and labels on pod templates", tree: "replacements", build: ".",
		workloads: map[string]string{"Deployment//eu-api": "", "Deployment//eu-frontend": ""},
		changes: []treeChange{
			{file: "kustomization.yaml", old: "routes.yaml=/v1", new: "routes.yaml=/v2", moved: []string{"Deployment//eu-api"}},
			{file: "resources.yaml", old: `RETRIES: "3"`, new: `RETRIES: "4"`},
			{file: "kustomization.yaml", old: "team: shop", new: "team: web"},
		},
	},
	{
		// examples/valueAdd: the namespace from the folder's name, by a
		// ValueAddTransformer listed as a folder of transformer configs,
		// and confighash listed the same way, in each project.
		name: "valueAdd: namespaces from folder names, transformers as folders", tree: "valueadd", build: "all",
		workloads: map[string]string{"Deployment/cat-111/tunnel": "", "Deployment/dog-222/tunnel": ""},
		changes: []treeChange{
			{file: "projects/dog-222/kustomization.yaml", old: "TIER=premium", new: "TIER=gold", moved: []string{"Deployment/dog-222/tunnel"}},
			{file: "bases/app/kustomization.yaml", old: "TIER=standard", new: "TIER=basic", moved: []string{"Deployment/cat-111/tunnel"}},
		},
	},
	{
		// A base that lists confighash, an overlay that lists it too and
		// opts one workload out with a patch: the base's run wrote web's
		// hash and external list, the overlay's run takes them off, so
		// that no config change rolls web's pods.
		name: "a workload opted out by a patch in an overlay, confighash in base and overlay", tree: "optout", build: "patch",
		workloads: map[string]string{"Deployment//web": "", "Deployment//worker": ""},
		optedOut:  []string{"Deployment//web"},
		changes: []treeChange{
			{file: "base/kustomization.yaml", old: "LOG_LEVEL=info", new: "LOG_LEVEL=trace", moved: []string{"Deployment//worker"}},
			{file: "patch/kustomization.yaml", old: "REGION=eu", new: "REGION=us", moved: []string{"Deployment//worker"}},
			{file: "base/kustomization.yaml", old: "password=first", new: "password=second"},
		},
	},
	{
		// The same base under an overlay that opts every workload out with
		// commonAnnotations.
		name: "every workload opted out by commonAnnotations in an overlay, confighash in base and overlay", tree: "optout", build: "common",
		workloads: map[string]string{"Deployment//web": "", "Deployment//worker": ""},
		optedOut:  []string{"Deployment//web", "Deployment//worker"},
		changes: []treeChange{
			{file: "base/kustomization.yaml", old: "LOG_LEVEL=info", new: "LOG_LEVEL=trace"},
			{file: "common/kustomization.yaml", old: "REGION=eu", new: "REGION=us"},
		},
	},
	{
		// kustomize's components that each list the same base: blue
		// prefixes its copy, green suffixes its own and blue's. Every
		// config has two candidates once of its name; kustomize keeps for
		// each reader the one whose prefixes match too.
		name: "components listing one base: a prefix in one, a suffix over both", tree: "componentaffixes", build: ".",
		workloads: map[string]string{"Deployment//blue-web-green": "", "Deployment//web-green": ""},
		changes: []treeChange{
			{file: "blue/kustomization.yaml", old: "COLOR=blue", new: "COLOR=navy", moved: []string{"Deployment//blue-web-green"}},
			{file: "base/kustomization.yaml", old: "LEVEL=info", new: "LEVEL=debug",
				moved: []string{"Deployment//blue-web-green", "Deployment//web-green"}},
			{file: "base/kustomization.yaml", old: "password=first", new: "password=second",
				moved: []string{"Deployment//blue-web-green", "Deployment//web-green"}},
			{file: "base/settings.yaml", old: "workers=4", new: "workers=8",
				moved: []string{"Deployment//blue-web-green", "Deployment//web-green"}},
			{file: "base/settings.yaml", old: "spare=yes", new: "spare=no"},
		},
	},
	{
		// kustomize's base reused by two teams under the same outer
		// prefix, told apart by the inner one; one team's base turns the
		// Deployment into a StatefulSet of another name.
		name: "a base reused under the same outer prefix, a workload's kind changed in one", tree: "reusedbase", build: ".",
		workloads: map[string]string{"Deployment//overlay-team-a-db": "", "StatefulSet//overlay-team-b-store": ""},
		changes: []treeChange{
			{file: "team-a/overlay/kustomization.yaml", old: "REPLICAS=3", new: "REPLICAS=5",
				moved: []string{"Deployment//overlay-team-a-db"}},
			{file: "shared/kustomization.yaml", old: "LEVEL=info", new: "LEVEL=warn",
				moved: []string{"Deployment//overlay-team-a-db", "StatefulSet//overlay-team-b-store"}},
			{file: "shared/secret.yaml", old: "password: first", new: "password: second",
				moved: []string{"Deployment//overlay-team-a-db", "StatefulSet//overlay-team-b-store"}},
		},
	},
	{
		// kustomize's issue 3489: a base prefixed, suffixed, and moved and
		// suffixed, side by side; the suffixed ones replace a generated
		// Secret with the same content (one hash suffix, two names); the
		// top merges into two generators by the names the variants gave.
		name: "variants by prefix, suffix and namespace; merges by renamed names", tree: "variants", build: ".",
		workloads: map[string]string{"Deployment//pp-myapp": "", "Deployment//myapp-ss": "", "Deployment/fred/myapp-xx": ""},
		changes: []treeChange{
			{file: "kustomization.yaml", old: "REGION=eu", new: "REGION=ap", moved: []string{"Deployment//pp-myapp"}},
			{file: "kustomization.yaml", old: "REGION=us", new: "REGION=ca", moved: []string{"Deployment//myapp-ss"}},
			{file: "ss/token.txt", old: "same-token", new: "other-token", moved: []string{"Deployment//myapp-ss"}},
			{file: "xx/token.txt", old: "same-token", new: "other-token", moved: []string{"Deployment/fred/myapp-xx"}},
			{file: "base/kustomization.yaml", old: "token.txt=placeholder", new: "token.txt=changed", moved: []string{"Deployment//pp-myapp"}},
			{file: "base/kustomization.yaml", old: "LOG_LEVEL=info", new: "LOG_LEVEL=debug",
				moved: []string{"Deployment//pp-myapp", "Deployment//myapp-ss", "Deployment/fred/myapp-xx"}},
			{file: "base/flags.yaml", old: `foo: "on"`, new: `foo: "off"`,
				moved: []string{"Deployment//pp-myapp", "Deployment//myapp-ss", "Deployment/fred/myapp-xx"}},
			{file: "base/flags.yaml", old: `bar: "off"`, new: `bar: "on"`},
		},
	},
	{
		// kustomize's references by intermediate names (issue 3228, the
		// diamond with patches): readers name a generated config by the
		// name a sibling's prefix gave it, under a prefix over all.
		name: "references by the names a sibling's prefix gave, under a prefix over all", tree: "intermediatenames", build: ".",
		workloads: map[string]string{
			"Deployment//project-app": "", "Deployment//project-worker": "",
			"Deployment//project-left": "", "Deployment//project-right": "",
		},
		changes: []treeChange{
			{file: "app/dbs/zero/zero.env", old: "arg=0", new: "arg=9", moved: []string{"Deployment//project-app"}},
			{file: "app/dbs/one/one.env", old: "arg=1", new: "arg=8",
				moved: []string{"Deployment//project-app", "Deployment//project-worker"}},
			{file: "bases/db/db.env", old: "password=shared", new: "password=other",
				moved: []string{"Deployment//project-app", "Deployment//project-worker"}},
			{file: "bases/bottom/kustomization.yaml", old: "KEY=value", new: "KEY=other",
				moved: []string{"Deployment//project-left", "Deployment//project-right"}},
		},
	},
	{
		// kustomize's namespaced generators: a base moved to another
		// namespace by an overlay merging into its generator; generators
		// of one name into two namespaces; a reader of no namespace.
		name: "generators into namespaces, a base moved by an overlay that merges", tree: "namespacedgenerators", build: ".",
		workloads: map[string]string{
			"Deployment/overlay/web": "", "Deployment/team-a/reader": "", "Deployment/team-b/reader": "",
			"Deployment//lonely": "ConfigMap/shared",
		},
		changes: []treeChange{
			{file: "overlay/kustomization.yaml", old: "veggie=peach", new: "veggie=leek", moved: []string{"Deployment/overlay/web"}},
			{file: "base/kustomization.yaml", old: "fruit=apple", new: "fruit=pear", moved: []string{"Deployment/overlay/web"}},
			{file: "spread/kustomization.yaml", old: "password=a", new: "password=c", moved: []string{"Deployment/team-a/reader"}},
			{file: "spread/kustomization.yaml", old: "password=b", new: "password=d", moved: []string{"Deployment/team-b/reader"}},
			{file: "spread/workloads.yaml", old: "mode: alone", new: "mode: crowd", moved: []string{"Deployment//lonely"}},
		},
	},
	{
		// kustomize's issues 5047 and 2609: readers with a suffix their
		// configs lack, prefixes without a dash, a reference added by a
		// patch whose target is a name pattern, to a sibling's generator
		// merged into here.
		name: "readers with suffixes their configs lack, prefixes without a dash", tree: "affixreferrer", build: ".",
		workloads: map[string]string{"Deployment//a-api": "", "Deployment//b-api": "", "Deployment//sync-handler": ""},
		changes: []treeChange{
			{file: "b/kustomization.yaml", old: "COLOR=b", new: "COLOR=c", moved: []string{"Deployment//b-api"}},
			{file: "common/kustomization.yaml", old: "GREETING=hello", new: "GREETING=hi",
				moved: []string{"Deployment//a-api", "Deployment//b-api"}},
			{file: "db/kustomization.yaml", old: "HOST=everest", new: "HOST=k2", moved: []string{"Deployment//sync-handler"}},
			{file: "kustomization.yaml", old: "PASSWORD_HINT=horse", new: "PASSWORD_HINT=staple", moved: []string{"Deployment//sync-handler"}},
			// Replaced by the merge above it.
			{file: "db/kustomization.yaml", old: "USER=default", new: "USER=root"},
		},
	},
	{
		// kustomize's generatorOptions at several levels: a base without
		// suffixes, a team's generators with them (typed Secrets), an
		// overlay whose options take them off the generators it merges
		// into and replaces, immutable, and one of its own that asks for
		// the suffix back in vain.
		name: "generatorOptions at three levels, merge and replace, typed Secrets", tree: "generatorlevels", build: "staging",
		workloads: map[string]string{"Deployment//staging-team-web": ""},
		changes: []treeChange{
			{file: "staging/kustomization.yaml", old: "fruit=apple", new: "fruit=pear", moved: []string{"Deployment//staging-team-web"}},
			{file: "staging/kustomization.yaml", old: "y=2", new: "y=3", moved: []string{"Deployment//staging-team-web"}},
			{file: "staging/kustomization.yaml", old: "MODE=staging", new: "MODE=prod", moved: []string{"Deployment//staging-team-web"}},
			{file: "staging/kustomization.yaml", old: "password=second", new: "password=third", moved: []string{"Deployment//staging-team-web"}},
			{file: "base/kustomization.yaml", old: "REGION=eu", new: "REGION=us", moved: []string{"Deployment//staging-team-web"}},
			{file: "team/id_key", old: "KEY-ONE", new: "KEY-TWO", moved: []string{"Deployment//staging-team-web"}},
			// Replaced above, unread, overridden by the merge above.
			{file: "team/kustomization.yaml", old: "x=1", new: "x=5"},
			{file: "team/kustomization.yaml", old: "realm=corp", new: "realm=home"},
			{file: "team/kustomization.yaml", old: "password=first", new: "password=zero"},
		},
	},
	{
		// kustomize's replacements in a base under an overlay's prefix and
		// suffix: the Secret a volume mounts named by a ConfigMap's value,
		// a generated config's name as the base knows it copied into
		// another's data (no link to its content).
		name: "replacements in a base, renamed by the overlay", tree: "replacementbase", build: "overlay",
		workloads: map[string]string{"Deployment//eu-web-v1": ""},
		changes: []treeChange{
			{file: "base/kustomization.yaml", old: "cert=AAA", new: "cert=AAC", moved: []string{"Deployment//eu-web-v1"}},
			{file: "base/resources.yaml", old: "secret: tls-a", new: "secret: tls-b", moved: []string{"Deployment//eu-web-v1"}},
			{file: "base/kustomization.yaml", old: "shade=crimson", new: "shade=scarlet", moved: []string{"Deployment//eu-web-v1"}},
			{file: "base/kustomization.yaml", old: "cert=BBB", new: "cert=BBC"},
			{file: "base/kustomization.yaml", old: "shade=navy", new: "shade=teal"},
		},
	},
	{
		// kustomize's generators over files that are not UTF-8
		// (binaryData, base64 folded over lines), one without and one with
		// the hash suffix, merged into in an overlay; each reader reads
		// some keys or the whole object.
		name: "binaryData from generators, merged in an overlay", tree: "binarydata", build: "overlay",
		workloads: map[string]string{"Deployment//eu-p1-web": "", "Deployment//eu-p1-worker": ""},
		changes: []treeChange{
			{file: "base/logo.bin", old: "\xffhello", new: "\xffhellO", moved: []string{"Deployment//eu-p1-web"}},
			{file: "base/icon.bin", old: "icon-v1", new: "icon-v2", moved: []string{"Deployment//eu-p1-worker"}},
			{file: "overlay/kustomization.yaml", old: "MODE=fast", new: "MODE=slow", moved: []string{"Deployment//eu-p1-worker"}},
			{file: "base/notes.txt", old: "written by hand", new: "rewritten"},
		},
	},
	{
		// Objects writing namespace: default next to objects writing none
		// (kustomize's namespaces_test.go): kustomize fixes the references
		// between them, taking none for default; the pod reads its own
		// namespace only, so what the render does not place there is
		// external by its final name.
		name: "namespace default written on some objects, none on others, under a prefix", tree: "defaultnamespace", build: ".",
		workloads: map[string]string{
			"Deployment/default/eu-explicit": "ConfigMap/eu-gen-2748f727mg,ConfigMap/eu-plain",
			"Deployment//eu-implicit":        "ConfigMap/eu-pinned",
		},
		changes: []treeChange{
			{file: "kustomization.yaml", old: "LEVEL=info", new: "LEVEL=debug", moved: []string{"Deployment//eu-implicit"}},
			{file: "resources.yaml", old: "MODE: plain", new: "MODE: other", moved: []string{"Deployment//eu-implicit"}},
			{file: "resources.yaml", old: "MODE: pinned", new: "MODE: moved", moved: []string{"Deployment/default/eu-explicit"}},
		},
	},
	{
		// kustomize's generator value tests (numbers and booleans that stay
		// strings, quotes stripped or kept, a literal over lines, an empty
		// value, YAML 1.1 words as values and keys) merged in an overlay:
		// the function reads them from kustomize's stream as the cluster
		// will hold them.
		name: "generator values YAML reads otherwise, quotes, a literal over lines", tree: "literalvalues", build: "overlay",
		workloads: map[string]string{"Deployment//lit-web": "", "Deployment//lit-reader": ""},
		changes: []treeChange{
			{file: "overlay/kustomization.yaml", old: "month=12", new: "month=11",
				moved: []string{"Deployment//lit-web", "Deployment//lit-reader"}},
			{file: "base/multiline.yaml", old: "greetings", new: "hello", moved: []string{"Deployment//lit-reader"}},
			{file: "base/numbers.env", old: "VAR1=100", new: "VAR1=101",
				moved: []string{"Deployment//lit-web", "Deployment//lit-reader"}},
			{file: "base/kustomization.yaml", old: "PIN=0012", new: "PIN=0013",
				moved: []string{"Deployment//lit-web", "Deployment//lit-reader"}},
		},
	},
	{
		// kustomize's component used by two bases, moving each into a
		// namespace, not what the kustomization above lists: a reader
		// there names a config of a base, in another namespace now.
		name: "a component moving two bases into a namespace, a reader outside it", tree: "componentnamespace", build: ".",
		workloads: map[string]string{
			"Deployment/prod/p-proxy-a": "", "Deployment/prod/p-proxy-b": "", "Deployment//p-proxy-edge": "ConfigMap/cfg-a",
		},
		changes: []treeChange{
			{file: "base-a/kustomization.yaml", old: "a.internal", new: "a.example", moved: []string{"Deployment/prod/p-proxy-a"}},
			{file: "base-b/kustomization.yaml", old: "b.internal", new: "b.example", moved: []string{"Deployment/prod/p-proxy-b"}},
			{file: "proxy.yaml", old: `":443"`, new: `":8443"`, moved: []string{"Deployment//p-proxy-edge"}},
		},
	},
	{
		// A CRD workload's base, holding its nameReference configuration,
		// next to two prefixed variants of it in one build.
		name: "a CRD workload's base next to two prefixed variants, nameReference in the base", tree: "crdvariants", build: ".",
		verify:    []string{"--workload=Worker.example.com=spec/runner/template"},
		workloads: map[string]string{"Worker//crunch": "", "Worker//blue-crunch": "", "Worker//green-crunch": ""},
		changes: []treeChange{
			{file: "blue/kustomization.yaml", old: "LANE=blue", new: "LANE=navy", moved: []string{"Worker//blue-crunch"}},
			{file: "base/kustomization.yaml", old: "QUEUE_URL=amqp://queue", new: "QUEUE_URL=amqp://other",
				moved: []string{"Worker//crunch", "Worker//blue-crunch", "Worker//green-crunch"}},
			{file: "base/kustomization.yaml", old: "password=p1", new: "password=p2",
				moved: []string{"Worker//crunch", "Worker//blue-crunch", "Worker//green-crunch"}},
		},
	},
}

// TestKustomizeDocs builds trees written after kustomize's documented
// examples (examples/*.md in kustomize's repository) with confighash listed
// under transformers:, and checks that the render is the same build without
// the function but for confighash's annotations, that every workload's hash
// and external list are the ones computed from the final objects alone,
// that verify passes, and that a changed config input moves the hash of
// exactly the workloads that read it under its final name.
func TestKustomizeDocs(t *testing.T) {
	t.Parallel()
	for _, tc := range docsTrees {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkDocsTree(t, filepath.Join("..", "testdata", "kustomize", "docs", tc.tree), tc)
		})
	}
}

// identityFunction is an exec KRM function that changes nothing: it hands
// kustomize back the ResourceList it got. A build with it in confighash's
// place is what confighash's may differ from only by its annotations.
const identityFunction = "/bin/cat"

// checkDocsTree makes TestKustomizeDocs's checks on the tree src, a copy of
// which it builds and edits.
func checkDocsTree(t *testing.T, src string, tc docsTree) {
	t.Helper()
	dir := copyTree(t, src)
	root := filepath.Join(dir, tc.build)
	out, _ := realBuild(t, root, nil, true)
	// The same build with cat, which hands kustomize back what it
	// got, in confighash's place (other functions of the tree run).
	identity := t.TempDir()
	require.NoError(t, testtools.CopyTree(src, identity, func(_, _ string, b []byte) ([]byte, error) {
		return execPath.ReplaceAll(b, []byte("path: "+identityFunction)), nil
	}))
	plain, _ := realBuild(t, filepath.Join(identity, tc.build), nil, true)
	require.NotRegexp(t, `confighash\.dev/(hash|key-id|external):`, plain)
	assert.Equal(t, withoutConfighash(t, plain), withoutConfighash(t, out), "only confighash's annotations added")

	got := independentHashes(t, out)
	require.Equal(t, slices.Sorted(maps.Keys(tc.workloads)), slices.Sorted(maps.Keys(got)), "workloads in the render\n%s", out)
	for id, external := range tc.workloads {
		r := got[id]
		if slices.Contains(tc.optedOut, id) {
			assert.Empty(t, r.hash+r.external, "%s opts out: no hash, no external list\n%s", id, out)
			continue
		}
		assert.Equal(t, r.wantExternal, external, "%s: what it reads from outside the render, computed from the objects", id)
		require.NotEmpty(t, r.want, "%s reads something of the render", id)
		assert.Equal(t, r.want, r.hash, "%s: hash of what it reads, by the final names\n%s", id, out)
		assert.Equal(t, external, r.external, "%s: external annotation", id)
	}
	verify := testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), append([]string{"verify"}, tc.verify...)...)
	assert.Zero(t, verify.ExitCode, "confighash verify on the render\n%s", verify.Stderr)

	hashes := testtools.PodHashes(t, out)
	for _, c := range tc.changes {
		edit(t, filepath.Join(dir, c.file), c.old, c.new)
		changed, _ := realBuild(t, root, nil, true)
		assertMoved(t, c.file+": "+c.new, hashes, testtools.PodHashes(t, changed), c.moved)
		verify := testtools.Run(t, dir, nil, []byte(changed), testtools.Tool(t, "confighash"), append([]string{"verify"}, tc.verify...)...)
		assert.Zero(t, verify.ExitCode, "%s: confighash verify on the render\n%s", c.file, verify.Stderr)
		edit(t, filepath.Join(dir, c.file), c.new, c.old)
	}
}
