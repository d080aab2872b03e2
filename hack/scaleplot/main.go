// Command scaleplot draws the controller's scale benchmark as an SVG: roll
// latency, memory and start-up time against the number of workloads. It
// reads the JSON lines BenchmarkScale appends to CONFIGHASH_SCALE_OUT.
// With -build, only the rows of that build (CONFIGHASH_SCALE_LABEL) and, with
// -shape, of that shape are drawn, so one file can hold a before and an
// after; -compare draws another build's settled heap, start-up and p99 beside
// them, dashed.
//
//	go run ./hack/scaleplot -build after -compare packed -shape realistic < docs/scale.jsonl > docs/scale.svg
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// row holds the fields of controller.ScaleResult that are drawn.
type row struct {
	Workloads      int     `json:"workloads"`
	Build          string  `json:"build"`
	Shape          string  `json:"shape"`
	StartupSeconds float64 `json:"startupSeconds"`
	HeapMB         float64 `json:"heapMB"`
	HeapSettledMB  float64 `json:"heapSettledMB"`
	RSSMB          float64 `json:"rssMB"`
	P50ms          float64 `json:"p50ms"`
	P99ms          float64 `json:"p99ms"`
}

type series struct {
	name  string
	color string
	value func(row) float64
	// rows are the series' own rows (nil: the rows drawn), drawn dashed.
	rows []row
}

type panel struct {
	title  string
	unit   string
	series []series
}

func main() {
	build := flag.String("build", "", "draw only the rows of this build (empty: every row)")
	shape := flag.String("shape", "", "draw only the rows of this shape (empty: every row)")
	compare := flag.String("compare", "", "also draw this build's settled heap, start-up and p99, dashed")
	flag.Parse()
	all, err := read(os.Stdin)
	var rows, other []row
	if err == nil {
		rows, err = only(all, *build, *shape)
	}
	if err == nil && *compare != "" {
		other, err = only(all, *compare, *shape)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaleplot:", err)
		os.Exit(1)
	}
	fmt.Print(draw(rows, panels(other, *compare)))
}

// panels are the three plots; other (a build named compare) adds dashed
// series.
func panels(other []row, compare string) []panel {
	p99 := func(r row) float64 { return r.P99ms }
	settled := func(r row) float64 { return r.HeapSettledMB }
	startup := func(r row) float64 { return r.StartupSeconds }
	out := []panel{
		{"Roll latency beyond the window", "ms", []series{
			{"p50", "#1f77b4", func(r row) float64 { return r.P50ms }, nil},
			{"p99", "#d62728", p99, nil},
		}},
		{"Controller memory", "MB", []series{
			{"heap in use", "#1f77b4", func(r row) float64 { return r.HeapMB }, nil},
			{"heap settled", "#9467bd", settled, nil},
			{"RSS", "#ff7f0e", func(r row) float64 { return r.RSSMB }, nil},
		}},
		{"Start-up to all in sync", "s", []series{
			{"start-up", "#2ca02c", startup, nil},
		}},
	}
	if len(other) > 0 {
		out[0].series = append(out[0].series, series{"p99, " + compare, "#d62728", p99, other})
		out[1].series = append(out[1].series, series{"heap settled, " + compare, "#9467bd", settled, other})
		out[2].series = append(out[2].series, series{"start-up, " + compare, "#2ca02c", startup, other})
	}
	return out
}

func read(r io.Reader) ([]row, error) {
	var rows []row
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var x row
		if err := json.Unmarshal([]byte(line), &x); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if x.Workloads <= 0 {
			return nil, fmt.Errorf("line %d: no workloads", n)
		}
		rows = append(rows, x)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no results on standard input")
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Workloads < rows[j].Workloads })
	return rows, nil
}

// only keeps the rows of build and shape (each, when not empty).
func only(rows []row, build, shape string) ([]row, error) {
	var out []row
	for _, r := range rows {
		if (build == "" || r.Build == build) && (shape == "" || r.Shape == shape) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no results of build %q and shape %q", build, shape)
	}
	return out, nil
}

const (
	panelW, panelH = 300, 220
	left, right    = 50, 15
	top, bottom    = 40, 45
)

func draw(rows []row, panels []panel) string {
	var b strings.Builder
	width := panelW * len(panels)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, panelH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, panelH)
	maxW := float64(rows[len(rows)-1].Workloads)
	for _, p := range panels {
		for _, s := range p.series {
			for _, r := range s.rows {
				maxW = math.Max(maxW, float64(r.Workloads))
			}
		}
	}
	for i, p := range panels {
		x0 := float64(i*panelW + left)
		plotW, plotH := float64(panelW-left-right), float64(panelH-top-bottom)
		maxY := 0.0
		for _, s := range p.series {
			for _, r := range s.of(rows) {
				maxY = math.Max(maxY, s.value(r))
			}
		}
		maxY = niceCeil(maxY)
		px := func(w int) float64 { return x0 + plotW*float64(w)/maxW }
		py := func(v float64) float64 { return float64(top) + plotH*(1-v/maxY) }
		fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", x0, p.title)
		// Axes, ticks and grid.
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, top, x0, py(0))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, py(0), x0+plotW, py(0))
		for t := 0; t <= 4; t++ {
			v := maxY * float64(t) / 4
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, py(v), x0+plotW, py(v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-4, py(v)+4, label(v))
		}
		for _, w := range scales(rows, p.series) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", px(w), py(0)+14, w)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">workloads (%s on the left axis)</text>`+"\n", x0+plotW/2, panelH-8, p.unit)
		// Lines, points and legend.
		for k, s := range p.series {
			var pts []string
			for _, r := range s.of(rows) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(r.Workloads), py(s.value(r))))
			}
			dash := ""
			if s.rows != nil {
				dash = ` stroke-dasharray="5,3"`
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.color, dash, strings.Join(pts, " "))
			for _, r := range s.of(rows) {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(r.Workloads), py(s.value(r)), s.color)
			}
			ly := float64(top + 4 + 14*k)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="3" fill="%s"/>`+"\n", x0+8, ly, s.color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x0+22, ly+5, s.name)
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// scales are the workload counts drawn in a panel, each once, in order.
func scales(drawn []row, ss []series) []int {
	seen := map[int]bool{}
	var out []int
	add := func(rs []row) {
		for _, r := range rs {
			if !seen[r.Workloads] {
				seen[r.Workloads] = true
				out = append(out, r.Workloads)
			}
		}
	}
	add(drawn)
	for _, s := range ss {
		add(s.rows)
	}
	sort.Ints(out)
	return out
}

// of is the rows a series draws: its own, or drawn.
func (s series) of(drawn []row) []row {
	if s.rows != nil {
		return s.rows
	}
	return drawn
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// label writes a tick value with as many digits as it needs (1.25, not 1.2).
func label(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
