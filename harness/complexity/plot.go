package complexity

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot draws the report on log-log axes, a line per implementation with its
// slope in the legend, and saves it as SVG or PNG (by the file's extension).
// With the counter metric it plots each implementation's primary counter.
func Plot(r *Report, metric Metric, file string) error {
	ext := strings.ToLower(filepath.Ext(file))
	if ext != ".svg" && ext != ".png" {
		return fmt.Errorf("plot %s: want a .svg or .png file", file)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: cost against n (log-log)", r.Name())
	p.X.Label.Text = "n (live objects)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = sizeTicks(r.Sizes), plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	if metric == Counter {
		p.Y.Label.Text = "counted work"
	} else {
		p.Y.Label.Text = "wall time (ms)"
	}
	lines := 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range r.Impls {
		var vals []float64
		var fit *Fit
		label := s.Name
		if metric == Counter {
			if s.Shown == "" {
				continue
			}
			vals, fit = s.ShownValues, s.Fit.Counter
			label += " " + s.Shown
		} else {
			for _, ns := range s.WallNs {
				vals = append(vals, float64(ns)/1e6)
			}
			fit = s.Fit.Wall
		}
		pts := plotter.XYs{}
		for j, n := range r.Sizes {
			if vals[j] > 0 { // a log axis cannot show 0
				pts = append(pts, plotter.XY{X: float64(n), Y: vals[j]})
				lo, hi = math.Min(lo, vals[j]), math.Max(hi, vals[j])
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		if fit != nil && fit.Fitted() {
			label += fmt.Sprintf(" (slope %.2f, %s)", fit.Exponent, fit.Class)
		}
		p.Add(line, points)
		p.Legend.Add(label, line, points)
		lines++
	}
	if lines == 0 {
		return fmt.Errorf("plot %s: nothing to plot (no positive values)", file)
	}
	// A log axis needs a range of positive values: a flat series (the
	// same cost at every size) gets one around its value.
	p.Y.Min, p.Y.Max = lo/2, hi*2
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, file); err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	return nil
}

// sizeTicks labels the x axis at the measured sizes.
func sizeTicks(sizes []int) plot.ConstantTicks {
	ticks := make([]plot.Tick, len(sizes))
	for i, n := range sizes {
		label := fmt.Sprint(n)
		if n >= 1024 && n%1024 == 0 {
			label = fmt.Sprintf("%dk", n/1024)
		}
		ticks[i] = plot.Tick{Value: float64(n), Label: label}
	}
	return ticks
}
