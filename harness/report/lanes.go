package report

import (
	"fmt"
	"html"
	"html/template"
	"strings"
)

// Geometry of a task-lane picture, in pixels.
const (
	laneLabel  = 44  // the task names' column
	laneHeight = 30  // one task: side A's bar above side B's
	laneWidth  = 860 // the steps' part at most
	laneAxis   = 18  // the step numbers under the lanes
)

// laneSVG draws f's task lanes: one row per task, a bar per stretch of
// steps it slept through (side A above, side B below), a dot at the step
// that woke it, and a line at the first diverging step.
func laneSVG(f Finding) template.HTML {
	n := max(len(f.Steps), 1)
	cw := min(max(float64(laneWidth)/float64(n), 3), 64)
	w := laneLabel + cw*float64(n) + 8
	h := laneHeight*len(f.Lanes) + laneAxis
	x := func(step int) float64 { return laneLabel + (float64(step)-0.5)*cw } // the middle of a step
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="lanes" role="img" width="%.0f" height="%d" viewBox="0 0 %.0f %d">`, w, h, w, h)
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString("task lanes of "+f.Title))
	for i, l := range f.Lanes {
		y := laneHeight * i
		fmt.Fprintf(&b, `<g class="lane" data-task="%s">`, l.Task)
		fmt.Fprintf(&b, `<rect class="lane-bg" x="%d" y="%d" width="%.1f" height="%d"/>`, laneLabel, y+2, cw*float64(n), laneHeight-4)
		fmt.Fprintf(&b, `<text class="lane-name" x="4" y="%d">%s</text>`, y+laneHeight/2+4, l.Task)
		for _, s := range l.Sleeps {
			top := y + 5
			if s.Side == "B" {
				top = y + laneHeight/2
			}
			x0, x1 := x(s.From), x(s.To)
			what := fmt.Sprintf("%s on %s: asleep from step %d", l.Task, sideName(f, s.Side), s.From)
			if s.Woken {
				what += fmt.Sprintf(", woken by step %d", s.To)
			} else {
				what += ", still asleep at the end"
				x1 = laneLabel + cw*float64(n)
			}
			fmt.Fprintf(&b, `<rect class="sleep sleep-%s" data-side="%s" data-from="%d" data-to="%d" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s</title></rect>`,
				strings.ToLower(s.Side), s.Side, s.From, s.To, x0, top, max(x1-x0, 2), laneHeight/2-6, html.EscapeString(what))
			if s.Woken {
				fmt.Fprintf(&b, `<circle class="wake wake-%s" cx="%.1f" cy="%d" r="3.5"><title>%s</title></circle>`, strings.ToLower(s.Side), x1, top+(laneHeight/2-6)/2, html.EscapeString(what))
			}
		}
		b.WriteString(`</g>`)
	}
	axisY := laneHeight*len(f.Lanes) + 13
	every := max(1, (n+19)/20)
	for s := 1; s <= n; s++ {
		if s == 1 || s%every == 0 || s == f.First {
			fmt.Fprintf(&b, `<text class="step-no" x="%.1f" y="%d" text-anchor="middle">%d</text>`, x(s), axisY, s)
		}
	}
	if f.First > 0 {
		fmt.Fprintf(&b, `<line class="first-line" x1="%.1f" y1="0" x2="%.1f" y2="%d"><title>first divergence: step %d</title></line>`, x(f.First), x(f.First), laneHeight*len(f.Lanes), f.First)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func sideName(f Finding, side string) string {
	if side == "A" {
		return "A (" + f.A + ")"
	}
	return "B (" + f.B + ")"
}
