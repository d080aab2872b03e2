package examples_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// podSpecDraws writes the random pod specs of the random kustomize trees
// (TestKustomizeRandomTrees) and charts (TestHelmRandomCharts): a container
// (and at times an init container) reading configs through env and
// envFrom, volumes and projected sources with items or without, a pull
// Secret, each reference optional at times.
type podSpecDraws struct {
	r *rand.Rand
	// keys are the keys env reads; itemKeys those volume items read.
	keys, itemKeys []string
	// config draws the config a reference reads, a Secret when secret is
	// set; name returns the name the reference writes at path, a field
	// path below the pod spec as kustomize's replacements write it. A pull
	// Secret writes config's name.
	config func(secret bool) (kind, name string)
	name   func(kind, name, path string) string
}

func (d podSpecDraws) chance(p float64) bool { return d.r.Float64() < p }

func (d podSpecDraws) pick(from []string) string { return from[d.r.IntN(len(from))] }

// podSpec draws a pod spec.
func (d podSpecDraws) podSpec() map[string]any {
	spec := map[string]any{"containers": []any{d.container("main")}}
	if d.chance(0.2) {
		spec["initContainers"] = []any{d.container("init")}
	}
	var volumes []any
	for i := range d.r.IntN(3) {
		kind, cname := d.config(false)
		vol := map[string]any{"name": fmt.Sprintf("v%d", i)}
		src := map[string]any{}
		nameField := "name"
		if kind == "Secret" {
			nameField = "secretName"
		}
		if d.chance(0.4) {
			src["items"] = []any{map[string]any{"key": d.pick(d.itemKeys), "path": "f"}}
		}
		if d.chance(0.2) {
			src["optional"] = true
		}
		field := strings.ToLower(kind[:1]) + kind[1:]
		if d.chance(0.3) {
			src["name"] = d.name(kind, cname, fmt.Sprintf("volumes.[name=v%d].projected.sources.0.%s.name", i, field))
			vol["projected"] = map[string]any{"sources": []any{map[string]any{field: src}}}
		} else {
			src[nameField] = d.name(kind, cname, fmt.Sprintf("volumes.[name=v%d].%s.%s", i, field, nameField))
			vol[field] = src
		}
		volumes = append(volumes, vol)
	}
	if len(volumes) > 0 {
		spec["volumes"] = volumes
	}
	if d.chance(0.2) {
		_, cname := d.config(true)
		spec["imagePullSecrets"] = []any{map[string]any{"name": cname}}
	}
	return spec
}

// container draws a container of the pod spec: main, or init.
func (d podSpecDraws) container(name string) map[string]any {
	c := map[string]any{"name": name, "image": "example/" + name + ":1"}
	list := "containers"
	if name == "init" {
		list = "initContainers"
	}
	at := list + ".[name=" + name + "]."
	var env, envFrom []any
	for range d.r.IntN(4) {
		kind, cname := d.config(false)
		ref := map[string]any{}
		if d.chance(0.2) {
			ref["optional"] = true
		}
		if d.chance(0.4) {
			ref["name"] = d.name(kind, cname, fmt.Sprintf("%senvFrom.%d.%s.name", at, len(envFrom), refField(kind, "Ref")))
			envFrom = append(envFrom, map[string]any{refField(kind, "Ref"): ref})
			continue
		}
		ref["key"] = d.pick(d.keys)
		env = append(env, map[string]any{"name": fmt.Sprintf("E%d", len(env)), "valueFrom": map[string]any{refField(kind, "KeyRef"): ref}})
		ref["name"] = d.name(kind, cname, fmt.Sprintf("%senv.[name=E%d].valueFrom.%s.name", at, len(env)-1, refField(kind, "KeyRef")))
	}
	if len(env) > 0 {
		c["env"] = env
	}
	if len(envFrom) > 0 {
		c["envFrom"] = envFrom
	}
	return c
}

// refField is configMapRef, secretKeyRef and the like.
func refField(kind, suffix string) string {
	if kind == "Secret" {
		return "secret" + suffix
	}
	return "configMap" + suffix
}

// workloadObject returns a workload of kind (Deployment, StatefulSet,
// DaemonSet, CronJob or Job) with metadata md and a pod template of labels,
// template metadata tmd (labels when nil) and spec; serviceName is a
// StatefulSet's.
func workloadObject(kind, serviceName string, md, labels, tmd, spec map[string]any) map[string]any {
	if tmd == nil {
		tmd = map[string]any{"labels": labels}
	}
	template := map[string]any{"metadata": tmd, "spec": spec}
	obj := map[string]any{"kind": kind, "metadata": md}
	switch kind {
	case "CronJob":
		spec["restartPolicy"] = "Never"
		obj["apiVersion"] = "batch/v1"
		obj["spec"] = map[string]any{"schedule": "0 * * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": template}}}
	case "Job":
		spec["restartPolicy"] = "Never"
		obj["apiVersion"] = "batch/v1"
		obj["spec"] = map[string]any{"template": template}
	case "StatefulSet":
		obj["apiVersion"] = "apps/v1"
		obj["spec"] = map[string]any{"serviceName": serviceName, "selector": map[string]any{"matchLabels": labels}, "template": template}
	default:
		obj["apiVersion"] = "apps/v1"
		obj["spec"] = map[string]any{"selector": map[string]any{"matchLabels": labels}, "template": template}
	}
	return obj
}
