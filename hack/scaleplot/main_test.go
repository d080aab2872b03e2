package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSortsAndRejects(t *testing.T) {
	rows, err := read(strings.NewReader(`{"workloads":5000,"p50ms":20}` + "\n\n" + `{"workloads":1000,"p50ms":10}` + "\n"))
	require.NoError(t, err)
	assert.Equal(t, []int{1000, 5000}, []int{rows[0].Workloads, rows[1].Workloads})

	for in, want := range map[string]string{
		"":                     "no results",
		"{":                    "line 1",
		`{"p50ms":1}`:          "line 1: no workloads",
		"{\"workloads\":1}\nx": "line 2",
	} {
		_, err := read(strings.NewReader(in))
		require.Error(t, err, "input %q", in)
		assert.Contains(t, err.Error(), want, "input %q", in)
	}
}

func TestDrawPlacesPoints(t *testing.T) {
	rows := []row{{Workloads: 1000, P50ms: 10, P99ms: 40}, {Workloads: 2000, P50ms: 20, P99ms: 100}}
	svg := draw(rows, []panel{{"latency", "ms", []series{
		{"p50", "red", func(r row) float64 { return r.P50ms }, nil},
		{"p99", "blue", func(r row) float64 { return r.P99ms }, nil},
	}}})
	assert.True(t, strings.HasPrefix(svg, "<svg "))
	assert.Equal(t, 2, strings.Count(svg, "<polyline"))
	// The largest value (100, already a round figure) sits at the top of the plot (y = top), the
	// 2,000-workload point at the right edge.
	assert.Contains(t, svg, `<circle cx="285.0" cy="40.0" r="3" fill="blue"/>`)
}

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 7: 10, 12: 20, 150: 200, 1000: 1000} {
		assert.InDelta(t, want, niceCeil(v), 1e-9, "niceCeil(%v)", v)
	}
}

func TestOnlyFilters(t *testing.T) {
	rows := []row{{Workloads: 1000, Build: "before", Shape: "realistic"}, {Workloads: 1000, Build: "after", Shape: "realistic"},
		{Workloads: 5000, Build: "after", Shape: "minimal"}}
	got, err := only(rows, "after", "realistic")
	require.NoError(t, err)
	assert.Equal(t, []row{rows[1]}, got)
	got, err = only(rows, "", "")
	require.NoError(t, err)
	assert.Len(t, got, 3)
	_, err = only(rows, "nightly", "")
	assert.ErrorContains(t, err, `no results of build "nightly"`)
}

// TestDrawCompares: a compared build's series are dashed and drawn on the
// same axes, which stretch to its largest scale.
func TestDrawCompares(t *testing.T) {
	rows := []row{{Workloads: 1000, HeapSettledMB: 10}, {Workloads: 2000, HeapSettledMB: 20}}
	other := []row{{Workloads: 1000, HeapSettledMB: 50}, {Workloads: 4000, HeapSettledMB: 100}}
	tests := []struct {
		name                  string
		other                 []row
		dashed, polylines     int
		rightmost, rightLabel string
	}{
		{name: "alone", polylines: 6, rightmost: `<circle cx="285.0"`, rightLabel: ">2000<"},
		{name: "compared", other: other, dashed: 3, polylines: 9, rightmost: `<circle cx="585.0" cy="40.0" r="3" fill="#9467bd"/>`, rightLabel: ">4000<"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := draw(rows, panels(tt.other, "before"))
			assert.Equal(t, tt.polylines, strings.Count(svg, "<polyline"))
			assert.Equal(t, tt.dashed, strings.Count(svg, "stroke-dasharray"))
			assert.Contains(t, svg, tt.rightmost)
			assert.Contains(t, svg, tt.rightLabel)
		})
	}
}
