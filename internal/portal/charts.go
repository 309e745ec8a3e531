package portal

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// The charts of a webhook's page are SVG drawn by the templates from the
// coordinates computed here; each carries its numbers as text too (a title
// and description, a caption and a data table), for screen readers and for
// anyone who wants the figures.
const (
	successHours  = 24                 // hourly bars of the success-rate chart
	latencyPoints = 50                 // attempts in the latency chart, at most
	latencyWindow = 7 * 24 * time.Hour // how far back the latency chart looks

	chartW, chartH          = 480, 200
	plotLeft, plotTop       = 48, 10
	plotRight, plotBottom   = 6, 26
	plotWidth, plotHeight   = chartW - plotLeft - plotRight, chartH - plotTop - plotBottom
	plotBase                = plotTop + plotHeight
	minLatencySlots         = 12
	barFill                 = 0.7 // share of a slot a bar covers
	successLabelEveryNHours = 6
)

// bar is one bar of a chart, in SVG user units.
type bar struct {
	X, Y, Width, Height float64
	Class               string // ok, warn, bad or none
	Label               string // the bar's numbers, as its tooltip
}

// tick is an axis label.
type tick struct {
	X, Y float64
	Text string
}

type successHour struct {
	Start     time.Time
	Attempts  int
	Succeeded int
	Rate      int // percent
}

// successChart is the share of attempts that succeeded, per hour.
type successChart struct {
	W, H, Left, Right, Base float64
	Bars                    []bar
	XTicks, YTicks          []tick
	Hours                   []successHour // hours with attempts, for the data table
	Attempts, Succeeded     int
	Rate                    int
	Summary                 string
}

func newSuccessChart(since time.Time, hours []store.HourOfAttempts) successChart {
	c := successChart{W: chartW, H: chartH, Left: plotLeft, Right: chartW - plotRight, Base: plotBase}
	slot := float64(plotWidth) / successHours
	byStart := map[int64]store.HourOfAttempts{}
	for _, h := range hours {
		byStart[h.Start.Unix()] = h
	}
	for i := range successHours {
		start := since.Add(time.Duration(i) * time.Hour)
		x := plotLeft + float64(i)*slot + slot*(1-barFill)/2
		span := start.UTC().Format("Jan 2 15:04") + "–" + start.Add(time.Hour).UTC().Format("15:04") + " UTC"
		h, ok := byStart[start.Unix()]
		if !ok || h.Attempts == 0 {
			c.Bars = append(c.Bars, bar{X: x, Y: plotBase - 3, Width: slot * barFill, Height: 3, Class: "none", Label: span + ": no attempts"})
		} else {
			rate := percent(h.Succeeded, h.Attempts)
			height := math.Max(3, float64(plotHeight)*float64(h.Succeeded)/float64(h.Attempts))
			c.Bars = append(c.Bars, bar{X: x, Y: plotBase - height, Width: slot * barFill, Height: height, Class: rateClass(rate),
				Label: fmt.Sprintf("%s: %d of %d attempts succeeded (%d%%)", span, h.Succeeded, h.Attempts, rate)})
			c.Hours = append(c.Hours, successHour{Start: start, Attempts: h.Attempts, Succeeded: h.Succeeded, Rate: rate})
			c.Attempts += h.Attempts
			c.Succeeded += h.Succeeded
		}
		if i%successLabelEveryNHours == 0 {
			// The first label and the first of each new day carry the date:
			// the 24 hours span two days.
			label := start.UTC().Format("15:04")
			if len(c.XTicks) == 0 || start.UTC().Day() != since.Add(time.Duration(i-successLabelEveryNHours)*time.Hour).UTC().Day() {
				label = start.UTC().Format("Jan 2 15:04")
			}
			c.XTicks = append(c.XTicks, tick{X: plotLeft + float64(i)*slot, Y: plotBase + 18, Text: label})
		}
	}
	for _, p := range []int{0, 50, 100} {
		c.YTicks = append(c.YTicks, tick{X: plotLeft - 8, Y: plotBase - float64(plotHeight*p)/100, Text: fmt.Sprintf("%d%%", p)})
	}
	if c.Attempts == 0 {
		c.Summary = "No attempts in the last 24 hours."
		return c
	}
	c.Rate = percent(c.Succeeded, c.Attempts)
	c.Summary = fmt.Sprintf("Last 24 hours: %d %s, %d succeeded (%d%%).", c.Attempts, plural(c.Attempts, "attempt", "attempts"), c.Succeeded, c.Rate)
	return c
}

// latencyChart is how long each recent attempt took.
type latencyChart struct {
	W, H, Left, Right, Base float64
	Bars                    []bar
	YTicks                  []tick
	Points                  []store.AttemptPoint
	MedianY                 float64
	Median, P95, Slowest    int64
	Summary                 string
}

func newLatencyChart(points []store.AttemptPoint) latencyChart {
	c := latencyChart{W: chartW, H: chartH, Left: plotLeft, Right: chartW - plotRight, Base: plotBase, Points: points}
	if len(points) == 0 {
		c.Summary = "No attempts in the last 7 days."
		return c
	}
	durations := make([]int64, len(points))
	for i, p := range points {
		durations[i] = p.DurationMS
	}
	slices.Sort(durations)
	c.Median, c.P95, c.Slowest = rank(durations, 50), rank(durations, 95), durations[len(durations)-1]
	top := niceCeil(c.Slowest)
	slot := float64(plotWidth) / float64(max(len(points), minLatencySlots))
	for i, p := range points {
		// At least 3 units, so an attempt of 0 ms still shows its colour.
		height := math.Max(3, float64(plotHeight)*float64(p.DurationMS)/float64(top))
		class, outcome := "ok", "succeeded"
		if !p.Succeeded {
			class, outcome = "bad", "failed"
		}
		if p.StatusCode != nil {
			outcome += fmt.Sprintf(" with %d", *p.StatusCode)
		} else {
			outcome += " with no response"
		}
		c.Bars = append(c.Bars, bar{X: plotLeft + float64(i)*slot + slot*(1-barFill)/2, Y: plotBase - height, Width: slot * barFill,
			Height: height, Class: class, Label: fmt.Sprintf("%s UTC: %s in %s", p.SentAt.UTC().Format("Jan 2 15:04:05"), outcome, duration(p.DurationMS))})
	}
	for _, v := range []int64{0, top / 2, top} {
		c.YTicks = append(c.YTicks, tick{X: plotLeft - 8, Y: plotBase - float64(plotHeight)*float64(v)/float64(top), Text: axisDuration(v, top)})
	}
	c.MedianY = plotBase - float64(plotHeight)*float64(c.Median)/float64(top)
	c.Summary = fmt.Sprintf("Last %d %s: median %s, 95th percentile %s, slowest %s.", len(points),
		plural(len(points), "attempt", "attempts"), duration(c.Median), duration(c.P95), duration(c.Slowest))
	return c
}

// rank is the nearest-rank percentile p of sorted values.
func rank(sorted []int64, p int) int64 {
	i := int(math.Ceil(float64(p)/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, at least 10.
func niceCeil(v int64) int64 {
	for pow := int64(10); ; pow *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if n := m * pow; n >= v {
				return n
			}
		}
	}
}

func percent(part, whole int) int {
	if whole == 0 {
		return 0
	}
	return int(math.Floor(100 * float64(part) / float64(whole)))
}

func rateClass(rate int) string {
	switch {
	case rate == 100:
		return "ok"
	case rate >= 50:
		return "warn"
	}
	return "bad"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// axisDuration labels an axis up to top in one unit: seconds when the top
// is a second or more (0 s, 5 s, 10 s), else milliseconds; mixed, "0 ms"
// beside "10 s" read as different scales.
func axisDuration(ms, top int64) string {
	if top < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + " s"
}

// duration shows milliseconds as a person reads them: 12 ms, 1.25 s.
func duration(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.3g s", float64(ms)/1000)
}
