// Command mergegen writes synthetic llmtap trace files for measuring `llmtap trace merge`: one
// file per instance, Poisson arrivals at --rate a second, requests lasting up to --max-dur
// (log-normal, median 2 s), each row written when its request ends as the recorder writes it,
// ~1,000-token prompts as two 53-bit keyed block ids. docs/fleet.md gives the command.
package main

import (
	"bufio"
	"container/heap"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

type row struct {
	end  float64 // seconds from the file's start
	line []byte
}

type byEnd []row

func (h byEnd) Len() int           { return len(h) }
func (h byEnd) Less(i, j int) bool { return h[i].end < h[j].end }
func (h byEnd) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byEnd) Push(x any)        { *h = append(*h, x.(row)) }
func (h *byEnd) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

func main() {
	dir := flag.String("dir", "", "folder to write into (created)")
	files := flag.Int("files", 100, "files (instances)")
	rows := flag.Int("rows", 1_000_000, "rows per file")
	rate := flag.Float64("rate", 50, "arrivals per second per file")
	maxDur := flag.Duration("max-dur", time.Minute, "longest request")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "mergegen: --dir is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for f := range *files {
		if err := write(filepath.Join(*dir, "trace-"+t0.Add(time.Duration(f)*time.Second).Format("20060102T150405.000Z")+".jsonl"),
			*rows, *rate, maxDur.Seconds(), uint64(f)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func write(path string, rows int, rate, maxDur float64, seed uint64) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 1))
	var pending byEnd
	at := 0.0
	for range rows {
		at += rng.ExpFloat64() / rate
		for pending.Len() > 0 && pending[0].end <= at {
			w.Write(heap.Pop(&pending).(row).line)
		}
		dur := math.Min(maxDur, 2*math.Exp(rng.NormFloat64()))
		in := 200 + rng.IntN(1800)
		b := []byte(`{"timestamp": `)
		b = strconv.AppendFloat(b, math.Round(at*1e6)/1e3, 'f', -1, 64)
		b = fmt.Appendf(b, `, "input_length": %d, "output_length": %d, "hash_ids": [%d, %d], "model": "m"}`+"\n",
			in, 1+rng.IntN(500), rng.Int64N(1<<53), rng.Int64N(1<<53))
		heap.Push(&pending, row{end: at + dur, line: b})
	}
	for pending.Len() > 0 {
		w.Write(heap.Pop(&pending).(row).line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return fh.Close()
}
