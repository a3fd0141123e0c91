package report_test

import (
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

func TestShardedMarkdown(t *testing.T) {
	testfs.ContainsAll(t, "the section", report.ShardedMarkdown(testreport.StockSharded()),
		"| shard shard-1 | 3.0 s (concurrent map writes) | 38 | 0 | a 0/30 (`<missing>`×20, `\"apis.kcp.io/v1alpha2\"`×10); b 0/300 | clean |",
		"| shard root | not loaded, alive | 40 | 0 | - | clean |", "| c1 | shard shard-1 | 8/8 | 4/8; then `502 Bad Gateway: connection refused` |", report.ShardedChartFile)
}
