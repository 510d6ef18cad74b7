package rowstore

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkCommitsTo100k inserts 100,000 rows 200 a commit, as a burst of
// creates does, and reports what a commit costs on average and at worst:
// the refresh walk is in every commit that owes it, so the worst commit
// is bounded by refreshChunk rows, not by the table. Run with
// -benchtime 1x; b.N fills that many tables.
func BenchmarkCommitsTo100k(b *testing.B) {
	const rows, perCommit = 100_000, 200
	var all []time.Duration
	for range b.N {
		db := newTestDB(b, 16)
		for c := 0; c < rows; c += perCommit {
			txn := db.Txn(true)
			for i := c; i < c+perCommit; i++ {
				// Spread over the key space, so nodes split everywhere.
				id := fmt.Sprintf("r%07d", i*7919%1_000_003)
				if err := txn.Insert("items", &item{ID: id, Group: "g", Code: id}); err != nil {
					b.Fatal(err)
				}
			}
			start := time.Now()
			txn.Commit()
			all = append(all, time.Since(start))
		}
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	b.ReportMetric(float64(sum.Microseconds())/float64(len(all)), "commit-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-commit-µs")
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-commit-µs")
}
