package parquet

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkP99TTFTPerTenantHour times DuckDB's p99 TTFT per tenant and hour over the Parquet
// records under $LLMTAP_PARQUET_DAY (bench/parquetgen's parquet/ folder; docs/fleet.md gives
// the commands). Each iteration opens a new in-memory database, so no cache carries over.
func BenchmarkP99TTFTPerTenantHour(b *testing.B) {
	dir := os.Getenv("LLMTAP_PARQUET_DAY")
	if dir == "" {
		b.Skip("set LLMTAP_PARQUET_DAY to a folder of Parquet records (bench/parquetgen)")
	}
	q := fmt.Sprintf(`SELECT tenant, hour, quantile_cont(ttft_ms, 0.99), count(*)
		FROM read_parquet('%s', hive_partitioning = true) WHERE class = 'live'
		GROUP BY tenant, hour`, filepath.Join(dir, "dt=*", "hour=*", "records-*.parquet"))
	var groups, rows int64
	for b.Loop() {
		db, err := sql.Open("duckdb", "")
		if err != nil {
			b.Fatal(err)
		}
		r, err := db.Query(q)
		if err != nil {
			b.Fatal(err)
		}
		groups, rows = 0, 0
		for r.Next() {
			var tenant string
			var hour, n int64
			var p99 float64
			if err := r.Scan(&tenant, &hour, &p99, &n); err != nil {
				b.Fatal(err)
			}
			groups++
			rows += n
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
	b.ReportMetric(float64(groups), "groups")
	b.ReportMetric(float64(rows), "rows")
}
