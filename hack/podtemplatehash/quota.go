package main

// quota: golden values for the resource quota evaluators (pkg/quota/v1/evaluator/core at the pin) and for
// quantity sums. For each case it prints what upstream computes: the usage of a Pod, Service,
// PersistentVolumeClaim or ResourceClaim (every value as Quantity.String()), a pod's BestEffort and Terminating
// scopes, and for a "sum" case the canonical text of the quantities added in order to a zero DecimalSI quantity,
// as the quota controller's CalculateUsageStats does.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	"k8s.io/utils/clock"
)

type quotaCase struct {
	Name   string          `json:"name"`
	Kind   string          `json:"kind"`
	Object json.RawMessage `json:"object,omitempty"`
	Sum    []string        `json:"sum,omitempty"`
}

type quotaGolden struct {
	Name        string            `json:"name"`
	Usage       map[string]string `json:"usage,omitempty"`
	BestEffort  *bool             `json:"bestEffort,omitempty"`
	Terminating *bool             `json:"terminating,omitempty"`
	Sum         string            `json:"sum,omitempty"`
}

func usageStrings(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func quotaUsage(c quotaCase) (quotaGolden, error) {
	g := quotaGolden{Name: c.Name}
	var obj runtime.Object
	switch c.Kind {
	case "Sum":
		total := resource.Quantity{Format: resource.DecimalSI}
		for _, s := range c.Sum {
			total.Add(resource.MustParse(s))
		}
		g.Sum = total.String()
		return g, nil
	case "Pod":
		obj = &corev1.Pod{}
	case "Service":
		obj = &corev1.Service{}
	case "PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "ResourceClaim":
		obj = &resourceapi.ResourceClaim{}
	default:
		return g, fmt.Errorf("case %s: unknown kind %q", c.Name, c.Kind)
	}
	if err := utiljson.Unmarshal(c.Object, obj); err != nil {
		return g, fmt.Errorf("case %s: %v", c.Name, err)
	}
	var evaluatorUsage func(runtime.Object) (corev1.ResourceList, error)
	switch c.Kind {
	case "Pod":
		pod := obj.(*corev1.Pod)
		evaluatorUsage = func(o runtime.Object) (corev1.ResourceList, error) { return core.PodUsageFunc(o, clock.RealClock{}) }
		be := false
		for _, s := range []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort} {
			ev := core.NewPodEvaluator(nil, clock.RealClock{})
			m, err := ev.MatchingScopes(pod, []corev1.ScopedResourceSelectorRequirement{{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}})
			if err != nil {
				return g, err
			}
			be = len(m) == 1
		}
		term := core.IsTerminating(pod)
		g.BestEffort, g.Terminating = &be, &term
	case "Service":
		evaluatorUsage = core.NewServiceEvaluator(nil).Usage
	case "PersistentVolumeClaim":
		evaluatorUsage = core.NewPersistentVolumeClaimEvaluator(nil).Usage
	case "ResourceClaim":
		cache := extendedresourcecache.NewExtendedResourceCache(klog.FromContext(context.Background()))
		evaluatorUsage = core.NewResourceClaimEvaluator(nil, cache, nil, nil).Usage
	}
	usage, err := evaluatorUsage(obj)
	if err != nil {
		return g, fmt.Errorf("case %s: %v", c.Name, err)
	}
	g.Usage = usageStrings(usage)
	return g, nil
}

func runQuota(args []string) error {
	fs := flag.NewFlagSet("quota", flag.ExitOnError)
	in := fs.String("in", "", "cases file")
	out := fs.String("out", "", "golden file")
	_ = fs.Parse(args)
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var cases []quotaCase
	if err := json.Unmarshal(data, &cases); err != nil {
		return err
	}
	golden := []quotaGolden{}
	for _, c := range cases {
		g, err := quotaUsage(c)
		if err != nil {
			return err
		}
		golden = append(golden, g)
	}
	b, err := json.MarshalIndent(golden, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}
