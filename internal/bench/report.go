package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report as a table a person reads.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "herald bench, %s, %d CPUs, %s\n", r.Started.Format("2006-01-02 15:04 UTC"), r.CPUs, r.Database)
	if r.Peer != nil {
		fmt.Fprintf(w, "peer: %s at %s, the same scenarios by the same driver\n", r.Peer.Kind, r.Peer.URL)
	}
	if len(r.Results) == 0 {
		return r.writeHistory(w)
	}
	if r.Ceiling > 0 {
		fmt.Fprintf(w, "no-store ceiling: %.0f deliveries/s (a bare loop signing and POSTing to the same receiver, 64 at once)\n", r.Ceiling)
	}
	if slices.ContainsFunc(r.Results, func(x Result) bool { return x.CeilingOf != "" }) {
		fmt.Fprintln(w, "scenario m's ceilings are its brokers' own: a bare producer loop with herald's confirm mode, concurrency and message size")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsender\twebhooks\tevents/s\tdeliveries/s\tceiling/s\tof ceiling\tp50 ms\tp95 ms\tp99 ms\tAPI p99 ms\tCPU s/1k\tpeak RSS MB\tlost\tdup\tbad sig\t")
	for _, x := range r.Results {
		cpu, rss := fmt.Sprintf("%.2f", x.CPUPer1000), fmt.Sprintf("%.0f", x.PeakRSSMB)
		if x.Sender == "peer" { // a peer's peak is of its whole life; its CPU is read only from its pids
			rss = "—"
			if !r.peerCPU() {
				cpu = "—"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.1f%%\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%d\t%d\t%d\t\n",
			x.Scenario, x.Sender, x.Webhooks, x.EventsPerSec, x.DeliveriesPerSec, x.Ceiling, 100*x.CeilingFraction,
			x.P50MS, x.P95MS, x.P99MS, x.APIP99MS, cpu, rss, x.Lost, x.Duplicated, x.BadSignatures)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, x := range r.Results {
		if x.Refused > 0 {
			fmt.Fprintf(w, "%s (%s): %d API calls refused (not counted as events): %s\n", x.Scenario, x.Sender, x.Refused, strings.Join(x.RefusedFor, "; "))
		}
	}
	if err := r.writeProcesses(w); err != nil {
		return err
	}
	if err := r.writePostgres(w); err != nil {
		return err
	}
	if err := r.writeMachine(w); err != nil {
		return err
	}
	if err := r.writeHistory(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, x := range r.Results {
		if x.Sender == "peer" { // the same scenario as the line before
			continue
		}
		fmt.Fprintf(w, "%s: %s", x.Scenario, x.Title)
		if x.Note != "" {
			fmt.Fprintf(w, " (%s)", x.Note)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// peerCPU reports whether the peer's CPU was read: its pids were given.
func (r *Report) peerCPU() bool { return r.Peer != nil && len(r.Peer.PIDs) > 0 }

// WriteJSON writes the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteSVG draws the report: each scenario's deliveries per second against
// the ceiling, and its latency percentiles on a log scale (they span from a
// millisecond to seconds). The backlog scenario's latencies count the time
// the receivers held the requests, so they are not drawn, as the table
// leaves them out.
func (r *Report) WriteSVG(w io.Writer) error {
	const (
		left, barW, rowH, top = 260, 420, 28, 60
		latLeft, latW         = left + barW + 140, 300
	)
	rows := len(r.Results)
	height := top + rows*rowH + 60
	width := latLeft + latW + 180
	decades := 1 // the scale runs from 1 ms to 10^decades ms
	for _, x := range r.Results {
		for x.Scenario != "e" && x.P99MS > math.Pow(10, float64(decades)) {
			decades++
		}
	}
	scale := func(v float64) int {
		return latLeft + int(math.Log10(max(1, v))/float64(decades)*latW)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">herald bench: %s, %d CPUs, %s</text>`+"\n",
		html.EscapeString(r.Started.Format("2006-01-02 15:04 UTC")), r.CPUs, html.EscapeString(r.Database))
	against := fmt.Sprintf("the no-store ceiling of %.0f/s", r.Ceiling)
	if slices.ContainsFunc(r.Results, func(x Result) bool { return x.CeilingOf != "" }) {
		against += "; m's, its broker's bare producer loop"
	}
	fmt.Fprintf(&b, `<text x="%d" y="45">deliveries/s (bar) against %s (full width)</text>`+"\n", left, html.EscapeString(against))
	fmt.Fprintf(&b, `<text x="%d" y="45">latency p50 · p95 · p99, API call to verified receipt (ms, log scale)</text>`+"\n", latLeft)
	for d := 0; d <= decades; d++ {
		x := latLeft + d*latW/decades
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>`+"\n", x, top, x, top+rows*rowH)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#666">%s</text>`+"\n", x, top+rows*rowH+14, strconv.FormatFloat(math.Pow(10, float64(d)), 'f', -1, 64))
	}
	for i, x := range r.Results {
		y := top + i*rowH
		label := x.Scenario + ": " + short(x.Title, 38)
		if x.Sender == "peer" {
			label = x.Scenario + ", the same on the peer"
		}
		fmt.Fprintf(&b, `<text x="10" y="%d">%s</text>`+"\n", y+17, html.EscapeString(label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="18" fill="#eee"/>`+"\n", left, y+4, barW)
		fw := int(min(1, x.CeilingFraction) * barW)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="18" fill="#2b6cb0"/>`+"\n", left, y+4, fw)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%.0f/s (%.1f%%)</text>`+"\n", left+barW+6, y+17, x.DeliveriesPerSec, 100*x.CeilingFraction)
		if x.Scenario == "e" {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666">drain rate; latencies include the hold</text>`+"\n", latLeft, y+17)
			continue
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`+"\n", latLeft, y+13, latLeft+latW, y+13)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#c05621" stroke-width="6"/>`+"\n", scale(x.P50MS), y+13, max(scale(x.P95MS), scale(x.P50MS)+1), y+13)
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="#822727"/>`+"\n", scale(x.P99MS), y+13)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%.1f · %.1f · %.1f</text>`+"\n", latLeft+latW+8, y+17, x.P50MS, x.P95MS, x.P99MS)
	}
	fmt.Fprintf(&b, `<text x="10" y="%d">lost %d, duplicated %d, bad signatures %d over every scenario</text>`+"\n",
		height-20, sum(r.Results, func(x Result) int { return x.Lost }), sum(r.Results, func(x Result) int { return x.Duplicated }),
		sum(r.Results, func(x Result) int { return x.BadSignatures }))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func short(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func sum(rs []Result, f func(Result) int) int {
	n := 0
	for _, r := range rs {
		n += f(r)
	}
	return n
}

// writeProcesses writes each fleet scenario's figures by process.
func (r *Report) writeProcesses(w io.Writer) error {
	for _, x := range r.Results {
		if len(x.Processes) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s by process (deliveries, latency and duplicates: those it sent; events and lost: those whose API call it answered):\n", x.Scenario)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "process\tevents\tdeliveries\tdeliveries/s\tp50 ms\tp99 ms\tCPU s/1k\tlost\tdup\t")
		for _, p := range x.Processes {
			name := strconv.Itoa(p.Process)
			if p.Process == 0 {
				name = "unknown"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.1f\t%.1f\t%.2f\t%d\t%d\t\n", name, p.Events, p.Deliveries, p.DeliveriesPerSec,
				p.P50MS, p.P99MS, p.CPUPer1000, p.Lost, p.Duplicated)
		}
		fmt.Fprintf(tw, "fleet\t%d\t%d\t%.0f\t%.1f\t%.1f\t%.2f\t%d\t%d\t\n", x.Events, x.Deliveries, x.DeliveriesPerSec,
			x.P50MS, x.P99MS, x.CPUPer1000, x.Lost, x.Duplicated)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// writeMachine writes where the machine's CPU went in each scenario: what
// the sender (herald, or a peer whose pids were given), PostgreSQL and the
// bench's own driver and receivers took of it, the rest of the machine (a
// peer's queues and stores included), and what no one used.
func (r *Report) writeMachine(w io.Writer) error {
	if !slices.ContainsFunc(r.Results, func(x Result) bool { return x.Machine != nil }) {
		return nil
	}
	fmt.Fprintf(w, "\nthe machine's CPU, s/1k deliveries (its %d cores from the first call to the last receipt; sender: herald's processes, or the peer's given by --peer-pids; bench: its API clients and receivers):\n", r.CPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsender\tits own\tPostgreSQL\tbench\tthe rest\tidle\tof it I/O wait\tstolen\tbusy\t")
	for _, x := range r.Results {
		m := x.Machine
		if m == nil {
			continue
		}
		rest := m.Busy - m.Bench
		herald, pg := "—", "—"
		if x.Sender != "peer" || r.peerCPU() {
			herald, rest = fmt.Sprintf("%.2f", x.CPUPer1000), rest-x.CPUPer1000
		}
		if c := x.Postgres; c != nil && c.CPUPer1000 >= 0 {
			pg, rest = fmt.Sprintf("%.2f", c.CPUPer1000), rest-c.CPUPer1000
		}
		busy := 0.0
		if all := m.Busy + m.Idle + m.Stolen; all > 0 {
			busy = m.Busy / all
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f%%\t\n", x.Scenario, x.Sender, herald, pg, m.Bench, rest, m.Idle, m.IOWait, m.Stolen, 100*busy)
	}
	return tw.Flush()
}

// writePostgres writes what PostgreSQL spent per delivery in each scenario.
func (r *Report) writePostgres(w io.Writer) error {
	if !slices.ContainsFunc(r.Results, func(x Result) bool { return x.Postgres != nil }) {
		return nil
	}
	fmt.Fprintf(w, "\nPostgreSQL per delivery (WAL, commits and writes are the whole server's and database's: run on a quiet one;\n"+
		"commits count read-only transactions, writes only those that wrote):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tWAL bytes\tcommits\twrites\trows written\tindex entries\tlog updates HOT\tPostgreSQL CPU s/1k\t")
	for _, x := range r.Results {
		c := x.Postgres
		if c == nil {
			continue
		}
		cpu := "—"
		if c.CPUPer1000 >= 0 {
			cpu = fmt.Sprintf("%.2f", c.CPUPer1000)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t%.0f%%\t%s\t\n", x.Scenario, c.WALBytesPerDelivery, c.CommitsPerDelivery,
			c.WritesPerDelivery, c.RowsPerDelivery, c.IndexEntriesPerDelivery, 100*c.LogHOTRatio, cpu)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "rows written by table (inserts/updates/of them HOT/deletes × indexes):")
	for _, x := range r.Results {
		if x.Postgres == nil {
			continue
		}
		var tables []string
		for _, t := range x.Postgres.Tables {
			tables = append(tables, fmt.Sprintf("%s %d/%d/%d/%d×%d", t.Table, t.Inserts, t.Updates, t.HOTUpdates, t.Deletes, t.Indexes))
		}
		fmt.Fprintf(w, "  %s: %s\n", x.Scenario, strings.Join(tables, ", "))
	}
	return nil
}

// writeHistory writes scenario h's reads.
func (r *Report) writeHistory(w io.Writer) error {
	h := r.History
	if h == nil {
		return nil
	}
	stats := "no statistics made after seeding"
	if h.Analyzed {
		stats = "ANALYZE after seeding"
	}
	fmt.Fprintf(w, "\nh: reads of %d completed logs over %d days (%d stored, seeded in %.0f s, %s), each timed %s:\n",
		h.Logs, h.Days, h.Stored, h.SeedSeconds, stats, "after one untimed try")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "surface\tread\tstatus\ttries\tp50 ms\tp99 ms\tmax ms\t")
	for _, x := range h.Reads {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%s\n", x.Surface, x.Name, x.Status, x.Tries, x.P50MS, x.P99MS, x.MaxMS, x.Error)
	}
	return tw.Flush()
}
