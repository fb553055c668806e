package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Row states.
const (
	StateOK          = "ok"            // measured: Min, Median, Max are set
	StateNA          = "n/a"           // cannot be measured here (Reason says why)
	StateSkipped     = "skipped"       // an input is missing, e.g. python3 in the rootfs
	StateFailed      = "failed"        // the run failed (Reason has the error)
	StateNotBuiltYet = "not built yet" // a mechanism droidroot does not have yet
)

// Report is the result of one bench run.
type Report struct {
	Header   Header    `json:"header"`
	Sections []Section `json:"sections"`
}

// Header says what matters for reading the numbers.
type Header struct {
	// Droidroot is the version of the droidroot that ran the bench.
	Droidroot     string   `json:"droidroot"`
	Kernel        string   `json:"kernel"`
	Arch          string   `json:"arch"`
	CPUModel      string   `json:"cpu_model"`
	CPUs          int      `json:"cpus"`
	SeccompCache  bool     `json:"seccomp_cache"`
	SyncWakeUp    bool     `json:"sync_wake_up"`
	AndroidPolicy string   `json:"android_policy"`
	Rootfs        string   `json:"rootfs"`
	Rounds        int      `json:"rounds"`
	Quick         bool     `json:"quick"`
	Modes         []string `json:"modes"`
	Notes         []string `json:"notes,omitempty"`
}

// Section is a group of rows measured in one unit.
type Section struct {
	Name string `json:"name"`
	// Unit is "us" (microseconds per call: lower is better), "ops/s" (higher is
	// better), "ms" (per program run) or "calls" (counted in one run:
	// HitRateSection).
	Unit string `json:"unit"`
	Rows []Row  `json:"rows"`
}

// Row is one measured thing, with a result per mode (native, droidroot, a
// --compare name; the mechanism section has the single mode "this machine").
type Row struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Results []Result `json:"results"`
}

// Result is one row in one mode over all rounds.
type Result struct {
	Mode    string    `json:"mode"`
	State   string    `json:"state"`
	Reason  string    `json:"reason,omitempty"`
	Samples []float64 `json:"samples,omitempty"`
	Min     float64   `json:"min,omitempty"`
	Median  float64   `json:"median,omitempty"`
	Max     float64   `json:"max,omitempty"`
	// Ratio is Median over the reference's Median: the same row's native result, or
	// for mechanisms the native syscall row. 0 when there is none.
	Ratio float64 `json:"ratio,omitempty"`
	// Spread is set when Max is more than 1.5 times Min: the machine was noisy.
	Spread bool `json:"spread,omitempty"`
}

// finish computes Min/Median/Max from the samples.
func (r *Result) finish() {
	if r.State != StateOK {
		return
	}
	if len(r.Samples) == 0 {
		r.State, r.Reason = StateFailed, "no sample"
		return
	}
	s := append([]float64(nil), r.Samples...)
	sort.Float64s(s)
	r.Min, r.Max = s[0], s[len(s)-1]
	if n := len(s); n%2 == 1 {
		r.Median = s[n/2]
	} else {
		r.Median = (s[n/2-1] + s[n/2]) / 2
	}
	r.Spread = r.Max > 1.5*r.Min
}

// JSON writes the report as indented JSON.
func (rep *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func formatNum(v float64, unit string) string {
	switch {
	case unit == "ops/s" && v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case unit == "ops/s" && v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func (r Result) cell(unit string) string {
	if r.State != StateOK {
		if r.Reason != "" && r.State != StateFailed {
			return r.State + " (" + r.Reason + ")"
		}
		return r.State
	}
	if unit == "calls" { // counted once (HitRateSection): the number alone
		if r.Median == math.Trunc(r.Median) {
			return fmt.Sprintf("%.0f", r.Median)
		}
		return fmt.Sprintf("%.1f", r.Median)
	}
	s := fmt.Sprintf("%s [%s-%s]", formatNum(r.Median, unit), formatNum(r.Min, unit), formatNum(r.Max, unit))
	if r.Ratio > 0 && r.Mode != "native" {
		if r.Ratio >= 10 {
			s += fmt.Sprintf(" %.0fx", r.Ratio)
		} else {
			s += fmt.Sprintf(" %.2fx", r.Ratio)
		}
	}
	if r.Spread {
		s += " ~"
	}
	return s
}

func (rep *Report) headerLines() []string {
	h := rep.Header
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	lines := []string{
		fmt.Sprintf("droidroot %s; kernel %s (%s), %d CPU(s): %s", h.Droidroot, h.Kernel, h.Arch, h.CPUs, h.CPUModel),
		fmt.Sprintf("seccomp cache (>= 5.11): %s; SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (>= 6.6): %s", yes(h.SeccompCache), yes(h.SyncWakeUp)),
		fmt.Sprintf("android policy: %s", h.AndroidPolicy),
		fmt.Sprintf("rootfs %s; %d interleaved rounds%s; modes: %s", h.Rootfs, h.Rounds, map[bool]string{true: " (--quick)", false: ""}[h.Quick], strings.Join(h.Modes, ", ")),
	}
	return append(lines, h.Notes...)
}

const legend = "cells: median [min-max] over the rounds, then the ratio to native; ~ marks max > 1.5 x min (a noisy machine)"

// Text writes the report as aligned plain-text tables.
func (rep *Report) Text(w io.Writer) {
	for _, l := range rep.headerLines() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, legend)
	for _, s := range rep.Sections {
		fmt.Fprintln(w)
		head, rows := s.table()
		widths := make([]int, len(head))
		for _, r := range append([][]string{head}, rows...) {
			for i, c := range r {
				widths[i] = max(widths[i], len(c))
			}
		}
		for _, r := range append([][]string{head}, rows...) {
			var b strings.Builder
			for i, c := range r {
				if i > 0 {
					b.WriteString("  ")
				}
				if i == len(r)-1 {
					b.WriteString(c)
				} else {
					fmt.Fprintf(&b, "%-*s", widths[i], c)
				}
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
	}
}

// Markdown writes the report as Markdown tables (for bug reports).
func (rep *Report) Markdown(w io.Writer) {
	for _, l := range rep.headerLines() {
		fmt.Fprintf(w, "- %s\n", l)
	}
	fmt.Fprintf(w, "- %s\n", legend)
	for _, s := range rep.Sections {
		head, rows := s.table()
		fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
	}
}

func (s Section) table() (head []string, rows [][]string) {
	var modes []string
	seen := map[string]bool{}
	for _, r := range s.Rows {
		for _, res := range r.Results {
			if !seen[res.Mode] {
				seen[res.Mode] = true
				modes = append(modes, res.Mode)
			}
		}
	}
	head = append([]string{fmt.Sprintf("%s (%s)", s.Name, s.Unit)}, modes...)
	for _, r := range s.Rows {
		row := []string{r.Title}
		for _, m := range modes {
			c := ""
			for _, res := range r.Results {
				if res.Mode == m {
					c = res.cell(s.Unit)
				}
			}
			row = append(row, c)
		}
		rows = append(rows, row)
	}
	return head, rows
}

// ratio returns a / b, or 0 when either is not a usable number.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 || math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return a / b
}
