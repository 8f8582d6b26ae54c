//go:build cgo && linux

package gpu

import (
	"strconv"
	"testing"
)

// BenchmarkSamplerPoll is the sampler's whole cost per poll on go-nvml's mock: reading every
// GPU (BenchmarkSample's work), storing the samples in the ring and handing them to one
// subscriber. ns/sample divides by the GPUs polled.
func BenchmarkSamplerPoll(b *testing.B) {
	for _, gpus := range []int{1, 8} {
		b.Run("mock/gpus="+strconv.Itoa(gpus), func(b *testing.B) {
			srv, _ := newH100(b)
			srv.Devices = srv.Devices[:gpus]
			src, err := NewNVML(srv)
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			s := NewSampler(src, Options{})
			var seen int
			s.Subscribe(func(p []Sample) { seen += len(p) })
			buf := make([]Sample, 0, gpus)
			var subs []func([]Sample)
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				if buf, subs, ok = s.poll(buf[:0], subs[:0]); !ok {
					b.Fatal("the mock source reported NVML absent")
				}
			}
			if seen == 0 {
				b.Fatal("the subscriber saw no sample")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(gpus), "ns/sample")
		})
	}
}
