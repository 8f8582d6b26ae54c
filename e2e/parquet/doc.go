// Package parquet holds the end-to-end test of llmtap's Parquet request files against DuckDB
// (github.com/duckdb/duckdb-go, which needs cgo): a three-instance run recorded as Parquet,
// queried with SQL, equals what `llmtap report` computes from the same files and from the
// same records as JSONL. It is a separate module so that DuckDB stays out of llmtap's go.mod.
package parquet
