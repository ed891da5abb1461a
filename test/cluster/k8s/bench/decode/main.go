// decodebench: client-go's decode and encode of a PodList, the peer of our bench/codec_bench.
// It decodes the way client-go's typed clients do (the scheme's JSON serializer), repeats, and reports
// MB/s and heap bytes per decoded pod: the growth of the live heap (runtime/metrics /gc/heap/live:bytes after a
// GC) for each of five decoded lists kept alive one after another, median of the five. A single before/after pair
// around one decode is not enough: the decoder keeps a buffer the size of the document in a sync.Pool, alive at one
// reading and gone at the next, which hid 3.4 KB per pod of this file (the document's size per pod) before.
package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	iters, _ := strconv.Atoi(os.Args[2])
	dec := scheme.Codecs.UniversalDeserializer()
	decodeOnce := func() *corev1.PodList {
		obj, _, err := dec.Decode(data, nil, &corev1.PodList{})
		if err != nil {
			panic(err)
		}
		return obj.(*corev1.PodList)
	}
	decodeOnce() // warm up
	start := time.Now()
	var list *corev1.PodList
	for i := 0; i < iters; i++ {
		list = decodeOnce()
	}
	secs := time.Since(start).Seconds()
	mb := float64(len(data)) * float64(iters) / 1e6

	_ = list
	list = nil
	if len(os.Args) > 3 && os.Args[3] == "explain" {
		explain(decodeOnce)
		return
	}
	perPod, kept := keptHeapPerPod(decodeOnce)

	enc := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)
	var buf bytes.Buffer
	estart := time.Now()
	for i := 0; i < iters; i++ {
		buf.Reset()
		if err := enc.Encode(kept, &buf); err != nil {
			panic(err)
		}
	}
	esecs := time.Since(estart).Seconds()
	fmt.Printf("client-go\t%d pods\tdecode %.1f MB/s\tencode %.1f MB/s\t%.0f bytes/pod\n", len(kept.Items),
		mb/secs, float64(buf.Len())*float64(iters)/1e6/esecs, perPod)
	runtime.KeepAlive(kept)
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// keptHeapPerPod: decodes five lists, each kept alive, and returns the median live-heap growth per pod.
func keptHeapPerPod(decode func() *corev1.PodList) (float64, *corev1.PodList) {
	var kept []*corev1.PodList
	var deltas []float64
	prev := liveHeap()
	for i := 0; i < 5; i++ {
		kept = append(kept, decode())
		now := liveHeap()
		deltas = append(deltas, (float64(now)-float64(prev))/float64(len(kept[i].Items)))
		prev = now
	}
	sort.Float64s(deltas)
	return deltas[2], kept[len(kept)-1]
}

// explain (third argument "explain"): the readings behind the heap figure. The single before/after reading this
// bench used to take; the five kept-list deltas; then what
// freeing each part of the last list's pods gives back, part by part, and the items slice last.
func explain(decode func() *corev1.PodList) {
	// The reading this bench took before: HeapAlloc after GC, before and after one more decoded list.
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	single := decode()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	fmt.Printf("one HeapAlloc before/after pair: %.0f bytes per pod\n", (float64(m1.HeapAlloc)-float64(m0.HeapAlloc))/float64(len(single.Items)))
	single = nil
	var kept []*corev1.PodList
	prev := liveHeap()
	for i := 0; i < 5; i++ {
		kept = append(kept, decode())
		now := liveHeap()
		fmt.Printf("list %d kept: live heap +%.0f bytes per pod\n", i+1, (float64(now)-float64(prev))/float64(len(kept[i].Items)))
		prev = now
	}
	l := kept[4]
	n := float64(len(l.Items))
	total := 0.0
	free := func(part string, f func(p *corev1.Pod)) {
		before := liveHeap()
		for i := range l.Items {
			f(&l.Items[i])
		}
		d := (float64(before) - float64(liveHeap())) / n
		total += d
		fmt.Printf("  freeing %-34s %6.0f bytes per pod\n", part, d)
	}
	free("metadata.managedFields", func(p *corev1.Pod) { p.ManagedFields = nil })
	free("metadata.labels, annotations", func(p *corev1.Pod) { p.Labels, p.Annotations = nil, nil })
	free("metadata (the rest)", func(p *corev1.Pod) { p.ObjectMeta = metav1.ObjectMeta{} })
	free("spec.containers[*].resources", func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
		}
	})
	free("spec.containers (the rest)", func(p *corev1.Pod) { p.Spec.Containers = nil })
	free("spec.volumes", func(p *corev1.Pod) { p.Spec.Volumes = nil })
	free("spec (the rest)", func(p *corev1.Pod) { p.Spec = corev1.PodSpec{} })
	free("status", func(p *corev1.Pod) { p.Status = corev1.PodStatus{} })
	before := liveHeap()
	l.Items = nil
	d := (float64(before) - float64(liveHeap())) / n
	total += d
	fmt.Printf("  freeing %-34s %6.0f bytes per pod\n  total freed %.0f bytes per pod\n", "the items slice", d, total)
	runtime.KeepAlive(kept)
}
