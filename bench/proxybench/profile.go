package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// profiles takes, for every proxied variant under stream-sat load, a CPU profile and the
// allocation profiles before and after it from Caddy's admin listener (/debug/pprof/), so that
// `go tool pprof -base allocs-before.pb.gz allocs.pb.gz` shows what the load allocated.
func (b *bench) profiles(ctx context.Context) error {
	if err := os.MkdirAll(b.o.profileDir, 0o755); err != nil {
		return err
	}
	s := scenarios(b.o)["stream-sat"]
	for _, v := range b.o.variants {
		p := b.proxies[v.name]
		if p == nil {
			continue
		}
		name := func(kind string) string { return filepath.Join(b.o.profileDir, v.name+"-"+kind+".pb.gz") }
		if err := fetchTo(ctx, p.admin, "/debug/pprof/allocs", name("allocs-before")); err != nil {
			return err
		}
		var (
			wg      sync.WaitGroup
			loadErr error
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Outlast the profile by a little so that it sees load from start to end.
			_, loadErr = b.once(ctx, v, s, b.o.profileTime+b.o.profileTime/8)
		}()
		secs := int(b.o.profileTime.Seconds())
		perr := fetchTo(ctx, p.admin, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), name("cpu"))
		wg.Wait()
		if perr != nil {
			return perr
		}
		if loadErr != nil {
			return loadErr
		}
		if err := fetchTo(ctx, p.admin, "/debug/pprof/allocs", name("allocs")); err != nil {
			return err
		}
		progress("profiles of %s written to %s", v.name, b.o.profileDir)
	}
	return nil
}

func fetchTo(ctx context.Context, admin, path, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := adminGet(ctx, admin, path, f); err != nil {
		f.Close()
		return fmt.Errorf("fetching %s: %w", path, err)
	}
	return f.Close()
}
