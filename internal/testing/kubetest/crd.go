package kubetest

// RolloutCRD is a CustomResourceDefinition that serves Argo Rollouts
// (argoproj.io/v1alpha1, with a status subresource and any fields), enough
// for the controller and status to find the kind by discovery and read and
// patch its pod template, without Argo Rollouts installed.
const RolloutCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: rollouts.argoproj.io
spec:
  group: argoproj.io
  names: {kind: Rollout, listKind: RolloutList, plural: rollouts, singular: rollout}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
