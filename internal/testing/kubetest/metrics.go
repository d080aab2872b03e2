package kubetest

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// sampleLine matches one sample of the Prometheus text format: name,
// optional {labels}, value.
var sampleLine = regexp.MustCompile(`^(\w+)(\{[^}]*\})? (\S+)$`)

// Metric scrapes http://addr/metrics and sums the samples of name whose
// labels contain every string in labels (like `result="in_sync"`); -1 when
// the endpoint does not answer.
func Metric(addr, name string, labels ...string) float64 {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(m[2], l)
		}
		if v, err := strconv.ParseFloat(m[3], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}
