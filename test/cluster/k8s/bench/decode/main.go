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
