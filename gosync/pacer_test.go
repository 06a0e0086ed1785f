package gosync

import (
	"testing"
	"time"
)

// TestPacerRate: over a simulated run whose batches take time to apply, the
// measured rate (rows / (apply time + sleeps)) stays at or below the limit
// and within 1% of it (sleeping rows/rate after each batch, as gosync once
// did, measures 62% of the limit in the first case).
func TestPacerRate(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		rows  int64
		apply time.Duration // per batch
	}{
		{20000, 1000, 30 * time.Millisecond},
		{20000, 1000, 100 * time.Millisecond}, // slower than the limit: no sleep at all
		{500, 37, time.Millisecond},
		{1e6, 5000, 2 * time.Millisecond},
	} {
		now := time.Unix(0, 0)
		var p pacer
		var total int64
		for i := 0; i < 200; i++ {
			p.start(tc.rate, now)
			now = now.Add(tc.apply)
			total += tc.rows
			now = now.Add(p.wait(tc.rows, now))
		}
		measured := float64(total) / now.Sub(time.Unix(0, 0)).Seconds()
		unthrottled := float64(tc.rows) / tc.apply.Seconds()
		want := min(tc.rate, unthrottled)
		if measured > tc.rate*1.0001 || measured < want*0.99 {
			t.Errorf("rate %v, %d rows per %v batch: measured %.0f/s, want %.0f/s (±1%%, never above the limit)",
				tc.rate, tc.rows, tc.apply, measured, want)
		}
	}
	// A new limit restarts the budget: rows paced at the old rate do not
	// count against the new one.
	var p pacer
	now := time.Unix(0, 0)
	p.start(100, now)
	now = now.Add(p.wait(100, now)) // 1s
	p.start(1000, now)
	if d := p.wait(1000, now); d != time.Second {
		t.Errorf("after a new limit of 1000/s, 1000 rows wait %v, want 1s", d)
	}
	p.start(0, now)
	if d := p.wait(1e9, now); d != 0 {
		t.Errorf("no limit: wait %v", d)
	}
}
